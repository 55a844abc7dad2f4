/**
 * Floods for the abuse tests, sent from a child process: the service under test and the
 * bystanders measuring it keep the test process's event loop to themselves, so what a
 * bystander waits is the service's doing, not the flood client's.
 */
import { spawn } from "node:child_process";
import type { ApiResponse } from "./sandbox.js";

export interface FloodRequest {
  method: string;
  path: string;
  /** The bearer key; null: no Authorization header. */
  key: string | null;
  body?: unknown;
}

/** A flood in waves of `size` requests at once, `gapMs` apart, sent from a child process. */
export function floodFromChild(
  baseUrl: string,
  requests: FloodRequest[],
  size: number,
  gapMs: number,
): Promise<ApiResponse[]> {
  const script = `
    const { baseUrl, requests, size, gapMs } = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const send = async (q) => {
      const headers = { ...(q.key === null ? {} : { authorization: "Bearer " + q.key }), ...(q.body === undefined ? {} : { "content-type": "application/json" }) };
      const res = await fetch(baseUrl + q.path, { method: q.method, headers, body: q.body === undefined ? undefined : JSON.stringify(q.body) });
      const text = await res.text();
      return { status: res.status, headers: Object.fromEntries(res.headers), text };
    };
    (async () => {
      const all = [];
      for (let w = 0; w * size < requests.length; w++) {
        for (const q of requests.slice(w * size, (w + 1) * size)) all.push(send(q));
        if ((w + 1) * size < requests.length) await sleep(gapMs);
      }
      process.stdout.write(JSON.stringify(await Promise.all(all)));
    })().catch((e) => { process.stderr.write(String(e)); process.exit(1); });
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", script], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c));
    child.stderr.on("data", (c: Buffer) => (err += c));
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`the flood's process failed (${code}): ${err.slice(0, 500)}`));
      const results = JSON.parse(out) as Array<{ status: number; headers: Record<string, string>; text: string }>;
      resolve(
        results.map((r) => {
          let body: unknown;
          try {
            body = r.text ? JSON.parse(r.text) : undefined;
          } catch {
            body = undefined;
          }
          return { ...r, body };
        }),
      );
    });
    child.stdin.end(JSON.stringify({ baseUrl, requests, size, gapMs }));
  });
}
