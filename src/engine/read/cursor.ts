/**
 * The read model's page cursors: an opaque (createdAt, intentId) the next page starts
 * before, for every list the journal pages newest first.
 */
import { paidError } from "../errors.js";

/** The (createdAt, intentId) a cursor of this server names; none: from the newest. */
export function readCursor(cursor: string | undefined): { before: number; beforeId: string } {
  if (!cursor) return { before: Number.MAX_SAFE_INTEGER, beforeId: "~" };
  const m = /^(\d{1,16}):(int_[A-Za-z0-9]{1,40})$/.exec(Buffer.from(cursor, "base64url").toString());
  if (!m) throw paidError("invalid_input", { problem: "cursor", field: "cursor" });
  return { before: Number(m[1]), beforeId: m[2]! };
}

/** A page of `limit` from rows read with `limit + 1`, and the cursor of the next (null: none older). */
export function pageOf<T extends { createdAt: number; intentId: string }>(
  rows: readonly T[],
  limit: number,
): { page: T[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    page,
    nextCursor:
      rows.length > limit && last ? Buffer.from(`${last.createdAt}:${last.intentId}`).toString("base64url") : null,
  };
}
