/**
 * The sandbox's Solana ledger: a LiteSVM instance (signature and blockhash checks on) made
 * durable by an operation log in SQLite plus a periodic snapshot file.
 *
 * Every state change (a successful transaction, an account write at genesis, a blockhash
 * rotation) is applied to LiteSVM and appended to `ledger_log` in the same synchronous
 * step, and nobody is told about it before the log's group fsync covers it (group-sync.ts),
 * so a kill -9 or a power cut can only lose an operation that nobody was told about. On
 * open, the newest snapshot is loaded and the log after it is replayed (blockhash check off
 * during replay only: the transactions were valid when they landed). What each operation
 * does to LiteSVM is operations.ts; the snapshot file's format is snapshot.ts.
 */
import type Database from "better-sqlite3";
import { FailedTransactionMetadata, type LiteSVM, type TransactionMetadata } from "litesvm";
import { address, type Address, type Transaction } from "@solana/kit";
import { TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import {
  landedDetail,
  LedgerHistory,
  type LandedTransaction,
  type SignatureEntry,
  type SignatureQuery,
  type TokenBalance,
} from "./history.js";
import { airdropPayload, applyOperation, setAccountPayload, SLOTS_PER_BLOCKHASH, type LogKind } from "./operations.js";
import { BalanceReader, decodeTokenAccount } from "./balances.js";
import { readSnapshot, writeSnapshot } from "./snapshot.js";
import { decodeWireTransaction, describeTxError, messageHashOf, signatureOf, staticAccountsOf } from "./tx-wire.js";
import { simulateWire } from "./litesvm-wire.js";
import { base58, isSigned, keyName, readWireBase64, wireMessageHash } from "../../domain/solana-wire.js";
import { inTransaction, statement } from "../db.js";

export type { LandedTransaction, SignatureEntry, TokenBalance } from "./history.js";

export type SubmitResult =
  | { ok: true; signature: string; landed: LandedTransaction }
  | { ok: false; signature: string; error: string; logs: string[] };

export type SimulateResult =
  { ok: true; logs: string[]; unitsConsumed: bigint } | { ok: false; error: string; logs: string[] };

export interface EncodedAccountView {
  address: string;
  lamports: bigint;
  owner: string;
  executable: boolean;
  data: Uint8Array;
}

export interface LedgerOptions {
  db: Database.Database;
  snapshotPath: string;
  now: () => number;
  /** A blockhash handed out more than this long ago is replaced on the next request. */
  blockhashTtlMs: number;
  /** Snapshot after this many logged operations (and on close). */
  snapshotEvery?: number;
  /**
   * Makes every committed log row durable now. The log's commits are synced in groups
   * (group-sync.ts); a snapshot must never hold an operation the durable log does not.
   */
  syncLog?: () => void;
}

interface LogRow {
  seq: number;
  kind: LogKind;
  payload: string;
}

export class Ledger {
  private svm: LiteSVM;
  private blockhashIssuedAt: number;
  private opsSinceSnapshot = 0;
  private readonly snapshotEvery: number;
  private readonly insertLog: Database.Statement;
  private readonly history: LedgerHistory;
  private readonly balances: BalanceReader;

  private constructor(
    private readonly opts: LedgerOptions,
    svm: LiteSVM,
  ) {
    this.svm = svm;
    this.balances = new BalanceReader(svm);
    this.blockhashIssuedAt = opts.now();
    this.snapshotEvery = opts.snapshotEvery ?? 200;
    this.insertLog = statement(
      opts.db,
      `INSERT INTO ledger_log (kind, payload, signature, message_hash, slot, block_time, detail)
       VALUES (@kind, @payload, @signature, @messageHash, @slot, @blockTime, @detail)`,
    );
    this.history = new LedgerHistory(opts.db);
  }

  /** Opens the ledger: snapshot, then replay of every logged operation after it. */
  static open(opts: LedgerOptions): Ledger {
    const { svm, fromSeq } = readSnapshot(opts.snapshotPath);
    const ledger = new Ledger(opts, svm);
    ledger.replay(fromSeq);
    return ledger;
  }

  private replay(afterSeq: number): void {
    const rows = statement(this.opts.db, `SELECT seq, kind, payload FROM ledger_log WHERE seq > ? ORDER BY seq`).all(
      afterSeq,
    ) as LogRow[];
    if (rows.length === 0) return;
    this.svm.withBlockhashCheck(false);
    try {
      for (const row of rows) applyOperation(this.svm, row.kind, row.payload, true);
    } finally {
      this.svm.withBlockhashCheck(true);
    }
    this.opsSinceSnapshot = rows.length;
  }

  /**
   * Applies an operation and appends it to the log inside one BEGIN IMMEDIATE
   * transaction: the write lock is taken before LiteSVM changes, so the in-memory ledger
   * never holds an operation the log does not. `describe` runs after a successful apply
   * (inside the transaction) and returns what to log; returning undefined logs nothing.
   */
  private applyDurably<T>(
    kind: LogKind,
    payload: string,
    describe: (result: TransactionMetadata | FailedTransactionMetadata | undefined) => {
      value: T;
      log?: { signature?: string; messageHash?: string; detail?: string; addresses?: readonly string[] };
      /** Runs once the operation is logged, in a savepoint of the same transaction; a throw undoes it alone. */
      alongside?: () => void;
    },
    before?: () => void,
  ): T {
    const value = inTransaction(
      this.opts.db,
      () => {
        before?.();
        const result = applyOperation(this.svm, kind, payload, false);
        const described = describe(result);
        if (described.log) {
          const { lastInsertRowid } = this.insertLog.run({
            kind,
            payload,
            signature: described.log.signature ?? null,
            messageHash: described.log.messageHash ?? null,
            slot: Number(this.svm.getClock().slot),
            blockTime: Math.floor(this.opts.now() / 1000),
            detail: described.log.detail ?? null,
          });
          if (described.log.addresses) this.history.indexAddresses(lastInsertRowid, described.log.addresses);
          this.opsSinceSnapshot++;
        }
        if (described.alongside) {
          try {
            inTransaction(this.opts.db, described.alongside);
          } catch {
            // Undone alone (its savepoint): the operation stands, and the caller sees its record missing.
          }
        }
        return described.value;
      },
      "immediate",
    );
    if (this.opsSinceSnapshot >= this.snapshotEvery) this.snapshot();
    return value;
  }

  /** Writes (creates or overwrites) an account, logged. For genesis set-up only. */
  setAccount(account: {
    address: string;
    lamports: bigint;
    owner: string;
    executable?: boolean;
    data: Uint8Array;
  }): void {
    this.balances.forget();
    this.applyDurably("set_account", setAccountPayload(account), () => ({ value: undefined, log: {} }));
  }

  airdrop(to: string, amount: bigint): void {
    this.balances.forget();
    this.applyDurably("airdrop", airdropPayload(to, amount), () => ({ value: undefined, log: {} }));
  }

  /**
   * The blockhash clients should sign with now; a stale one is rotated first. The block
   * height is the slot, and a rotation moves it SLOTS_PER_BLOCKHASH on: the blockhash is
   * valid up to the height just before the next rotation, and no further, as its
   * `lastValidBlockHeight` says (a client comparing heights sees it expire when it does).
   */
  latestBlockhash(): { blockhash: string; lastValidBlockHeight: bigint; slot: bigint } {
    this.expireStaleBlockhash();
    const slot = this.svm.getClock().slot;
    return { blockhash: this.svm.latestBlockhash(), lastValidBlockHeight: slot + SLOTS_PER_BLOCKHASH - 1n, slot };
  }

  /** The blockhash LiteSVM accepts right now, without rotating. */
  currentBlockhash(): string {
    return this.svm.latestBlockhash();
  }

  /** Whether a transaction signed against `blockhash` can still land (time passing expires it, as on a cluster). */
  isBlockhashValid(blockhash: string): boolean {
    this.expireStaleBlockhash();
    return blockhash === this.svm.latestBlockhash();
  }

  /** A blockhash handed out longer than the TTL ago is replaced, whoever asks first. */
  private expireStaleBlockhash(): void {
    if (this.opts.now() - this.blockhashIssuedAt >= this.opts.blockhashTtlMs) this.rotateBlockhash();
  }

  /** Moves the ledger to a new blockhash: transactions signed against the old one fail. */
  rotateBlockhash(): void {
    this.applyDurably("rotate", "{}", () => ({ value: undefined, log: {} }));
    this.blockhashIssuedAt = this.opts.now();
  }

  slot(): bigint {
    return this.svm.getClock().slot;
  }

  /** The block height now (the slot), once a stale blockhash has been rotated: time passing moves it, as on a cluster. */
  blockHeight(): bigint {
    this.expireStaleBlockhash();
    return this.slot();
  }

  account(addr: string): EncodedAccountView | undefined {
    const acc = this.svm.getAccount(address(addr));
    if (!acc.exists) return undefined;
    return {
      address: addr,
      lamports: acc.lamports,
      owner: acc.programAddress,
      executable: acc.executable,
      data: acc.data as Uint8Array,
    };
  }

  lamports(addr: string): bigint {
    return this.account(addr)?.lamports ?? 0n;
  }

  /** Decoded SPL token account, or undefined if the address holds none. */
  tokenAccount(addr: string): { mint: string; owner: string; amount: bigint } | undefined {
    const acc = this.account(addr);
    return acc ? decodeTokenAccount(acc.owner === TOKEN_PROGRAM_ADDRESS, acc.data) : undefined;
  }

  /**
   * Submits a fully signed transaction. On success it is applied and logged in one
   * synchronous step, and described for getTransaction. `alongside` runs on success inside
   * that same SQLite transaction (a savepoint of its own): what the caller records of the
   * transaction commits with it. Should it throw, its writes alone are undone and the
   * transaction still lands: the caller sees that nothing of its own was recorded.
   */
  submit(wireBase64: string, alongside?: (landed: LandedTransaction) => void): SubmitResult {
    const ids = transactionIds(wireBase64);
    if (!ids) return { ok: false, signature: "", error: "SanitizeFailure", logs: [] };
    const { signature, accounts, messageHash } = ids;
    let pre: { lamports: bigint[]; tokens: TokenBalance[] } | undefined;
    return this.applyDurably<SubmitResult>(
      "tx",
      wireBase64,
      (result) => {
        if (!result || result instanceof FailedTransactionMetadata) {
          const failed = result as FailedTransactionMetadata;
          return { value: { ok: false, signature, error: describeTxError(failed), logs: failed.meta().logs() } };
        }
        const post = this.balances.balances(accounts);
        const before = pre!;
        const fee = accounts.length > 0 ? before.lamports[0]! - post.lamports[0]! : 0n;
        const landed: LandedTransaction = {
          signature,
          slot: this.svm.getClock().slot,
          blockTime: Math.floor(this.opts.now() / 1000),
          wire: wireBase64,
          messageHash,
          fee: fee > 0n ? fee : 0n,
          logs: result.logs(),
          computeUnits: result.computeUnitsConsumed(),
          preBalances: before.lamports,
          postBalances: post.lamports,
          preTokenBalances: before.tokens,
          postTokenBalances: post.tokens,
        };
        const detail = landedDetail(landed);
        return {
          value: { ok: true, signature, landed },
          log: { signature, messageHash, detail, addresses: accounts },
          alongside: alongside && (() => alongside(landed)),
        };
      },
      () => {
        pre = this.balances.balances(accounts);
      },
    );
  }

  /**
   * Simulates a transaction. `checkSignatures: false` leaves its signatures to the submission
   * that follows (litesvm-wire.ts): the simulation says whether it would run.
   */
  simulate(wireBase64: string, opts: { checkSignatures?: boolean } = {}): SimulateResult {
    if (!transactionIds(wireBase64)) return { ok: false, error: "SanitizeFailure", logs: [] };
    const result = simulateWire(this.svm, wireBase64, opts.checkSignatures ?? true);
    if (result instanceof FailedTransactionMetadata) {
      return { ok: false, error: describeTxError(result), logs: result.meta().logs() };
    }
    const meta = result.meta();
    return { ok: true, logs: meta.logs(), unitsConsumed: meta.computeUnitsConsumed() };
  }

  /** A landed transaction by signature, from the durable log. */
  /** Whether a transaction with this signature landed. */
  hasTransaction(signature: string): boolean {
    return this.history.landed(signature);
  }

  transaction(signature: string): LandedTransaction | undefined {
    return this.history.transaction(signature);
  }

  /** A landed transaction by the hash of its message. */
  transactionByMessageHash(messageHash: string): LandedTransaction | undefined {
    return this.history.transactionByMessageHash(messageHash);
  }

  /** Landed transactions that name `address` among their account keys, newest first. */
  signaturesForAddress(addr: string, query: SignatureQuery): SignatureEntry[] {
    return this.history.signaturesForAddress(addr, query);
  }

  /**
   * Writes the whole ledger state with the sequence number of the last operation in it:
   * temp file, fsync, rename, once the log up to that operation is durable. A crash
   * mid-write leaves the previous snapshot intact.
   */
  snapshot(): void {
    this.opts.syncLog?.();
    const seqRow = statement(this.opts.db, `SELECT MAX(seq) AS seq FROM ledger_log`).get() as { seq: number | null };
    writeSnapshot(this.opts.snapshotPath, BigInt(seqRow.seq ?? 0), this.svm.toBytes());
    this.opsSinceSnapshot = 0;
  }

  close(): void {
    if (this.opsSinceSnapshot > 0) this.snapshot();
  }
}

/**
 * A transaction's signature, the accounts it names and its message hash: read from its bytes
 * (domain/solana-wire.ts), or through kit's decoder for what that reader does not take; undefined
 * when it does not decode at all.
 */
function transactionIds(
  wireBase64: string,
): { signature: string; accounts: Address[]; messageHash: string } | undefined {
  const wire = readWireBase64(wireBase64);
  if (wire) {
    return {
      signature: isSigned(wire.signatures[0]!) ? base58(wire.signatures[0]!) : "",
      accounts: wire.keys.map((k) => keyName(k) as Address),
      messageHash: wireMessageHash(wire),
    };
  }
  let tx: Transaction;
  try {
    tx = decodeWireTransaction(wireBase64);
  } catch {
    return undefined;
  }
  return { signature: signatureOf(tx), accounts: staticAccountsOf(tx), messageHash: messageHashOf(tx) };
}
