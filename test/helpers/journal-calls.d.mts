/** Types of journal-calls.mjs: the journal's port methods a piece of work calls, counted by name. */
import type { JournalStore } from "../../src/engine/journal/port.js";

/** Every method of the JournalStore port, read from its declaration. */
export function portMethods(): string[];
/** The methods that write, each one transaction (a commit that waits for the disk, but for RELAXED). */
export const WRITES: ReadonlySet<string>;
/** Committed without an fsync of their own (the next synced commit carries them to the disk). */
export const RELAXED: ReadonlySet<string>;
export const NOT_DURING_A_CALL: ReadonlySet<string>;
/** Records every port method called on the store from now on (by name, in order; nested calls not counted). */
export function countCalls(journal: JournalStore): string[];
