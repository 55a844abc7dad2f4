/**
 * The ledger's durable history, read from `ledger_log`: landed transactions by signature
 * or by message hash, and by the addresses they name (`ledger_addresses`, written in the
 * same SQLite transaction as the log row) for getSignaturesForAddress.
 */
import type Database from "better-sqlite3";
import { decodeWireTransaction, memoOf } from "./tx-wire.js";
import { statement } from "../db.js";

export interface TokenBalance {
  accountIndex: number;
  mint: string;
  owner: string;
  amount: bigint;
}

/** What the ledger remembers of a transaction that landed. */
export interface LandedTransaction {
  signature: string;
  slot: bigint;
  blockTime: number;
  /** base64 wire transaction, fully signed. */
  wire: string;
  messageHash: string;
  fee: bigint;
  logs: string[];
  computeUnits: bigint;
  preBalances: bigint[];
  postBalances: bigint[];
  preTokenBalances: TokenBalance[];
  postTokenBalances: TokenBalance[];
}

/** One entry of getSignaturesForAddress, newest first. */
export interface SignatureEntry {
  signature: string;
  slot: bigint;
  blockTime: number;
  memo: string | null;
}

export interface SignatureQuery {
  limit: number;
  /** Start searching backwards from this signature (exclusive). Unknown: nothing is found. */
  before?: string;
  /** Stop before reaching this signature. Unknown: no lower bound. */
  until?: string;
}

export class LedgerHistory {
  private readonly insertAddress: Database.Statement;
  private readonly bySignature: Database.Statement;
  private readonly byMessage: Database.Statement;
  private readonly seqOf: Database.Statement;
  private readonly forAddress: Database.Statement;

  constructor(db: Database.Database) {
    this.insertAddress = statement(db, `INSERT OR IGNORE INTO ledger_addresses (address, seq) VALUES (?, ?)`);
    this.bySignature = statement(db, `SELECT detail FROM ledger_log WHERE signature = ? AND kind = 'tx'`);
    this.byMessage = statement(db, `SELECT detail FROM ledger_log WHERE message_hash = ? AND kind = 'tx'`);
    this.seqOf = statement(db, `SELECT seq FROM ledger_log WHERE signature = ? AND kind = 'tx'`);
    this.forAddress = statement(
      db,
      `SELECT l.signature, l.slot, l.block_time, l.payload FROM ledger_addresses a JOIN ledger_log l ON l.seq = a.seq
       WHERE a.address = @address AND a.seq < @before AND a.seq > @until
       ORDER BY a.seq DESC LIMIT @limit`,
    );
  }

  /** Records which addresses the landed transaction logged at `seq` names. Inside the log's transaction. */
  indexAddresses(seq: number | bigint, addresses: readonly string[]): void {
    for (const address of new Set(addresses)) this.insertAddress.run(address, seq);
  }

  /** Whether a transaction with this signature landed (without reading what it did). */
  landed(signature: string): boolean {
    return this.seqOf.get(signature) !== undefined;
  }

  transaction(signature: string): LandedTransaction | undefined {
    const row = this.bySignature.get(signature) as { detail: string } | undefined;
    return row ? reviveLanded(row.detail) : undefined;
  }

  transactionByMessageHash(messageHash: string): LandedTransaction | undefined {
    const row = this.byMessage.get(messageHash) as { detail: string } | undefined;
    return row ? reviveLanded(row.detail) : undefined;
  }

  /** Landed transactions naming `address`, newest first, as a node pages them. */
  signaturesForAddress(address: string, q: SignatureQuery): SignatureEntry[] {
    let before = Number.MAX_SAFE_INTEGER;
    if (q.before !== undefined) {
      const row = this.seqOf.get(q.before) as { seq: number } | undefined;
      if (!row) return [];
      before = row.seq;
    }
    const untilRow = q.until === undefined ? undefined : (this.seqOf.get(q.until) as { seq: number } | undefined);
    const rows = this.forAddress.all({ address, before, until: untilRow?.seq ?? 0, limit: q.limit }) as Array<{
      signature: string;
      slot: number;
      block_time: number;
      payload: string;
    }>;
    return rows.map((r) => ({
      signature: r.signature,
      slot: BigInt(r.slot),
      blockTime: r.block_time,
      memo: memoOf(decodeWireTransaction(r.payload)),
    }));
  }
}

/**
 * A landed transaction as `ledger_log.detail` keeps it: its bigints as decimal strings (what
 * `reviveLanded` reads back). Converted field by field rather than by a `JSON.stringify`
 * replacer, which leaves V8's fast path for every value of every settlement.
 */
export function landedDetail(landed: LandedTransaction): string {
  const tokens = (list: TokenBalance[]) => list.map((t) => ({ ...t, amount: t.amount.toString() }));
  return JSON.stringify({
    ...landed,
    slot: landed.slot.toString(),
    fee: landed.fee.toString(),
    computeUnits: landed.computeUnits.toString(),
    preBalances: landed.preBalances.map(String),
    postBalances: landed.postBalances.map(String),
    preTokenBalances: tokens(landed.preTokenBalances),
    postTokenBalances: tokens(landed.postTokenBalances),
  });
}

export function reviveLanded(detail: string): LandedTransaction {
  const raw = JSON.parse(detail) as Record<string, unknown>;
  const big = (v: unknown) => BigInt(v as string);
  const tokens = (list: unknown) =>
    (list as Array<Record<string, unknown>>).map((t) => ({ ...t, amount: big(t.amount) }) as TokenBalance);
  return {
    ...(raw as unknown as LandedTransaction),
    slot: big(raw.slot),
    fee: big(raw.fee),
    computeUnits: big(raw.computeUnits),
    preBalances: (raw.preBalances as string[]).map(big),
    postBalances: (raw.postBalances as string[]).map(big),
    preTokenBalances: tokens(raw.preTokenBalances),
    postTokenBalances: tokens(raw.postTokenBalances),
  };
}
