/**
 * A programmable HTTP proxy on 127.0.0.1 in front of a real service: it forwards every
 * request, and rules can make it lie or fail — rewrite a JSON response, answer with a
 * status of its own, reset the connection before or after forwarding, delay past the
 * client's timeout, truncate or garble a body, deliver a request twice, hold a request while
 * the test changes the world. Each rule fires
 * `times` times (default: always). Every request seen is recorded, and again once the proxy
 * is done with it (answered, reset, or its delayed answer given to whoever still listens).
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface SeenRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export type ProxyAction =
  | { kind: "reset-before" }
  | { kind: "reset-after" }
  | { kind: "delay"; ms: number }
  | { kind: "status"; status: number; body?: unknown; headers?: Record<string, string> }
  | {
      kind: "rewrite";
      transform: (body: any, res: { status: number; headers: Record<string, string> }) => any;
      status?: number;
    }
  | { kind: "truncate" }
  | { kind: "garbage" }
  | { kind: "duplicate" }
  | { kind: "raw"; handler: (req: IncomingMessage, res: ServerResponse, body: string) => void }
  /** Holds the request until `until` resolves (the world may change meanwhile), then forwards it. */
  | { kind: "hold"; until: (req: SeenRequest) => Promise<void> }
  /** Decides per request; undefined forwards untouched. */
  | { kind: "dynamic"; choose: (req: SeenRequest) => ProxyAction | undefined };

export interface ProxyRule {
  match: (req: SeenRequest) => boolean;
  action: ProxyAction;
  /** How many more times it fires; undefined = always. */
  times?: number;
}

export interface Proxy {
  /** Origin, e.g. http://127.0.0.1:1234 (append /v1 for a base URL). */
  url: string;
  rules: ProxyRule[];
  seen: SeenRequest[];
  /** The requests the proxy is done with, in the order it finished them. */
  handled: SeenRequest[];
  close(): Promise<void>;
}

interface Upstream {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function forward(target: URL, req: SeenRequest): Promise<Upstream> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | string[] | undefined> = { ...req.headers, host: target.host };
    delete headers["content-length"];
    const up = httpRequest(
      {
        hostname: target.hostname,
        port: target.port,
        method: req.method,
        path: req.path,
        headers: { ...headers, "content-length": Buffer.byteLength(req.body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on("error", reject);
      },
    );
    up.on("error", reject);
    up.end(req.body);
  });
}

function reply(res: ServerResponse, up: Upstream, body: Buffer | string = up.body): void {
  const headers = { ...up.headers };
  delete headers["content-length"];
  delete headers["transfer-encoding"];
  delete headers.connection;
  delete headers["keep-alive"];
  res.writeHead(up.status, { ...headers, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

export async function startProxy(targetOrigin: string, rules: ProxyRule[] = []): Promise<Proxy> {
  const target = new URL(targetOrigin);
  const seen: SeenRequest[] = [];
  const handled: SeenRequest[] = [];
  const sockets = new Set<Socket>();
  const proxy: Proxy = { url: "", rules, seen, handled, close: async () => undefined };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const r: SeenRequest = {
        method: req.method ?? "GET",
        path: req.url ?? "/",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      seen.push(r);
      const rule = proxy.rules.find((x) => (x.times === undefined || x.times > 0) && x.match(r));
      if (rule && rule.times !== undefined) rule.times--;
      void handle(rule?.action, r, req, res)
        .catch(() => res.destroy())
        .finally(() => handled.push(r));
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });

  async function handle(
    action: ProxyAction | undefined,
    r: SeenRequest,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    if (action?.kind === "dynamic") return handle(action.choose(r), r, req, res);
    if (!action) return reply(res, await forward(target, r));
    switch (action.kind) {
      case "reset-before":
        req.socket.destroy();
        return;
      case "reset-after":
        await forward(target, r);
        req.socket.destroy();
        return;
      case "delay": {
        const up = await forward(target, r);
        await new Promise((ok) => setTimeout(ok, action.ms));
        if (!res.destroyed) reply(res, up);
        return;
      }
      case "status": {
        const body = action.body === undefined ? "" : JSON.stringify(action.body);
        res.writeHead(action.status, {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          ...(action.headers ?? {}),
        });
        res.end(body);
        return;
      }
      case "rewrite": {
        const up = await forward(target, r);
        const flat: Record<string, string> = {};
        for (const [k, v] of Object.entries(up.headers)) if (typeof v === "string") flat[k] = v;
        let json: unknown;
        try {
          json = JSON.parse(up.body.toString("utf8"));
        } catch {
          return reply(res, up);
        }
        // The transform may change headers too: they are merged back over the upstream's.
        // A transform may take its time (a promise): the world may change before the answer goes.
        const out = await action.transform(json, { status: up.status, headers: flat });
        return reply(
          res,
          { ...up, headers: { ...up.headers, ...flat }, status: action.status ?? up.status },
          JSON.stringify(out),
        );
      }
      case "truncate": {
        const up = await forward(target, r);
        const headers: Record<string, string | string[] | undefined> = {
          ...up.headers,
          "content-length": String(up.body.length),
        };
        delete headers["transfer-encoding"];
        res.writeHead(up.status, headers);
        res.write(up.body.subarray(0, Math.floor(up.body.length / 2)));
        setTimeout(() => req.socket.destroy(), 10);
        return;
      }
      case "garbage": {
        const up = await forward(target, r);
        return reply(res, up, "<html>502 Bad Gateway</html>");
      }
      case "duplicate": {
        await forward(target, r);
        return reply(res, await forward(target, r));
      }
      case "raw":
        action.handler(req, res, r.body);
        return;
      case "hold":
        await action.until(r);
        return reply(res, await forward(target, r));
    }
  }

  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((ok) => {
      for (const s of sockets) s.destroy();
      server.close(() => ok());
    });
  return proxy;
}

/** Matches a method and a path prefix (query strings ignored). */
export const on = (method: string, pathPrefix: string) => (r: SeenRequest) =>
  r.method === method && r.path.split("?")[0]!.startsWith(pathPrefix);
