/**
 * `paid-actions-mcp set-pin [--clear]`: sets, changes or removes the approval PIN that the
 * terminal's `approve` and `unfreeze` and the console ask for before a decision takes effect.
 * Only at an interactive terminal, without echo; the current PIN is asked first when one is
 * set. The PIN is kept only as a salted scrypt hash (see engine/approvals/pin.ts), and the
 * journal remembers that it was set, so that its file gone refuses every decision (fail
 * closed) until a PIN is set here again. `--clear` with the current PIN is the one way back
 * to no PIN.
 */
import { hostname } from "node:os";
import { openJournal } from "../app/index.js";
import { clearPin, pinGate, pinPath, pinProblem, setPin, verifyPin } from "../engine/index.js";
import { interactive, NO_TTY, readLine, wrongPinDelay } from "./tty.js";

const out = (line = "") => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`paid-actions-mcp: ${line}\n`);

export const SET_PIN_NEEDS_TTY = `${NO_TTY("setting the approval PIN", false)}; nothing was changed`;

type Opened = Awaited<ReturnType<typeof openJournal>>;

export async function setPinCommand(env: NodeJS.ProcessEnv, opts: { clear?: boolean } = {}): Promise<number> {
  if (!interactive()) {
    err(opts.clear ? `${NO_TTY("removing the approval PIN", false)}; nothing was changed` : SET_PIN_NEEDS_TTY);
    return 2;
  }
  const j = await openJournal(env);
  try {
    return await (opts.clear ? clear(j) : change(j));
  } finally {
    await j.close();
  }
}

/**
 * Before a PIN is changed or removed: the current one, when this home's file holds one. True
 * to go on; false (said) when nothing may change.
 */
async function currentPinGiven(home: string, gate: ReturnType<typeof pinGate>): Promise<boolean> {
  if (gate.kind === "refuse" && gate.cause === "damaged") {
    err(`${gate.problem}; nothing was changed. Remove ${pinPath(home)} yourself, then set a PIN again`);
    return false;
  }
  if (gate.kind !== "ask") return true;
  const current = await readLine("Current approval PIN: ", { hidden: true });
  if (current === undefined) {
    err("no PIN given; nothing was changed");
    return false;
  }
  if (!(await verifyPin(home, current, { required: true }))) {
    await wrongPinDelay();
    err("wrong PIN; nothing was changed");
    return false;
  }
  return true;
}

async function change({ home, journal }: Opened): Promise<number> {
  const gate = pinGate(home, await journal.pinRecords());
  if (!(await currentPinGiven(home, gate))) return 1;
  // The file that held it is gone: the old PIN cannot be asked for, and a new one is what lets decisions through again.
  if (gate.kind === "refuse" && gate.cause === "missing")
    out(`${gate.problem}: every approval and unfreeze was refused. A new PIN replaces it.`);
  const pin = await readLine("New approval PIN (at least 4 characters): ", { hidden: true });
  if (pin === undefined) {
    err("no PIN given; nothing was changed");
    return 1;
  }
  const problem = pinProblem(pin);
  if (problem) {
    err(`${problem}; nothing was changed`);
    return 1;
  }
  const again = await readLine("The same PIN again: ", { hidden: true });
  if (again !== pin) {
    err("the two PINs differ; nothing was changed");
    return 1;
  }
  // Remembered before the file is written: stopped in between, decisions are refused (not let through without a PIN).
  await journal.recordPin({ host: hostname(), home, setAt: Date.now() });
  await setPin(home, pin);
  out(`The approval PIN is set (kept as a salted scrypt hash in ${pinPath(home)}, mode 0600).`);
  out(
    "From now on the terminal's `approve` and `unfreeze` and the console ask for it before a payment is approved or declined, or a freeze lifted. Should its file go missing, they refuse until a PIN is set again here.",
  );
  return 0;
}

async function clear({ home, journal }: Opened): Promise<number> {
  const gate = pinGate(home, await journal.pinRecords());
  if (gate.kind === "none") {
    out(`No approval PIN is set (in ${home}); nothing to remove.`);
    return 0;
  }
  if (gate.kind === "refuse" && gate.cause === "missing") {
    err(
      `${gate.problem}; nothing was changed. Only the current PIN removes a PIN: set a new one with \`paid-actions-mcp set-pin\`, then remove it with \`set-pin --clear\``,
    );
    return 1;
  }
  if (!(await currentPinGiven(home, gate))) return 1;
  // The file first: stopped in between, the journal still remembers a PIN and decisions are refused.
  await clearPin(home);
  const host = hostname();
  await journal.forgetPin(host, home);
  out(
    "The approval PIN is removed: approving a payment now needs only the typed confirmation (terminal) or the click (console).",
  );
  const others = (await journal.pinRecords()).filter((r) => r.host !== host || r.home !== home);
  if (others.length > 0)
    out(
      `A PIN set in another home on this journal (${others.map((r) => `${r.home} on ${r.host}`).join(", ")}) is still remembered: decisions taken from this home are refused until a PIN is set here again, or that one is removed where it was set.`,
    );
  return 0;
}
