/**
 * An EVM transaction as the engine reads money out of it (chain/chain.ts's ChainTx): the
 * token's Transfer logs as transfers between addresses (the sender is the authority: an
 * EIP-3009 authorization moves its signer's own balance), the nonces of its AuthorizationUsed
 * logs as the references that tie it to payment records, and each address's net change.
 * Pure.
 */
import type { ChainTransfer, ChainTx } from "../../chain/chain.js";
import type { EvmReceipt, TokenLog } from "./rpc.js";

type Transfer = Extract<TokenLog["event"], { kind: "transfer" }>;

/** The net change of each address over some transfers of `token`. */
function balanceChanges(transfers: readonly Transfer[], token: string): ChainTx["balanceChanges"] {
  const net = new Map<string, bigint>();
  for (const t of transfers) {
    net.set(t.from, (net.get(t.from) ?? 0n) - t.value);
    net.set(t.to, (net.get(t.to) ?? 0n) + t.value);
  }
  return [...net].map(([account, delta]) => ({ account, owner: account, mint: token, delta }));
}

const asTransfer = (t: Transfer, token: string): ChainTransfer => ({
  source: t.from,
  destination: t.to,
  authority: t.from,
  mint: token,
  amount: t.value,
});

/** A receipt (and its block's time, unix seconds) as a ChainTx: every transfer of `token` in it. */
export function chainTxOf(r: EvmReceipt, blockTime: bigint | null, token: string): ChainTx {
  const transfers = r.logs.flatMap((l) => (l.event.kind === "transfer" ? [l.event] : []));
  return {
    signature: r.tx,
    slot: r.blockNumber,
    blockTime: blockTime === null ? null : Number(blockTime),
    failed: r.failed,
    feePayer: r.from,
    transfers: r.failed ? [] : transfers.map((t) => asTransfer(t, token)),
    memos: r.logs.flatMap((l) => (l.event.kind === "used" ? [l.event.nonce] : [])),
    balanceChanges: r.failed ? [] : balanceChanges(transfers, token),
  };
}

/**
 * The part of a transaction one authorization did: its AuthorizationUsed log and the Transfer
 * the token emitted right after it (FiatToken marks the nonce used, then transfers), so a
 * transaction settling several authorizations at once is judged per authorization. Undefined
 * when the transaction holds no use of it.
 */
export function authorizationTx(
  r: EvmReceipt,
  blockTime: bigint | null,
  token: string,
  a: { authorizer: string; nonce: string },
): ChainTx | undefined {
  const at = r.logs.findIndex(
    (l) =>
      l.event.kind === "used" &&
      l.event.nonce === a.nonce.toLowerCase() &&
      l.event.authorizer.toLowerCase() === a.authorizer.toLowerCase(),
  );
  if (at < 0) return undefined;
  const next = r.logs.slice(at + 1).find((l) => l.event.kind === "transfer" || l.event.kind === "used");
  const transfer = next?.event.kind === "transfer" ? [next.event] : [];
  return {
    ...chainTxOf({ ...r, logs: [] }, blockTime, token),
    transfers: r.failed ? [] : transfer.map((t) => asTransfer(t, token)),
    memos: [a.nonce.toLowerCase()],
    balanceChanges: r.failed ? [] : balanceChanges(transfer, token),
  };
}
