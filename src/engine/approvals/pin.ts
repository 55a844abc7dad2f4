/**
 * The optional approval PIN: when set, a person must give it to approve or decline a payment
 * in the terminal or the console, or to lift a freeze. It is kept only as a salted scrypt
 * hash, in a file of its own in the home dir (mode 0600), written atomically; the PIN itself
 * is never stored, logged or returned. An agent that can read the home dir can read the
 * hash, so the cost parameters are real ones (OWASP's scrypt guidance), not test-sized.
 *
 * The journal remembers that a PIN was set (journal/pin-records.ts), and `pinGate` fails
 * closed on it: once set, a PIN file gone (moved aside, deleted) refuses every decision
 * until a PIN is set again, instead of reading as "no PIN".
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import type { PinRecord } from "../journal/port.js";

/** OWASP's equivalent of N=2^17, r=8, p=1 at a quarter of the memory: N=2^15, r=8, p=3. */
const PARAMS = { N: 2 ** 15, r: 8, p: 3 } as const;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
/** Shortest and longest PIN accepted (characters / UTF-8 bytes). */
export const PIN_MIN_LENGTH = 4;
const PIN_MAX_BYTES = 256;

interface PinFile {
  v: 1;
  salt: string;
  hash: string;
  N: number;
  r: number;
  p: number;
}

/** Where the PIN's hash lives: `<home>/approval-pin`. */
export function pinPath(home: string): string {
  return join(home, "approval-pin");
}

export function pinIsSet(home: string): boolean {
  return existsSync(pinPath(home));
}

/** Why a PIN is not acceptable, or undefined when it is. */
export function pinProblem(pin: string): string | undefined {
  if ([...pin].length < PIN_MIN_LENGTH) return `a PIN needs at least ${PIN_MIN_LENGTH} characters`;
  if (Buffer.byteLength(pin) > PIN_MAX_BYTES) return `a PIN may have at most ${PIN_MAX_BYTES} bytes`;
  return undefined;
}

function derive(pin: string, salt: Buffer, o: { N: number; r: number; p: number }): Promise<Buffer> {
  // Node's default maxmem (32 MiB) is exactly 128·N·r at N=2^15, r=8: leave room.
  const options: ScryptOptions = { N: o.N, r: o.r, p: o.p, maxmem: 256 * o.N * o.r + 1024 * 1024 };
  return new Promise((resolve, reject) =>
    scrypt(pin.normalize("NFC"), salt, KEY_BYTES, options, (e, key) => (e ? reject(e) : resolve(key))),
  );
}

/** Reads the stored hash; undefined when no PIN is set; throws when the file is damaged. */
function readPinFile(home: string): PinFile | undefined {
  let text: string;
  try {
    text = readFileSync(pinPath(home), "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  const f = JSON.parse(text) as Partial<PinFile>;
  const sane = (n: unknown, lo: number, hi: number) =>
    typeof n === "number" && Number.isInteger(n) && n >= lo && n <= hi;
  // Bounds keep a tampered file from asking for gigabytes of memory.
  if (
    f.v !== 1 ||
    typeof f.salt !== "string" ||
    typeof f.hash !== "string" ||
    !sane(f.N, 2 ** 10, 2 ** 20) ||
    (f.N! & (f.N! - 1)) !== 0 ||
    !sane(f.r, 1, 32) ||
    !sane(f.p, 1, 16)
  ) {
    throw new Error(`the approval PIN file ${pinPath(home)} is damaged`);
  }
  return f as PinFile;
}

/**
 * Why the PIN file cannot be used (damaged or unreadable), or undefined when it is fine or
 * absent. A damaged file refuses every PIN (fail closed); removing the file clears the PIN.
 */
export function pinFileProblem(home: string): string | undefined {
  try {
    readPinFile(home);
    return undefined;
  } catch (e) {
    return e instanceof SyntaxError ? `the approval PIN file ${pinPath(home)} is damaged` : (e as Error).message;
  }
}

function writeAtomic(home: string, text: string): void {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const path = pinPath(home);
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  const fd = openSync(tmp, "wx", 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** Sets (or replaces) the PIN: a fresh salt each time, stored as `{v,salt,hash,N,r,p}` with mode 0600. */
export async function setPin(home: string, pin: string): Promise<void> {
  const problem = pinProblem(pin);
  if (problem) throw new Error(problem);
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(pin, salt, PARAMS);
  const file: PinFile = { v: 1, salt: salt.toString("base64"), hash: hash.toString("base64"), ...PARAMS };
  writeAtomic(home, `${JSON.stringify(file)}\n`);
}

/**
 * Whether `pin` is the approval PIN: true when no PIN is set (false instead with `required`,
 * for a decision `pinGate` said must ask: a file gone since then accepts nothing); false for
 * a missing PIN when one is set, and for every PIN when the file is damaged (fail closed).
 * Constant-time compare.
 */
export async function verifyPin(
  home: string,
  pin: string | undefined,
  o: { required?: boolean } = {},
): Promise<boolean> {
  let f: PinFile | undefined;
  try {
    f = readPinFile(home);
  } catch {
    return false;
  }
  if (!f) return o.required !== true;
  if (typeof pin !== "string" || pin.length === 0 || Buffer.byteLength(pin) > PIN_MAX_BYTES) return false;
  const want = Buffer.from(f.hash, "base64");
  if (want.length !== KEY_BYTES) return false;
  const got = await derive(pin, Buffer.from(f.salt, "base64"), f);
  return timingSafeEqual(got, want);
}

/** Removes the PIN: approvals then need only the typed confirmation (or the console's click). */
export async function clearPin(home: string): Promise<void> {
  rmSync(pinPath(home), { force: true });
}

/**
 * What a person's decision (approve, decline, unfreeze) must do about the PIN in this home:
 * nothing (no PIN, and the journal remembers none), ask for it (its file is sound), or be
 * refused — the file is damaged, or it is gone while the journal remembers a PIN set (here,
 * or in another home sharing the journal) and not cleared with `set-pin --clear`.
 */
export type PinGate =
  { kind: "none" } | { kind: "ask" } | { kind: "refuse"; cause: "damaged" | "missing"; problem: string };

/** The gate of a home, given the journal's memory of PINs (JournalStore.pinRecords()). */
export function pinGate(home: string, recorded: readonly PinRecord[]): PinGate {
  if (pinIsSet(home)) {
    const problem = pinFileProblem(home);
    return problem ? { kind: "refuse", cause: "damaged", problem } : { kind: "ask" };
  }
  const r = recorded[0];
  if (!r) return { kind: "none" };
  const where = `in ${r.home} on ${r.host}, ${new Date(r.setAt).toISOString()}${recorded.length > 1 ? `, and ${recorded.length - 1} more` : ""}`;
  return {
    kind: "refuse",
    cause: "missing",
    problem: `an approval PIN was set (${where}) and never removed with the current PIN, but this home has no PIN file (${pinPath(home)}), so no PIN can be checked`,
  };
}
