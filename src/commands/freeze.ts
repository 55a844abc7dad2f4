/**
 * `paid-actions-mcp freeze [--reason TEXT]` and `paid-actions-mcp unfreeze`: a kill switch
 * for every server sharing the journal. Freezing works anywhere, an agent's shell included:
 * stopping is always safe. Unfreezing lets money move again, so it is a person's decision,
 * taken as an approval is: at an interactive terminal only, with the approval PIN when one
 * is set. Neither output hands a shell agent the command that lifts the freeze.
 */
import { hostname } from "node:os";
import { openJournal } from "../app/index.js";
import type { Freeze } from "../engine/index.js";
import { safe } from "./approve.js";
import { askPin, interactive, NO_TTY } from "./tty.js";

const out = (line = "") => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`paid-actions-mcp: ${line}\n`);

/** The exact refusal when there is no person at a terminal. */
export const UNFREEZE_NEEDS_TTY = `${NO_TTY("unfreezing payments", false)}; nothing was changed`;

/** The longest reason kept: a line a person reads, not a document. */
export const MAX_REASON = 200;

/** Why a reason cannot be kept, or undefined when it can. */
export function reasonProblem(reason: string): string | undefined {
  if (reason.trim() === "") return "--reason must say something (or leave it out)";
  if ([...reason].length > MAX_REASON) return `--reason must be at most ${MAX_REASON} characters`;
  // Shown in terminals, the console and the agent's refusal: one plain line.
  // eslint-disable-next-line no-control-regex -- finding control characters is the point: they are refused
  if (/[\u0000-\u001f\u007f-\u009f]/.test(reason)) return "--reason must be one line without control characters";
  return undefined;
}

/** A freeze as a person reads it (text anyone could have chosen is shown escaped). */
export function describeFreeze(f: Freeze): string {
  return `since ${new Date(f.since).toISOString()}, by ${safe(f.by)}, ${f.reason === null ? "no reason given" : `reason: "${safe(f.reason)}"`}`;
}

export async function freezeCommand(env: NodeJS.ProcessEnv, opts: { reason?: string } = {}): Promise<number> {
  const j = await openJournal(env);
  try {
    const by = interactive() ? "terminal" : `${hostname()}/${process.pid}`;
    const { freeze, already } = await j.journal.freeze({ reason: opts.reason?.trim() ?? null, since: Date.now(), by });
    out(
      already
        ? `Payments were already frozen (${describeFreeze(freeze)}); the freeze stays as it was.`
        : `Payments are frozen (${describeFreeze(freeze)}).`,
    );
    out(
      `No server on this journal (${j.journal.location}) signs a new payment until a person unfreezes payments at a terminal.`,
    );
    out("Purchases whose payment already left are still followed until the chain says where the money went.");
    if (interactive()) out("To lift the freeze, a person runs `paid-actions-mcp unfreeze` at a terminal.");
    return 0;
  } finally {
    await j.close();
  }
}

export async function unfreezeCommand(env: NodeJS.ProcessEnv): Promise<number> {
  if (!interactive()) {
    err(UNFREEZE_NEEDS_TTY);
    return 2;
  }
  const j = await openJournal(env);
  try {
    const freeze = await j.journal.frozen();
    if (!freeze) {
      out(`Payments are not frozen (journal ${j.journal.location}); nothing to do.`);
      return 0;
    }
    out(`Payments are frozen (${describeFreeze(freeze)}) for every server on the journal ${j.journal.location}.`);
    if (!(await askPin(j.home, await j.journal.pinRecords(), "payments stay frozen", err))) return 1;
    const lifted = await j.journal.unfreeze();
    out(
      lifted
        ? "Payments are unfrozen: the servers on this journal pay again, within the limits."
        : "Payments were unfrozen meanwhile; nothing to do.",
    );
    return 0;
  } finally {
    await j.close();
  }
}
