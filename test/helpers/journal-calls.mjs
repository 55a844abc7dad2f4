// The journal's port methods a piece of work calls, counted by name: how test/engine/fast-path.test.ts
// and the benchmark (test/bench/commits.mjs) count the commits of a paid call, one classification for both.
import { readFileSync } from "node:fs";

/** Every method of the JournalStore port, read from its declaration: a new one must be classified below. */
export function portMethods() {
  const port = readFileSync(new URL("../../src/engine/journal/port.ts", import.meta.url), "utf8");
  const block = port.slice(port.indexOf("export interface JournalStore {"));
  const body = block.slice(0, block.indexOf("\n}\n"));
  return [...body.matchAll(/^ {2}([a-zA-Z]+)(?:<[^(]*>)?\(/gm)].map((m) => m[1]);
}

/** The methods that write, each one transaction (a commit that waits for the disk, but for RELAXED). */
export const WRITES = new Set([
  "insertIntent",
  "update",
  "reschedule",
  "claim",
  "renew",
  "release",
  "reserve",
  "recordSigned",
  "updatePayment",
  "insertApproval",
  "decideApproval",
  "approveWithAssertion",
  "insertPasskey",
  "bindPasskeyOwner",
  "removePasskey",
  "indexTranscript",
  "saveResponseBody",
  "saveSellerWord",
  "saveCatalog",
  "freeze",
  "unfreeze",
]);
/** Committed without an fsync of their own (the next synced commit carries them to the disk). */
export const RELAXED = new Set(["indexTranscript", "saveResponseBody", "saveSellerWord"]);
export const NOT_DURING_A_CALL = new Set(["close"]);

/**
 * Records every port method called on the store from now on (by name, in order). A call the
 * store makes of its own methods inside one (SQLite's are synchronous: the usage a
 * reservation is decided on, say) is part of that call's transaction, and is not counted.
 */
export function countCalls(journal) {
  const calls = [];
  let depth = 0;
  for (const name of portMethods()) {
    const original = journal[name].bind(journal);
    journal[name] = (...args) => {
      if (depth === 0) calls.push(name);
      depth++;
      try {
        return original(...args);
      } finally {
        depth--;
      }
    };
  }
  return calls;
}
