/**
 * The JSON-RPC transport the Solana chain port reads through: one POST per request with
 * undici's `request` on its shared keep-alive pool, the answer parsed with JSON.parse. Kit's
 * default transport goes through WHATWG fetch and a bigint-preserving JSON parser, about
 * three times the CPU per request (`npm run bench -- --only profile`), on every paid call's
 * blockhash and every settlement check.
 *
 * What JSON.parse gives up is exactness past 2^53, which no field the port reads comes near:
 * slots, block heights and times are numbers far below it, and token amounts come as strings
 * (a lamport balance or rentEpoch may not survive exactly; nothing here reads them).
 */
import type { RpcTransport } from "@solana/kit";
import { request } from "undici";

/** A request's params hold no bigint the port sends; one that cannot be a JSON number exactly is refused. */
export function jsonOfParams(payload: unknown): string {
  return JSON.stringify(payload, (_key, value: unknown) => {
    if (typeof value !== "bigint") return value;
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER))
      throw new Error(`an RPC parameter (${value}) is past what a JSON number holds exactly`);
    return Number(value);
  });
}

/**
 * One JSON-RPC POST to `url` (a single request, or a batch: rpc-batch.ts), its answer parsed.
 * An answer other than 2xx, or one past `maxBytes`, is an error naming why.
 */
export async function postJsonRpc(
  url: string,
  body: string,
  signal: AbortSignal | undefined,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<unknown> {
  const res = await request(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body,
    ...(signal ? { signal } : {}),
  });
  const length = Number(res.headers["content-length"] ?? 0);
  if (res.statusCode < 200 || res.statusCode > 299 || length > maxBytes) {
    await res.body.dump();
    throw new Error(
      length > maxBytes ? "the Solana RPC's answer is too large" : `the Solana RPC answered HTTP ${res.statusCode}`,
    );
  }
  const text = await res.body.text();
  if (text.length > maxBytes) throw new Error("the Solana RPC's answer is too large");
  return JSON.parse(text) as unknown;
}

/** Kit's transport for `url`, over postJsonRpc. */
export function undiciTransport(url: string): RpcTransport {
  return (async ({ payload, signal }: { payload: unknown; signal?: AbortSignal }) =>
    postJsonRpc(url, jsonOfParams(payload), signal)) as RpcTransport;
}
