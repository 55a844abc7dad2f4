/**
 * POST /solana, the HTTP side of the ledger's Solana JSON-RPC endpoint (the methods are
 * ledger/rpc.ts): throttled per client address, POST only, a bounded JSON body, and answers
 * serialized as a Solana node does (u64 values as bare integers).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError } from "./errors.js";
import { readJsonBody } from "./io.js";
import type { Ledger } from "../ledger/ledger.js";
import { handleRpc, stringifyRpc } from "../ledger/rpc.js";

/**
 * POST /solana: JSON-RPC 2.0 over the ledger. Throttled per client address like
 * unauthenticated /v1 requests (a batch costs one token per call), answering 429 with
 * Retry-After and a JSON-RPC error.
 */
export async function handleSolana(
  ledger: Ledger,
  takeToken: (caller: string, cost?: number) => number,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
): Promise<void> {
  const reply = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
    const text = stringifyRpc(payload);
    res.statusCode = status;
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    res.setHeader("Content-Type", "application/json");
    res.setHeader("X-Request-Id", requestId);
    res.setHeader("Content-Length", Buffer.byteLength(text));
    res.end(text);
  };
  const caller = `rpc:${req.socket.remoteAddress ?? "?"}`;
  const limited = (wait: number) =>
    reply(
      429,
      {
        jsonrpc: "2.0",
        id: null,
        error: { code: -32005, message: `Too many requests: retry after ${wait} s`, data: { retryAfter: wait } },
      },
      {
        "Retry-After": String(wait),
      },
    );
  const wait = takeToken(caller);
  if (wait > 0) {
    req.resume();
    return limited(wait);
  }
  if (req.method !== "POST") {
    req.resume();
    return reply(405, { jsonrpc: "2.0", id: null, error: { code: -32600, message: "JSON-RPC over POST only" } });
  }
  let body: unknown;
  try {
    body = (await readJsonBody(req, "POST")).body;
  } catch (e) {
    const tooLarge = e instanceof ApiError && e.status === 413;
    return reply(tooLarge ? 413 : 200, {
      jsonrpc: "2.0",
      id: null,
      error: { code: -32700, message: tooLarge ? "Request too large" : "Parse error" },
    });
  }
  // A batch costs one token per call; the first was taken above.
  const extra = Array.isArray(body) ? Math.min(body.length, 100) - 1 : 0;
  const batchWait = extra > 0 ? takeToken(caller, extra) : 0;
  if (batchWait > 0) return limited(batchWait);
  reply(200, handleRpc(ledger, body));
}
