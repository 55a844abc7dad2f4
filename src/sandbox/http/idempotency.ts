/**
 * Stripe-style idempotency for state-changing requests: scope API key + method + path,
 * fingerprint method, path, canonical body and X-Quote-Id; a completed outcome is replayed,
 * a running one is 409, a different request with the same key is 422.
 */
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type Database from "better-sqlite3";
import { canonicalJson } from "../../domain/wire.js";
import { ApiError, invalidRequest } from "./errors.js";
import { errorReply, type Reply } from "./io.js";
import { inTransaction, statement } from "../db.js";

const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;
const IDEMPOTENCY_TTL_MS = 48 * 3_600_000;

/** What idempotency needs of a request. */
export interface IdempotentRequest {
  requestId: string;
  tenant: string;
  method: string;
  path: string;
  req: IncomingMessage;
  body: unknown;
}

export interface IdempotencyStore {
  db: Database.Database;
  now: () => number;
  log: (line: string) => void;
}

interface IdemRow {
  fingerprint: string;
  state: "running" | "done";
  status: number | null;
  headers: string | null;
  body: string | null;
}

/**
 * Outcomes a retry with the same key must run again: 5xx, the 402 pay-and-retry branch,
 * and a transient idempotency_in_progress (another request was settling the same payment).
 */
function storable(reply: Reply): boolean {
  const code = (reply.body as { error?: { code?: unknown } } | undefined)?.error?.code;
  return reply.status < 500 && reply.status !== 402 && code !== "idempotency_in_progress";
}

/** Where a key's row lives: API key (tenant) + key + method + path. */
interface IdemScope {
  tenant: string;
  key: string;
  method: string;
  path: string;
}

/** The Idempotency-Key header, checked; undefined when the request has none. */
function idempotencyKey(ctx: IdempotentRequest): string | undefined {
  const key = ctx.req.headers["idempotency-key"];
  if (key === undefined) return undefined;
  if (typeof key !== "string" || !IDEMPOTENCY_KEY.test(key)) {
    throw invalidRequest("Idempotency-Key must be 1-255 printable ASCII characters", [
      { path: "header.Idempotency-Key", message: "1-255 printable ASCII characters" },
    ]);
  }
  return key;
}

/** What makes two requests the same request: method, path, canonical body and X-Quote-Id. */
function fingerprintOf(ctx: IdempotentRequest): string {
  const quoteHeader = ctx.req.headers["x-quote-id"];
  return createHash("sha256")
    .update(canonicalJson({ method: ctx.method, path: ctx.path, body: ctx.body ?? null, quote: quoteHeader ?? null }))
    .digest("hex");
}

/**
 * Check and claim in one synchronous transaction, before the first await: answers the live
 * row another request left under this key, or claims the key ('running') and answers
 * undefined. An expired row is replaced, and so is a 'running' row of the same request that
 * no request of this process is running (`runningHere` false): its owner died.
 */
function claimKey(o: IdempotencyStore, id: IdemScope, fingerprint: string, runningHere: boolean): IdemRow | undefined {
  return inTransaction(o.db, (): IdemRow | undefined => {
    const row = statement(
      o.db,
      `SELECT fingerprint, state, status, headers, body, created_at FROM idempotency WHERE tenant = @tenant AND key = @key AND method = @method AND path = @path`,
    ).get(id) as (IdemRow & { created_at: number }) | undefined;
    const stale = row !== undefined && row.state === "running" && !runningHere && row.fingerprint === fingerprint;
    if (row && !stale && row.created_at > o.now() - IDEMPOTENCY_TTL_MS) return row;
    if (row)
      statement(
        o.db,
        `DELETE FROM idempotency WHERE tenant = @tenant AND key = @key AND method = @method AND path = @path`,
      ).run(id);
    statement(
      o.db,
      `INSERT INTO idempotency (tenant, key, method, path, fingerprint, state, created_at) VALUES (@tenant, @key, @method, @path, @fingerprint, 'running', @now)`,
    ).run({ ...id, fingerprint, now: o.now() });
    return undefined;
  });
}

/** A key already taken: the stored outcome replayed, or 422 (another request) / 409 (still running). */
function answerFromClaim(claim: IdemRow, fingerprint: string): Reply {
  if (claim.fingerprint !== fingerprint) {
    throw new ApiError(
      422,
      "idempotency_key_reused",
      "this Idempotency-Key was used with a different request; use a new key for a new intent",
    );
  }
  if (claim.state === "running") {
    throw new ApiError(
      409,
      "idempotency_in_progress",
      "a request with this Idempotency-Key is still running; retry shortly",
      {},
      { "Retry-After": "1" },
    );
  }
  return {
    status: claim.status!,
    body: JSON.parse(claim.body!) as unknown,
    headers: { ...(JSON.parse(claim.headers ?? "{}") as Record<string, string>), "Idempotent-Replayed": "true" },
  };
}

/** Stores a replayable outcome under the key, or frees the key for one a retry must run again. */
function recordOutcome(o: IdempotencyStore, id: IdemScope, reply: Reply): void {
  if (storable(reply)) {
    statement(
      o.db,
      `UPDATE idempotency SET state = 'done', status = @status, headers = @headers, body = @body WHERE tenant = @tenant AND key = @key AND method = @method AND path = @path`,
    ).run({
      ...id,
      status: reply.status,
      headers: JSON.stringify(reply.headers ?? {}),
      body: JSON.stringify(reply.body),
    });
  } else {
    statement(
      o.db,
      `DELETE FROM idempotency WHERE tenant = @tenant AND key = @key AND method = @method AND path = @path`,
    ).run(id);
  }
}

/**
 * `inflight` holds the keys this process is running right now. A 'running' row that is not
 * in it belongs to a request that died (a crash, or a write that failed while storing its
 * outcome): the same request may take it over.
 */
export async function withIdempotency(
  o: IdempotencyStore,
  ctx: IdempotentRequest,
  inflight: Set<string>,
  run: () => Reply | Promise<Reply>,
): Promise<Reply> {
  const key = idempotencyKey(ctx);
  if (key === undefined) return run();
  const fingerprint = fingerprintOf(ctx);
  const id: IdemScope = { tenant: ctx.tenant, key, method: ctx.method, path: ctx.path };
  const flightKey = `${ctx.tenant}\n${key}\n${ctx.method}\n${ctx.path}`;

  const claim = claimKey(o, id, fingerprint, inflight.has(flightKey));
  if (claim) return answerFromClaim(claim, fingerprint);

  let reply: Reply;
  inflight.add(flightKey);
  try {
    reply = await run();
  } catch (e) {
    reply = errorReply(e, ctx.requestId, o.log);
  } finally {
    inflight.delete(flightKey);
  }
  try {
    recordOutcome(o, id, reply);
  } catch (e) {
    // The row stays 'running' without an owner: a retry with the same key takes it over.
    o.log(`could not record the outcome of ${ctx.method} ${ctx.path} (key kept for a retry): ${(e as Error).message}`);
  }
  return reply;
}

/** At start: requests that were running when the process died never finished; forget them. */
export function clearUnfinishedIdempotency(db: Database.Database, now: number): void {
  statement(db, `DELETE FROM idempotency WHERE state = 'running'`).run();
  statement(db, `DELETE FROM idempotency WHERE created_at < ?`).run(now - IDEMPOTENCY_TTL_MS);
}
