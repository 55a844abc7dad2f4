/**
 * The tools of the abuse tests (test/hostile/sandbox-abuse.test.ts): a raw HTTP/1.1 client on
 * one socket, for abuse in the framing; bystanders, well-behaved clients that measure how
 * promptly the service answers them meanwhile; and sandboxes and sockets that are closed
 * after each test. (Floods in volume are sent from a child process: flood.ts.)
 */
import net from "node:net";
import { afterEach, expect } from "vitest";
import { QUOTE_BODY } from "./api.js";
import { apiClient, startTestSandbox, type ApiResponse, type TestSandbox } from "./sandbox.js";

/** Paces an abuser (a trickled body) or bounds a wait for an answer; never lets something happen. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---- Raw HTTP over node:net ---------------------------------------------------------------

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** When the status line arrived, ms after the socket connected. */
  atMs: number;
}

/**
 * A raw HTTP/1.1 client on one socket. Collects what the server sends; `response` resolves
 * with the first complete response (Content-Length framed, as the sandbox answers), `closed`
 * when the server (or we) closed the socket. Always bounded: destroyed after `maxMs`.
 */
export function rawSocket(port: number, maxMs = 20_000) {
  const socket = net.connect(port, "127.0.0.1");
  const started = Date.now();
  let data = Buffer.alloc(0);
  let firstByteAt: number | undefined;
  let resolveResponse!: (r: RawResponse) => void;
  const response = new Promise<RawResponse>((r) => (resolveResponse = r));
  const closed = new Promise<{ atMs: number; error?: string }>((resolve) => {
    socket.on("error", (e) =>
      resolve({ atMs: Date.now() - started, error: (e as NodeJS.ErrnoException).code ?? e.message }),
    );
    socket.on("close", () => resolve({ atMs: Date.now() - started }));
  });
  const tryParse = () => {
    const end = data.indexOf("\r\n\r\n");
    if (end < 0) return;
    const head = data.subarray(0, end).toString("latin1").split("\r\n");
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head[0] ?? "")?.[1]);
    const headers: Record<string, string> = {};
    for (const line of head.slice(1)) {
      const i = line.indexOf(":");
      if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    const length = Number(headers["content-length"] ?? "0");
    if (data.length < end + 4 + length) return;
    resolveResponse({
      status,
      headers,
      body: data.subarray(end + 4, end + 4 + length).toString("utf8"),
      atMs: (firstByteAt ?? Date.now()) - started,
    });
  };
  socket.on("data", (chunk: Buffer) => {
    firstByteAt ??= Date.now();
    data = Buffer.concat([data, chunk]);
    tryParse();
  });
  const guard = setTimeout(() => socket.destroy(), maxMs);
  closed.then(() => clearTimeout(guard));
  const connected = new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("error", reject);
  });
  return {
    socket,
    connected,
    response,
    closed,
    /** Everything received so far, as text. */
    received: () => data.toString("latin1"),
    write: (s: string | Buffer) => (socket.destroyed ? false : socket.write(s)),
    destroy: () => socket.destroy(),
  };
}

export function head(method: string, path: string, headers: Record<string, string>): string {
  return `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("")}\r\n`;
}

/**
 * A well-behaved client measuring how long each answer takes while others abuse the service,
 * one request every `everyMs` (its own pace, within its limit) until `until(answered so far)`.
 */
export async function bystander(
  t: TestSandbox,
  key: string,
  until: (answered: number) => boolean,
  opts: { everyMs?: number; max?: number } = {},
) {
  const call = apiClient(t.sb.baseUrl, key);
  const results: { status: number; ms: number; text: string }[] = [];
  for (let i = 0; i < (opts.max ?? 200) && !until(results.length); i++) {
    const started = Date.now();
    // Alternate a read and a state-changing request (a quote: body parsing, SQLite writes).
    const res: ApiResponse =
      i % 2 === 0 ? await call("GET", "/actions") : await call("POST", "/quotes", { body: QUOTE_BODY });
    results.push({ status: res.status, ms: Date.now() - started, text: res.text.slice(0, 300) });
    await sleep(opts.everyMs ?? 50);
  }
  return results;
}

export function expectServedPromptly(
  results: { status: number; ms: number; text: string }[],
  minCount: number,
  maxMs: number,
): void {
  expect(results.length).toBeGreaterThanOrEqual(minCount);
  for (const r of results) {
    expect([200, 201], r.text).toContain(r.status);
    expect(r.ms, `a bystander waited ${r.ms} ms`).toBeLessThan(maxMs);
  }
}

// ---- Clean-up after each test ------------------------------------------------------------

/**
 * Registers an afterEach that destroys every raw socket and closes every sandbox the test
 * made; `sandbox` starts one, `raw` opens a raw socket.
 */
export function abuseFixture() {
  let current: TestSandbox[] = [];
  const sockets = new Set<ReturnType<typeof rawSocket>>();
  async function sandbox(opts: Parameters<typeof startTestSandbox>[0] = {}): Promise<TestSandbox> {
    const t = await startTestSandbox(opts);
    current.push(t);
    return t;
  }
  function raw(port: number, maxMs?: number) {
    const s = rawSocket(port, maxMs);
    sockets.add(s);
    return s;
  }

  afterEach(async () => {
    for (const s of sockets) s.destroy();
    sockets.clear();
    await Promise.all(current.map((t) => t.close()));
    current = [];
  });

  return { sandbox, raw };
}
