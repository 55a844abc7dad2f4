/**
 * The SQLite journal's connection, and the records it keeps beside the intents: approvals,
 * the index of tool-call transcripts, the catalog cache, the freeze, the memory of approval
 * PINs (pin-records.ts) and passkeys (passkey-rows.ts). sqlite-intents.ts builds the intents on it, and sqlite.ts the store
 * with the budget and the payments.
 */
import type Database from "better-sqlite3";
import type { Approval, ApprovalStatus } from "../model/types.js";
import { PIN_KEYS, pinKey, pinValue, toPinRecord } from "./pin-records.js";
import { ADVANCE_WHERE, PASSKEY_INSERT, passkeyValues, toPasskey } from "./passkey-rows.js";
import type {
  AssertedApproval,
  CatalogRecord,
  Freeze,
  PasskeyRecord,
  PinRecord,
  SellerWordPart,
  SellerWordRecord,
  TranscriptRecord,
} from "./port.js";
import { toApproval, toFreeze } from "./rows.js";

/**
 * Every journal connection this process opened, with its statements, kept for the process's
 * life, closed or not: under Node 24 better-sqlite3 12 aborts the process when the garbage
 * collector destroys a `Database` or `Statement` (`Assertion failed: (env) != nullptr`, see
 * docs/dependencies.md). So nothing here calls `prepare()` or `pragma()` (a new statement
 * each call) but `sql()`; `exec()` makes none, nor does `transaction()` after its first call.
 */
const held = new Map<Database.Database, Map<string, Database.Statement>>();

/** Thrown inside a transaction to undo it: what it reports is the transaction's answer (below). */
class CounterStale extends Error {
  constructor(readonly answer: "counter" | "missing" = "counter") {
    super(answer);
  }
}

export abstract class SqliteRecords {
  private readonly statements = new Map<string, Database.Statement>();

  protected constructor(protected readonly db: Database.Database) {
    held.set(db, this.statements);
  }

  /** The statement for `text`, prepared once and never let go (above). */
  protected sql(text: string): Database.Statement {
    let s = this.statements.get(text);
    if (!s) {
      s = this.db.prepare(text);
      this.statements.set(text, s);
    }
    return s;
  }

  /** Runs `fn` in one transaction: all its writes land, or none. */
  protected atomically<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  // ---- Approvals ------------------------------------------------------------------

  insertApproval(a: Approval): void {
    this.sql(
      `INSERT INTO approvals (approval_id, intent_id, quote_id, action, amount, payee, expires_at, status, created_at, decided_at)
       VALUES (@approvalId, @intentId, @quoteId, @action, @amount, @payee, @expiresAt, @status, @createdAt, @decidedAt)`,
    ).run({ ...a, amount: a.amount.toString() });
  }

  approval(approvalId: string): Approval | undefined {
    const row = this.sql(`SELECT * FROM approvals WHERE approval_id = ?`).get(approvalId);
    return row ? toApproval(row as Record<string, unknown>) : undefined;
  }

  pendingApprovals(now: number): Approval[] {
    return (
      this.sql(`SELECT * FROM approvals WHERE status = 'pending' AND expires_at > ? ORDER BY created_at`).all(
        now,
      ) as Record<string, unknown>[]
    ).map(toApproval);
  }

  /** Moves an approval from one status to another; false if it was not in `from`. */
  decideApproval(approvalId: string, from: ApprovalStatus, to: ApprovalStatus, now: number): boolean {
    return (
      this.sql(`UPDATE approvals SET status = ?, decided_at = ? WHERE approval_id = ? AND status = ?`).run(
        to,
        now,
        approvalId,
        from,
      ).changes === 1
    );
  }

  approveWithAssertion(
    approvalId: string,
    now: number,
    assertion: string,
    credentialId: string,
    signCount: number,
  ): AssertedApproval {
    const r = this.undoable((): AssertedApproval => {
      const decided = this.sql(
        `UPDATE approvals SET status = 'approved', decided_at = ?, assertion = ? WHERE approval_id = ? AND status = 'pending'`,
      ).run(now, assertion, approvalId);
      if (decided.changes !== 1) return "changed";
      const advanced = this.sql(`UPDATE passkeys SET sign_count = @n WHERE ${ADVANCE_WHERE("@n", "@id")}`).run({
        n: signCount,
        id: credentialId,
      });
      // Undone with the approval: a replayed counter approves nothing.
      if (advanced.changes !== 1) throw new CounterStale();
      return "approved";
    });
    return r === "missing" ? "counter" : r;
  }

  approvalAssertion(approvalId: string): string | undefined {
    const row = this.sql(`SELECT assertion FROM approvals WHERE approval_id = ?`).get(approvalId) as
      { assertion: string | null } | undefined;
    return row?.assertion ?? undefined;
  }

  // ---- Transcripts' index ----------------------------------------------------------

  /**
   * The index row is no money: it is committed without an fsync of its own (synchronous =
   * NORMAL, for this statement only), and reaches the disk with the next commit that syncs.
   * A killed process keeps it (it is in the WAL); only a power loss could drop it, and the
   * transcript file would stay.
   */
  indexTranscript(r: TranscriptRecord): void {
    this.relaxed(() =>
      this.sql(
        `INSERT INTO transcripts (call_id, created_at, host, home) VALUES (?, ?, ?, ?) ON CONFLICT (call_id) DO NOTHING`,
      ).run(r.callId, r.createdAt, r.host, r.home),
    );
  }

  /**
   * One write committed with synchronous = NORMAL: in WAL mode its commit does not wait for
   * an fsync; the next commit made with FULL syncs the WAL, this write's frames with it.
   */
  private relaxed(write: () => unknown): void {
    this.db.exec("PRAGMA synchronous = NORMAL");
    try {
      write();
    } finally {
      this.db.exec("PRAGMA synchronous = FULL");
    }
  }

  transcriptIndex(limit: number): TranscriptRecord[] {
    const rows = this.sql(
      `SELECT call_id, created_at, host, home FROM transcripts ORDER BY created_at DESC, call_id DESC LIMIT ?`,
    ).all(limit) as Array<{ call_id: string; created_at: number; host: string; home: string }>;
    return rows.map((r) => ({ callId: r.call_id, createdAt: r.created_at, host: r.host, home: r.home }));
  }

  // ---- Catalog cache --------------------------------------------------------------

  saveCatalog(service: string, details: Array<{ name: string; detail: unknown }>, now: number): void {
    this.db.transaction(() => {
      this.sql(`DELETE FROM catalog WHERE service = ?`).run(service);
      const insert = this.sql(`INSERT INTO catalog (service, name, detail, fetched_at) VALUES (?, ?, ?, ?)`);
      for (const d of details) insert.run(service, d.name, JSON.stringify(d.detail), now);
    })();
  }

  /** Without an fsync of its own, like the transcript index: the outcome's commit that follows syncs the WAL up to it. */
  saveResponseBody(intentId: string, body: Uint8Array, now: number): void {
    this.relaxed(() =>
      this.sql(
        `INSERT INTO response_bodies (intent_id, body, stored_at) VALUES (?, ?, ?)
       ON CONFLICT (intent_id) DO UPDATE SET body = excluded.body, stored_at = excluded.stored_at`,
      ).run(intentId, Buffer.from(body.buffer, body.byteOffset, body.byteLength), now),
    );
  }

  responseBody(intentId: string): Uint8Array | undefined {
    const row = this.sql(`SELECT body FROM response_bodies WHERE intent_id = ?`).get(intentId) as
      { body: Buffer } | undefined;
    return row ? new Uint8Array(row.body) : undefined;
  }

  // ---- The seller's signed word ---------------------------------------------------

  /**
   * Evidence, not money: without an fsync of its own, like a response body. The offer is
   * synced by the commit that journals the proof, the receipt by the purchase's next one; a
   * killed process keeps both (they are in the WAL).
   */
  saveSellerWord(intentId: string, part: SellerWordPart, json: string | null, now: number): void {
    // `part` is one of two column names, never a caller's text.
    const column = part === "offer" ? "offer" : "receipt";
    this.relaxed(() =>
      this.sql(
        `INSERT INTO seller_words (intent_id, ${column}, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (intent_id) DO UPDATE SET ${column} = excluded.${column}, updated_at = excluded.updated_at`,
      ).run(intentId, json, now),
    );
  }

  sellerWord(intentId: string): SellerWordRecord | undefined {
    const row = this.sql(`SELECT offer, receipt, updated_at FROM seller_words WHERE intent_id = ?`).get(intentId) as
      { offer: string | null; receipt: string | null; updated_at: number } | undefined;
    return row ? { offer: row.offer, receipt: row.receipt, updatedAt: row.updated_at } : undefined;
  }

  catalog(service: string): CatalogRecord[] {
    const rows = this.sql(`SELECT name, detail, fetched_at FROM catalog WHERE service = ? ORDER BY name`).all(
      service,
    ) as Array<{ name: string; detail: string; fetched_at: number }>;
    return rows.map((r) => ({ name: r.name, detail: JSON.parse(r.detail) as unknown, fetchedAt: r.fetched_at }));
  }

  // ---- The freeze -----------------------------------------------------------------

  frozen(): Freeze | undefined {
    const row = this.sql(`SELECT reason, frozen_at, frozen_by FROM payment_freeze`).get();
    return row ? toFreeze(row as Record<string, unknown>) : undefined;
  }

  /**
   * Under the write lock, which recording a signed proof also takes (sqlite.ts): a proof
   * being recorded now lands before the freeze, and none lands after it.
   */
  freeze(f: Freeze): { freeze: Freeze; already: boolean } {
    return this.db
      .transaction(() => {
        const earlier = this.frozen();
        if (earlier) return { freeze: earlier, already: true };
        this.sql(`INSERT INTO payment_freeze (only_row, reason, frozen_at, frozen_by) VALUES (1, ?, ?, ?)`).run(
          f.reason,
          f.since,
          f.by,
        );
        return { freeze: f, already: false };
      })
      .immediate();
  }

  unfreeze(): Freeze | undefined {
    return this.db
      .transaction(() => {
        const lifted = this.frozen();
        if (lifted) this.sql(`DELETE FROM payment_freeze`).run();
        return lifted;
      })
      .immediate();
  }

  // ---- Passkeys ------------------------------------------------------------------

  passkeys(): PasskeyRecord[] {
    return (
      this.sql(`SELECT * FROM passkeys ORDER BY created_at, credential_id`).all() as Record<string, unknown>[]
    ).map(toPasskey);
  }

  insertPasskey(p: PasskeyRecord): void {
    this.sql(`${PASSKEY_INSERT} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(...passkeyValues(p));
  }

  bindPasskeyOwner(credentialId: string, owner: string, signature: string): boolean {
    return (
      this.sql(`UPDATE passkeys SET owner = ?, owner_signature = ? WHERE credential_id = ? AND removed_at IS NULL`).run(
        owner,
        signature,
        credentialId,
      ).changes === 1
    );
  }

  removePasskey(credentialId: string, by: string, signCount: number, now: number): "removed" | "missing" | "counter" {
    return this.undoable((): "removed" | "missing" | "counter" => {
      const advanced = this.sql(`UPDATE passkeys SET sign_count = @n WHERE ${ADVANCE_WHERE("@n", "@id")}`).run({
        n: signCount,
        id: by,
      });
      if (advanced.changes !== 1) return "counter";
      const removed = this.sql(`UPDATE passkeys SET removed_at = ? WHERE credential_id = ? AND removed_at IS NULL`).run(
        now,
        credentialId,
      );
      if (removed.changes !== 1) throw new CounterStale("missing");
      return "removed";
    });
  }

  /** One write transaction (under the write lock) that a CounterStale undoes, answering what it says. */
  private undoable<T>(fn: () => T): T | CounterStale["answer"] {
    try {
      return this.db.transaction(fn).immediate();
    } catch (e) {
      if (e instanceof CounterStale) return e.answer;
      throw e;
    }
  }

  // ---- The approval PIN's memory ----------------------------------------------------

  pinRecords(): PinRecord[] {
    const rows = this.sql(`SELECT value FROM meta WHERE key LIKE ? ORDER BY key`).all(PIN_KEYS) as Array<{
      value: string;
    }>;
    return rows.map((r) => toPinRecord(r.value)).sort((a, b) => a.setAt - b.setAt);
  }

  recordPin(r: PinRecord): void {
    this.sql(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run(
      pinKey(r.host, r.home),
      pinValue(r),
    );
  }

  forgetPin(host: string, home: string): void {
    this.sql(`DELETE FROM meta WHERE key = ?`).run(pinKey(host, home));
  }
}
