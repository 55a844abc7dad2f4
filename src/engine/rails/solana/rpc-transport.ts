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

/** The transport for `url`: an answer other than 2xx is an error naming its status. */
export function undiciTransport(url: string): RpcTransport {
  return (async ({ payload, signal }: { payload: unknown; signal?: AbortSignal }) => {
    const res = await request(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: jsonOfParams(payload),
      ...(signal ? { signal } : {}),
    });
    if (res.statusCode < 200 || res.statusCode > 299) {
      await res.body.dump();
      throw new Error(`the Solana RPC answered HTTP ${res.statusCode}`);
    }
    return (await res.body.json()) as unknown;
  }) as RpcTransport;
}
