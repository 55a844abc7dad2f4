/**
 * The PostgreSQL journal's pool, and the records it keeps beside the intents: approvals, the
 * index of tool-call transcripts, the catalog cache, the freeze, the memory of approval
 * PINs (pin-records.ts) and passkeys (passkey-rows.ts). pg-intents.ts builds the intents on it, and postgres.ts the store
 * with the budget and the payments.
 *
 * The freeze is taken under an exclusive advisory lock; recording a signed proof takes the
 * same lock shared and reads the freeze after it (postgres.ts): a freeze waits for the proofs
 * being recorded at that moment, and every proof recorded after it sees it and is refused.
 */
import type pg from "pg";
import type { Approval, ApprovalStatus } from "../model/types.js";
import { changed, LOCK, pgValue, rows, transaction, type Db } from "./pg-sql.js";
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

/** Thrown inside a transaction to roll it back: what it carries is the transaction's answer. */
class Undo extends Error {
  constructor(readonly answer: "counter" | "missing") {
    super(answer);
  }
}

/** The answer an Undo carries; any other failure as it was. */
function undone(e: unknown): "counter" | "missing" {
  if (e instanceof Undo) return e.answer;
  throw e;
}

export abstract class PgRecords {
  protected constructor(protected readonly pool: pg.Pool) {}

  // ---- Approvals ------------------------------------------------------------------

  async insertApproval(a: Approval): Promise<void> {
    await this.pool.query(
      `INSERT INTO approvals (approval_id, intent_id, quote_id, action, amount, payee, expires_at, status, created_at, decided_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        a.approvalId,
        a.intentId,
        a.quoteId,
        a.action,
        a.amount.toString(),
        a.payee,
        a.expiresAt,
        a.status,
        a.createdAt,
        a.decidedAt,
      ].map(pgValue),
    );
  }

  async approval(approvalId: string): Promise<Approval | undefined> {
    const [row] = await rows(this.pool, `SELECT * FROM approvals WHERE approval_id = $1`, [approvalId]);
    return row ? toApproval(row) : undefined;
  }

  async pendingApprovals(now: number): Promise<Approval[]> {
    return (
      await rows(
        this.pool,
        `SELECT * FROM approvals WHERE status = 'pending' AND expires_at > $1 ORDER BY created_at`,
        [now],
      )
    ).map(toApproval);
  }

  /** One UPDATE guarded by the status it expects: of servers deciding at once, one wins. */
  decideApproval(approvalId: string, from: ApprovalStatus, to: ApprovalStatus, now: number): Promise<boolean> {
    return changed(
      this.pool,
      `UPDATE approvals SET status = $1, decided_at = $2 WHERE approval_id = $3 AND status = $4`,
      [to, now, approvalId, from],
    );
  }

  /** The approval's compare-and-set and the counter's in one transaction; a counter that does not advance undoes both. */
  approveWithAssertion(
    approvalId: string,
    now: number,
    assertion: string,
    credentialId: string,
    signCount: number,
  ): Promise<AssertedApproval> {
    return transaction(this.pool, async (c): Promise<AssertedApproval> => {
      const decided = await changed(
        c,
        `UPDATE approvals SET status = 'approved', decided_at = $1, assertion = $2 WHERE approval_id = $3 AND status = 'pending'`,
        [now, assertion, approvalId],
      );
      if (!decided) return "changed";
      if (
        await changed(c, `UPDATE passkeys SET sign_count = $1 WHERE ${ADVANCE_WHERE("$1", "$2")}`, [
          signCount,
          credentialId,
        ])
      )
        return "approved";
      throw new Undo("counter");
    }).catch((e: unknown) => (undone(e), "counter" as const));
  }

  async approvalAssertion(approvalId: string): Promise<string | undefined> {
    const [row] = await rows(this.pool, `SELECT assertion FROM approvals WHERE approval_id = $1`, [approvalId]);
    return (row?.assertion as string | null | undefined) ?? undefined;
  }

  // ---- Transcripts' index ----------------------------------------------------------

  /** The index row is no money: committed without waiting for the WAL to reach the disk (a server crash could drop it). */
  async indexTranscript(r: TranscriptRecord): Promise<void> {
    await this.relaxed(
      `INSERT INTO transcripts (call_id, created_at, host, home) VALUES ($1, $2, $3, $4) ON CONFLICT (call_id) DO NOTHING`,
      [r.callId, r.createdAt, r.host, r.home].map(pgValue),
    );
  }

  async transcriptIndex(limit: number): Promise<TranscriptRecord[]> {
    const found = await rows(
      this.pool,
      `SELECT call_id, created_at, host, home FROM transcripts ORDER BY created_at DESC, call_id DESC LIMIT $1`,
      [limit],
    );
    return found.map((r) => ({
      callId: String(r.call_id),
      createdAt: Number(r.created_at),
      host: String(r.host),
      home: String(r.home),
    }));
  }

  // ---- Catalog cache --------------------------------------------------------------

  /**
   * Replaces a service's cached catalog. Under a lock: two servers rewriting it at once
   * would otherwise each delete what it saw and both insert, and the second would collide.
   */
  async saveCatalog(service: string, details: Array<{ name: string; detail: unknown }>, now: number): Promise<void> {
    await transaction(this.pool, async (c) => {
      await c.query("SELECT pg_advisory_xact_lock($1)", [LOCK.catalog]);
      await c.query(`DELETE FROM catalog WHERE service = $1`, [service]);
      await c.query(
        `INSERT INTO catalog (service, name, detail, fetched_at) SELECT $1::text, u.name, u.detail, $4::bigint FROM unnest($2::text[], $3::text[]) AS u(name, detail)`,
        [service, details.map((d) => d.name), details.map((d) => JSON.stringify(d.detail)), now],
      );
    });
  }

  /** Committed without waiting for the disk: the outcome's synchronous commit that follows flushes the WAL past it. */
  async saveResponseBody(intentId: string, body: Uint8Array, now: number): Promise<void> {
    await this.relaxed(
      `INSERT INTO response_bodies (intent_id, body, stored_at) VALUES ($1, $2, $3)
       ON CONFLICT (intent_id) DO UPDATE SET body = EXCLUDED.body, stored_at = EXCLUDED.stored_at`,
      [intentId, Buffer.from(body.buffer, body.byteOffset, body.byteLength), now],
    );
  }

  /** One write committed without waiting for the WAL to reach the disk; the next synchronous commit flushes past it. */
  private async relaxed(sql: string, params: unknown[]): Promise<void> {
    await transaction(this.pool, async (c) => {
      await c.query("SET LOCAL synchronous_commit = off");
      await c.query(sql, params);
    });
  }

  async responseBody(intentId: string): Promise<Uint8Array | undefined> {
    const [row] = await rows(this.pool, `SELECT body FROM response_bodies WHERE intent_id = $1`, [intentId]);
    return row ? new Uint8Array(row.body as Buffer) : undefined;
  }

  // ---- The seller's signed word ---------------------------------------------------

  /** Evidence, not money: committed without waiting for the disk, as in SQLite (sqlite-records.ts). */
  async saveSellerWord(intentId: string, part: SellerWordPart, json: string | null, now: number): Promise<void> {
    // `part` is one of two column names, never a caller's text.
    const column = part === "offer" ? "offer" : "receipt";
    await this.relaxed(
      `INSERT INTO seller_words (intent_id, ${column}, updated_at) VALUES ($1, $2, $3)
       ON CONFLICT (intent_id) DO UPDATE SET ${column} = EXCLUDED.${column}, updated_at = EXCLUDED.updated_at`,
      [intentId, json, now],
    );
  }

  async sellerWord(intentId: string): Promise<SellerWordRecord | undefined> {
    const [row] = await rows(this.pool, `SELECT offer, receipt, updated_at FROM seller_words WHERE intent_id = $1`, [
      intentId,
    ]);
    if (!row) return undefined;
    const text = (v: unknown) => (typeof v === "string" ? v : null);
    return { offer: text(row.offer), receipt: text(row.receipt), updatedAt: Number(row.updated_at) };
  }

  async catalog(service: string): Promise<CatalogRecord[]> {
    const found = await rows(
      this.pool,
      `SELECT name, detail, fetched_at FROM catalog WHERE service = $1 ORDER BY name`,
      [service],
    );
    return found.map((r) => ({
      name: r.name as string,
      detail: JSON.parse(r.detail as string) as unknown,
      fetchedAt: r.fetched_at as number,
    }));
  }

  // ---- The freeze -----------------------------------------------------------------

  async frozen(): Promise<Freeze | undefined> {
    const [row] = await rows(this.pool, `SELECT reason, frozen_at, frozen_by FROM payment_freeze`);
    return row ? toFreeze(row) : undefined;
  }

  /** The freeze, read inside a transaction that records a proof, after the lock a freeze waits on. */
  protected async frozenUnderLock(c: Db): Promise<Freeze | undefined> {
    await c.query("SELECT pg_advisory_xact_lock_shared($1)", [LOCK.freeze]);
    const [row] = await rows(c, `SELECT reason, frozen_at, frozen_by FROM payment_freeze`);
    return row ? toFreeze(row) : undefined;
  }

  freeze(f: Freeze): Promise<{ freeze: Freeze; already: boolean }> {
    return transaction(this.pool, async (c) => {
      await c.query("SELECT pg_advisory_xact_lock($1)", [LOCK.freeze]);
      const [earlier] = await rows(c, `SELECT reason, frozen_at, frozen_by FROM payment_freeze`);
      if (earlier) return { freeze: toFreeze(earlier), already: true };
      await c.query(
        `INSERT INTO payment_freeze (reason, frozen_at, frozen_by) VALUES ($1, $2, $3)`,
        [f.reason, f.since, f.by].map(pgValue),
      );
      return { freeze: f, already: false };
    });
  }

  async unfreeze(): Promise<Freeze | undefined> {
    const [lifted] = await rows(this.pool, `DELETE FROM payment_freeze RETURNING reason, frozen_at, frozen_by`);
    return lifted ? toFreeze(lifted) : undefined;
  }

  // ---- Passkeys ------------------------------------------------------------------

  async passkeys(): Promise<PasskeyRecord[]> {
    return (await rows(this.pool, `SELECT * FROM passkeys ORDER BY created_at, credential_id`)).map(toPasskey);
  }

  async insertPasskey(p: PasskeyRecord): Promise<void> {
    await this.pool.query(
      `${PASSKEY_INSERT} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      passkeyValues(p).map(pgValue),
    );
  }

  bindPasskeyOwner(credentialId: string, owner: string, signature: string): Promise<boolean> {
    return changed(
      this.pool,
      `UPDATE passkeys SET owner = $1, owner_signature = $2 WHERE credential_id = $3 AND removed_at IS NULL`,
      [owner, signature, credentialId],
    );
  }

  removePasskey(
    credentialId: string,
    by: string,
    signCount: number,
    now: number,
  ): Promise<"removed" | "missing" | "counter"> {
    return transaction(this.pool, async (c): Promise<"removed" | "missing" | "counter"> => {
      if (
        !(await changed(c, `UPDATE passkeys SET sign_count = $1 WHERE ${ADVANCE_WHERE("$1", "$2")}`, [signCount, by]))
      )
        return "counter";
      if (
        await changed(c, `UPDATE passkeys SET removed_at = $1 WHERE credential_id = $2 AND removed_at IS NULL`, [
          now,
          credentialId,
        ])
      )
        return "removed";
      throw new Undo("missing");
    }).catch(undone);
  }

  // ---- The approval PIN's memory ----------------------------------------------------

  async pinRecords(): Promise<PinRecord[]> {
    const found = await rows(this.pool, `SELECT value FROM meta WHERE key LIKE $1 ORDER BY key`, [PIN_KEYS]);
    return found.map((r) => toPinRecord(r.value as string)).sort((a, b) => a.setAt - b.setAt);
  }

  async recordPin(r: PinRecord): Promise<void> {
    await this.pool.query(
      `INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
      [pinKey(r.host, r.home), pinValue(r)],
    );
  }

  async forgetPin(host: string, home: string): Promise<void> {
    await this.pool.query(`DELETE FROM meta WHERE key = $1`, [pinKey(host, home)]);
  }
}
