/**
 * `paid-actions-mcp set-pin`, the built CLI: only at a terminal (a pseudo-terminal from
 * util-linux `script` here), without echo, the current PIN first when one is set, and the
 * PIN kept only as a salted scrypt hash with mode 0600 in PAID_ACTIONS_HOME.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pinIsSet, pinPath, verifyPin } from "../../src/engine/approvals/pin.js";
import { runCli } from "../helpers/mcp.js";
import { ensureBuilt } from "../helpers/process.js";
import { runInPty } from "./pty.js";

const homes: string[] = [];
function home(): { home: string; env: Record<string, string> } {
  const h = mkdtempSync(join(tmpdir(), "pam-set-pin-"));
  homes.push(h);
  return { home: h, env: { PATH: process.env.PATH ?? "", PAID_ACTIONS_HOME: h } };
}
beforeAll(() => ensureBuilt(), 120_000);
afterAll(() => homes.forEach((h) => rmSync(h, { recursive: true, force: true })));

/** Runs set-pin at a terminal, answering each prompt in turn. */
async function setPinAt(
  env: Record<string, string>,
  answers: Array<[prompt: string, typed: string]>,
  args: string[] = [],
) {
  const p = runInPty(["set-pin", ...args], env);
  for (const [prompt, typed] of answers) {
    await p.waitFor(prompt);
    p.type(`${typed}\r`);
  }
  return p.exit;
}

const NEW = "New approval PIN (at least 4 characters): ";
const AGAIN = "The same PIN again: ";
const CURRENT = "Current approval PIN: ";

describe("set-pin", () => {
  it("refuses without a terminal (exit 2) and sets nothing", async () => {
    const { home: h, env } = home();
    const r = await runCli(["set-pin"], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "paid-actions-mcp: setting the approval PIN needs a person at an interactive terminal; nothing was changed\n",
    );
    expect(pinIsSet(h)).toBe(false);
  });

  it("sets a PIN typed twice without echo, kept as a salted hash with mode 0600", async () => {
    const { home: h, env } = home();
    const done = await setPinAt(env, [
      [NEW, "4321-pin"],
      [AGAIN, "4321-pin"],
    ]);
    expect(done.code, done.screen).toBe(0);
    expect(done.screen).toContain("The approval PIN is set");
    expect(done.screen).not.toContain("4321-pin");
    expect(statSync(pinPath(h)).mode & 0o777).toBe(0o600);
    expect(readFileSync(pinPath(h), "utf8")).not.toContain("4321-pin");
    expect(await verifyPin(h, "4321-pin")).toBe(true);
    expect(await verifyPin(h, "4321-pim")).toBe(false);
    // doctor says a PIN is set; a damaged file is named, since it refuses every PIN.
    const doctor = await runCli(["doctor"], env, 60_000);
    expect(doctor.stdout).toContain("[ok  ] approvals: 0 waiting for a person");
    expect(doctor.stdout).toContain("an approval PIN is set");
    writeFileSync(pinPath(h), "{not json");
    const damaged = await runCli(["doctor"], env, 60_000);
    expect(damaged.stdout).toMatch(
      /\[warn\] approvals: .*approval-pin is damaged: every PIN is refused until the file is deleted/,
    );
  });

  it("a PIN too short, or two that differ, change nothing", async () => {
    const { home: h, env } = home();
    const short = await setPinAt(env, [[NEW, "123"]]);
    expect(short.code).toBe(1);
    expect(short.screen).toContain("a PIN needs at least 4 characters; nothing was changed");
    const differ = await setPinAt(env, [
      [NEW, "12345"],
      [AGAIN, "12346"],
    ]);
    expect(differ.code).toBe(1);
    expect(differ.screen).toContain("the two PINs differ; nothing was changed");
    expect(pinIsSet(h)).toBe(false);
  });

  it("changing or clearing it needs the current PIN; a wrong one changes nothing", async () => {
    const { home: h, env } = home();
    expect(
      (
        await setPinAt(env, [
          [NEW, "first-pin"],
          [AGAIN, "first-pin"],
        ])
      ).code,
    ).toBe(0);

    const wrong = await setPinAt(env, [[CURRENT, "not-the-pin"]]);
    expect(wrong.code).toBe(1);
    expect(wrong.screen).toContain("wrong PIN; nothing was changed");
    expect(await verifyPin(h, "first-pin")).toBe(true);

    const changed = await setPinAt(env, [
      [CURRENT, "first-pin"],
      [NEW, "second-pin"],
      [AGAIN, "second-pin"],
    ]);
    expect(changed.code, changed.screen).toBe(0);
    expect(await verifyPin(h, "second-pin")).toBe(true);
    expect(await verifyPin(h, "first-pin")).toBe(false);

    const wrongClear = await setPinAt(env, [[CURRENT, "first-pin"]], ["--clear"]);
    expect(wrongClear.code).toBe(1);
    expect(pinIsSet(h)).toBe(true);

    const cleared = await setPinAt(env, [[CURRENT, "second-pin"]], ["--clear"]);
    expect(cleared.code, cleared.screen).toBe(0);
    expect(cleared.screen).toContain("The approval PIN is removed");
    expect(pinIsSet(h)).toBe(false);

    const none = await setPinAt(env, [], ["--clear"]);
    expect(none.code).toBe(0);
    expect(none.screen).toContain("No approval PIN is set");
  });
});
