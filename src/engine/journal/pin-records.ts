/**
 * How both stores keep the approval PIN's memory: one row of the journal's `meta` table per
 * host and home, keyed `approval-pin:["<host>","<home>"]`, its value the record as JSON. The
 * `meta` table is in every schema since the first, so remembering a PIN needs no migration,
 * and a journal written here still opens in a build that does not know of it.
 */
import type { PinRecord } from "./port.js";

const PREFIX = "approval-pin:";

/** A LIKE pattern for every record's key (the prefix holds neither `%` nor `_`). */
export const PIN_KEYS = `${PREFIX}%`;

export function pinKey(host: string, home: string): string {
  return `${PREFIX}${JSON.stringify([host, home])}`;
}

export function pinValue(r: PinRecord): string {
  return JSON.stringify({ host: r.host, home: r.home, setAt: r.setAt });
}

/** A record as stored; throws when it is not one (the journal is damaged: never read as "no PIN"). */
export function toPinRecord(value: string): PinRecord {
  const v = JSON.parse(value) as Partial<PinRecord>;
  if (typeof v.host !== "string" || typeof v.home !== "string" || typeof v.setAt !== "number")
    throw new Error(`the journal's record of an approval PIN is damaged: ${value.slice(0, 200)}`);
  return { host: v.host, home: v.home, setAt: v.setAt };
}
