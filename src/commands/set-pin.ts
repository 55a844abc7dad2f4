/**
 * `paid-actions-mcp set-pin [--clear]`: sets, changes or removes the approval PIN that the
 * terminal's `approve` and the console ask for before a payment is approved or declined.
 * Only at an interactive terminal, without echo; the current PIN is asked first when one is
 * set. The PIN is kept only as a salted scrypt hash (see engine/approvals/pin.ts).
 */
import {
  clearPin,
  loadConfig,
  pinFileProblem,
  pinIsSet,
  pinPath,
  pinProblem,
  setPin,
  verifyPin,
} from "../engine/index.js";
import { interactive, NO_TTY, readLine, wrongPinDelay } from "./tty.js";

const out = (line = "") => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`paid-actions-mcp: ${line}\n`);

export const SET_PIN_NEEDS_TTY = `${NO_TTY("setting the approval PIN", false)}; nothing was changed`;

export async function setPinCommand(env: NodeJS.ProcessEnv, opts: { clear?: boolean } = {}): Promise<number> {
  if (!interactive()) {
    err(opts.clear ? `${NO_TTY("removing the approval PIN", false)}; nothing was changed` : SET_PIN_NEEDS_TTY);
    return 2;
  }
  const c = loadConfig(env);
  const home = c.ok ? c.config.home : c.home;
  if (pinIsSet(home)) {
    const problem = pinFileProblem(home);
    if (problem) {
      err(`${problem}; nothing was changed. Remove ${pinPath(home)} yourself, then set a PIN again`);
      return 1;
    }
    const current = await readLine("Current approval PIN: ", { hidden: true });
    if (current === undefined) {
      err("no PIN given; nothing was changed");
      return 1;
    }
    if (!(await verifyPin(home, current))) {
      await wrongPinDelay();
      err("wrong PIN; nothing was changed");
      return 1;
    }
  } else if (opts.clear) {
    out(`No approval PIN is set (in ${home}); nothing to remove.`);
    return 0;
  }
  if (opts.clear) {
    await clearPin(home);
    out(
      "The approval PIN is removed: approving a payment now needs only the typed confirmation (terminal) or the click (console).",
    );
    return 0;
  }
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
  await setPin(home, pin);
  out(`The approval PIN is set (kept as a salted scrypt hash in ${pinPath(home)}, mode 0600).`);
  out("From now on the terminal's `approve` and the console ask for it before a payment is approved or declined.");
  return 0;
}
