/**
 * Talking to the console the way fetch will not: requests with any Host header and an
 * unnormalised path (node:http sends both as given), and a server-sent event stream read
 * event by event.
 */
import { request } from "node:http";

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request to 127.0.0.1:port with exactly this path and these headers (Host included). */
export function rawRequest(
  port: number,
  o: { method?: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: o.method ?? "GET",
        path: o.path,
        headers: { host: `127.0.0.1:${port}`, ...o.headers },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(o.body);
  });
}

export interface SseEvent {
  event: string;
  data: any;
}

export interface SseStream {
  status: number;
  contentType: string;
  /** Every event received so far, in order (comments apart). */
  events: SseEvent[];
  /** Waits until an event matching `pred` has arrived (or was already there), bounded. */
  next(pred: (e: SseEvent) => boolean, timeoutMs: number): Promise<SseEvent>;
  close(): void;
}

/** Opens /api/events with a session cookie. */
export function openEvents(port: number, cookie: string): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const events: SseEvent[] = [];
    const waiters = new Set<() => void>();
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: "/api/events",
        headers: { host: `127.0.0.1:${port}`, cookie, accept: "text/event-stream" },
      },
      (res) => {
        let buffer = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          buffer += chunk;
          for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            const lines = block.split("\n");
            const event = lines.find((l) => l.startsWith("event: "))?.slice(7);
            const data = lines.find((l) => l.startsWith("data: "))?.slice(6);
            if (event && data !== undefined) events.push({ event, data: JSON.parse(data) });
          }
          for (const w of [...waiters]) w();
        });
        res.on("error", () => undefined);
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers["content-type"]),
          events,
          next(pred, timeoutMs) {
            return new Promise((ok, fail) => {
              const check = () => {
                const found = events.find(pred);
                if (!found) return;
                waiters.delete(check);
                clearTimeout(timer);
                ok(found);
              };
              const timer = setTimeout(() => {
                waiters.delete(check);
                fail(
                  new Error(`no matching event within ${timeoutMs} ms; got ${JSON.stringify(events).slice(0, 500)}`),
                );
              }, timeoutMs);
              waiters.add(check);
              check();
            });
          },
          close: () => req.destroy(),
        });
      },
    );
    req.on("error", (e) => reject(e));
    req.end();
  });
}
