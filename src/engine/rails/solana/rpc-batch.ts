/**
 * Several `getTransaction` reads in one JSON-RPC 2.0 batch (one HTTP round trip to the
 * user's RPC), each answer decoded by the same decodeRpcTransaction as a single read: the
 * reconciler verifies the settlements of one pass this way rather than one request each.
 * A node that refuses batches answers the whole request with an error: thrown, so the
 * caller reads them one by one.
 */
import type { ChainTx } from "./chain.js";
import type { RpcTransaction } from "./rpc.js";
import { postJsonRpc } from "./rpc-transport.js";

/** rpc.ts's decodeRpcTransaction, passed in: the decoder a single read uses (and no import cycle). */
type Decode = (signature: string, raw: RpcTransaction) => Promise<ChainTx>;

/** Bigger batches than a reconciler's pass are split: nodes cap a batch's size (often at 100 or less). */
export const MAX_TRANSACTIONS_PER_BATCH = 32;
/** A batch's answer is a handful of transactions: anything larger is not one. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

interface Answer {
  id?: unknown;
  result?: unknown;
  error?: { message?: unknown };
}

/**
 * The transactions `signatures` name, in order: each decoded, null when the node does not
 * have it, or the Error the node answered for that one. Throws when the batch as a whole got
 * no usable answer (no answer, an HTTP error, a body that is not a list of answers).
 */
export async function transactionsInOneTrip(
  url: string,
  signatures: readonly string[],
  signal: AbortSignal,
  decode: Decode,
): Promise<(ChainTx | null | Error)[]> {
  const out: (ChainTx | null | Error)[] = [];
  for (let i = 0; i < signatures.length; i += MAX_TRANSACTIONS_PER_BATCH)
    out.push(...(await oneBatch(url, signatures.slice(i, i + MAX_TRANSACTIONS_PER_BATCH), signal, decode)));
  return out;
}

async function oneBatch(url: string, signatures: readonly string[], signal: AbortSignal, decode: Decode) {
  // The same request a single read sends (rpc.ts transaction()), one per signature, its index as id.
  const body = signatures.map((signature, id) => ({
    jsonrpc: "2.0",
    id,
    method: "getTransaction",
    params: [signature, { encoding: "base64", maxSupportedTransactionVersion: 0, commitment: "confirmed" }],
  }));
  // Plain JSON: what is read of a transaction (rpc.ts RpcTransaction) takes numbers or bigints alike.
  const answers = await postJsonRpc(url, JSON.stringify(body), signal, MAX_ANSWER_BYTES);
  if (!Array.isArray(answers)) throw new Error("the RPC did not answer the batch with a list");
  const byId = new Map<unknown, Answer>();
  for (const a of answers as Answer[]) if (a && typeof a === "object") byId.set(a.id, a);
  return Promise.all(
    signatures.map(async (signature, id): Promise<ChainTx | null | Error> => {
      const a = byId.get(id);
      if (!a) return new Error("the RPC's batch answer left this read out");
      if (a.error) return new Error(String(a.error.message ?? "the RPC answered an error").slice(0, 200));
      if (a.result === null || a.result === undefined) return null;
      try {
        return await decode(signature, a.result as RpcTransaction);
      } catch (e) {
        return e instanceof Error ? e : new Error(String(e));
      }
    }),
  );
}
