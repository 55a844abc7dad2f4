/**
 * The approval PIN fails closed, the built CLI at a pseudo-terminal (util-linux `script`),
 * on a home's SQLite journal and on a PostgreSQL one: once `set-pin` has set a PIN, moving
 * its file aside does not lift a freeze or approve a payment — `unfreeze` and `approve`
 * refuse (and `doctor` says why) until a PIN is set again at a terminal; `set-pin --clear`
 * removes a PIN only with the current one, and then decisions need no PIN again.
 */
import { existsSync, renameSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pinPath, verifyPin } from "../../src/engine/approvals/pin.js";
import type { JournalStore } from "../../src/engine/journal/port.js";
import { openPostgresJournal } from "../../src/engine/journal/postgres.js";
import { Journal } from "../../src/engine/journal/sqlite.js";
import { newIntent } from "../helpers/journal-records.js";
import { cleanupAll, ensureBuilt, freshHome, runCli } from "../helpers/mcp.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.mjs";
import { runInPty } from "./pty.js";

const NEW = "New approval PIN (at least 4 characters): ";
const AGAIN = "The same PIN again: ";
const CURRENT = "Current approval PIN: ";
const FIRST = "first-pin-4821";
const SECOND = "second-pin-9035";

let pgServer: TestPostgres | undefined;
beforeAll(() => ensureBuilt(), 120_000);
afterAll(async () => {
  await cleanupAll();
  await pgServer?.stop();
}, 60_000);

interface Setup {
  home: string;
  env: Record<string, string>;
  /** The journal the commands use, as a third process holds it. */
  journal: JournalStore;
}

async function onSqlite(): Promise<Setup> {
  const home = freshHome();
  const env = { PATH: process.env.PATH ?? "", PAID_ACTIONS_HOME: home };
  // The CLI creates the journal on first use; the test opens it afterwards.
  expect((await runCli(["approve"], env)).code).toBe(0);
  return { home, env, journal: new Journal(join(home, "journal.sqlite")) };
}

async function onPostgres(): Promise<Setup> {
  pgServer ??= await startTestPostgres();
  const url = await pgServer.createDatabase();
  const home = freshHome();
  return {
    home,
    env: { PATH: process.env.PATH ?? "", PAID_ACTIONS_HOME: home, PAID_ACTIONS_JOURNAL_URL: url },
    journal: await openPostgresJournal(url),
  };
}

/** Runs a command at a terminal, answering each prompt in turn. */
async function atTerminal(args: string[], env: Record<string, string>, answers: Array<[string, string]> = []) {
  const p = runInPty(args, env);
  for (const [prompt, typed] of answers) {
    await p.waitFor(prompt);
    p.type(`${typed}\r`);
  }
  return p.exit;
}

describe.each([
  ["SQLite in the home", onSqlite],
  ["PostgreSQL", onPostgres],
] as const)("the approval PIN fails closed (%s)", (_store, start) => {
  let s: Setup;
  beforeAll(async () => {
    s = await start();
  }, 120_000);
  afterAll(async () => {
    await s?.journal.close();
  });

  /** A payment above the threshold, waiting for a person (as the engine records one). */
  let approvals = 0;
  async function pendingApproval(): Promise<string> {
    const n = ++approvals;
    const intentId = `int_pinfail${n}`;
    await s.journal.insertIntent(newIntent(intentId, { createdAt: Date.now() }));
    const approvalId = `apr_pinfail${n}`;
    await s.journal.insertApproval({
      approvalId,
      intentId,
      quoteId: `q_pinfail${n}`,
      action: "servers.provision",
      amount: 2_500_000n,
      payee: "Payee1111111111111111111111111111111111111",
      expiresAt: Date.now() + 600_000,
      status: "pending",
      createdAt: Date.now(),
      decidedAt: null,
    });
    return approvalId;
  }

  it("set-pin at a terminal sets the PIN and the journal remembers it for this home", async () => {
    const set = await atTerminal(["set-pin"], s.env, [
      [NEW, FIRST],
      [AGAIN, FIRST],
    ]);
    expect(set.code, set.screen).toBe(0);
    expect(await verifyPin(s.home, FIRST)).toBe(true);
    expect(await s.journal.pinRecords()).toEqual([{ host: hostname(), home: s.home, setAt: expect.any(Number) }]);
  });

  it("with the PIN file moved aside, unfreeze at a terminal refuses without asking and payments stay frozen", async () => {
    expect((await runCli(["freeze", "--reason", "pin test"], s.env)).code).toBe(0);
    renameSync(pinPath(s.home), `${pinPath(s.home)}.aside`);
    const r = await atTerminal(["unfreeze"], s.env);
    expect(r.code, r.screen).toBe(1);
    expect(r.screen).toContain("Payments are frozen (since");
    expect(r.screen).toContain(`paid-actions-mcp: an approval PIN was set (in ${s.home} on ${hostname()}, `);
    expect(r.screen).toContain(
      `but this home has no PIN file (${pinPath(s.home)}), so no PIN can be checked; payments stay frozen`,
    );
    expect(r.screen).not.toContain("Approval PIN: ");
    expect(r.screen).not.toContain("Payments are unfrozen");
    expect((await s.journal.frozen())?.reason).toBe("pin test");
    // doctor says why every decision is refused.
    const doctor = await runCli(["doctor"], s.env, 90_000);
    expect(doctor.stdout).toMatch(
      /^\[warn\] approvals: 0 waiting for a person .*so no PIN can be checked: every approval and unfreeze is refused until a person sets the PIN again at a terminal$/m,
    );
  });

  it("approve at a terminal refuses too, and the approval stays pending", async () => {
    const approvalId = await pendingApproval();
    const r = await atTerminal(["approve", approvalId], s.env, [["Type 2.50 to approve", "2.50"]]);
    expect(r.code, r.screen).toBe(1);
    expect(r.screen).toContain("so no PIN can be checked; nothing was approved");
    expect(r.screen).not.toContain(`Approved ${approvalId}`);
    expect((await s.journal.approval(approvalId))?.status).toBe("pending");
    const d = await atTerminal(["approve", approvalId], s.env, [["Type 2.50 to approve", "decline"]]);
    expect(d.code, d.screen).toBe(1);
    expect(d.screen).toContain("so no PIN can be checked; nothing was declined");
    expect((await s.journal.approval(approvalId))?.status).toBe("pending");
  });

  it("set-pin --clear cannot remove a PIN whose file is gone; set-pin sets a new one, which then lifts the freeze", async () => {
    const clear = await atTerminal(["set-pin", "--clear"], s.env);
    expect(clear.code, clear.screen).toBe(1);
    expect(clear.screen).toContain("nothing was changed. Only the current PIN removes a PIN");
    expect(await s.journal.pinRecords()).toHaveLength(1);

    const set = await atTerminal(["set-pin"], s.env, [
      [NEW, SECOND],
      [AGAIN, SECOND],
    ]);
    expect(set.code, set.screen).toBe(0);
    expect(set.screen).toContain("every approval and unfreeze was refused. A new PIN replaces it.");
    expect(set.screen).not.toContain(CURRENT);
    expect(await verifyPin(s.home, SECOND)).toBe(true);

    const wrong = await atTerminal(["unfreeze"], s.env, [["Approval PIN: ", FIRST]]);
    expect(wrong.code, wrong.screen).toBe(1);
    expect(wrong.screen).toContain("wrong PIN; payments stay frozen");
    expect(await s.journal.frozen()).toBeDefined();
    const right = await atTerminal(["unfreeze"], s.env, [["Approval PIN: ", SECOND]]);
    expect(right.code, right.screen).toBe(0);
    expect(right.screen).toContain("Payments are unfrozen");
    expect(await s.journal.frozen()).toBeUndefined();
  });

  it("set-pin --clear with the current PIN goes back to no PIN: the journal forgets it, and a decision asks for none", async () => {
    const cleared = await atTerminal(["set-pin", "--clear"], s.env, [[CURRENT, SECOND]]);
    expect(cleared.code, cleared.screen).toBe(0);
    expect(cleared.screen).toContain("The approval PIN is removed");
    expect(existsSync(pinPath(s.home))).toBe(false);
    expect(await s.journal.pinRecords()).toEqual([]);

    expect((await runCli(["freeze"], s.env)).code).toBe(0);
    const lifted = await atTerminal(["unfreeze"], s.env);
    expect(lifted.code, lifted.screen).toBe(0);
    expect(lifted.screen).not.toContain("Approval PIN: ");
    expect(await s.journal.frozen()).toBeUndefined();
  });
});
