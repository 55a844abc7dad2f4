/**
 * `paid-actions-mcp freeze` and `unfreeze`, the built CLI, against two MCP servers (the built
 * CLI over real stdio) that share one journal — one home's SQLite file, or one PostgreSQL
 * database with a home each — paying the reference service: frozen without a terminal, both
 * servers refuse a paid call with `frozen` and nothing moves, in the wallet or the journal;
 * doctor says so; unfreezing needs a person at a terminal (a pseudo-terminal, util-linux
 * `script`) and the PIN when one is set; then each server pays again.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clearPin, setPin } from "../../src/engine/approvals/pin.js";
import type { JournalStore } from "../../src/engine/journal/port.js";
import { openPostgresJournal } from "../../src/engine/journal/postgres.js";
import { Journal } from "../../src/engine/journal/sqlite.js";
import { serviceEnv } from "../helpers/engine.js";
import {
  call,
  cleanupAll,
  ensureBuilt,
  freshHome,
  runCli,
  sc,
  SMALL_SERVER,
  startServer,
  type McpServerProcess,
} from "../helpers/mcp.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.mjs";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { runInPty } from "./pty.js";

const PRICE = 288_000n;
const NO_TTY = "paid-actions-mcp: unfreezing payments needs a person at an interactive terminal; nothing was changed\n";
const PIN = "frz-2468-pin";

let pgServer: TestPostgres | undefined;

beforeAll(() => ensureBuilt(), 120_000);
afterAll(async () => {
  await cleanupAll();
  await pgServer?.stop();
}, 60_000);

interface Fleet {
  /** The service, and the wallet's ledger: one per fleet, so that doctor's audit sees only this journal's payments. */
  t: TestSandbox;
  /** The environment of server A, which the person's commands run with (its home holds the PIN). */
  env: Record<string, string>;
  servers: McpServerProcess[];
  /** The shared journal, as a third process holds it. */
  journal: JournalStore;
}

/** Two servers on one home's SQLite journal. */
async function sqliteFleet(): Promise<Fleet> {
  const t = await startTestSandbox({ providerDelayMs: 50 });
  const home = freshHome();
  const env = serviceEnv(t, home);
  const servers = [await startServer({ home, env }), await startServer({ home, env })];
  return { t, env, servers, journal: new Journal(join(home, "journal.sqlite")) };
}

/** Two servers, a home each, on one PostgreSQL journal. */
async function postgresFleet(): Promise<Fleet> {
  const t = await startTestSandbox({ providerDelayMs: 50 });
  pgServer ??= await startTestPostgres();
  const url = await pgServer.createDatabase();
  const envs = [freshHome(), freshHome()].map((home): Record<string, string> => ({
    ...serviceEnv(t, home),
    PAID_ACTIONS_JOURNAL_URL: url,
  }));
  const servers = await Promise.all(envs.map((env) => startServer({ home: env.PAID_ACTIONS_HOME, env })));
  return { t, env: envs[0]!, servers, journal: await openPostgresJournal(url) };
}

describe.each([
  ["SQLite, one home", sqliteFleet],
  ["PostgreSQL, a home each", postgresFleet],
] as const)("freeze and unfreeze: two servers on one journal (%s)", (_store, start) => {
  let fleet: Fleet;
  beforeAll(async () => {
    fleet = await start();
  }, 120_000);
  afterAll(async () => {
    await Promise.all(fleet?.servers.map((s) => s.close()) ?? []);
    await fleet?.journal.close();
    await fleet?.t.close();
  });

  const balance = () => fleet.t.usdc(fleet.t.wallet.address);
  const buy = (s: McpServerProcess) => call(s.client, "servers_provision", { ...SMALL_SERVER }, 60_000);
  const facts = async () => ({
    intents: (await fleet.journal.intentsSince(0)).length,
    payments: (await fleet.journal.paymentsSince(0)).length,
    reserved: await fleet.journal.reserved(),
  });

  it("frozen from the built CLI without a terminal, both servers refuse a paid call with `frozen` before signing: the wallet and the journal unchanged; quotes still work", async () => {
    const before = { balance: await balance(), journal: await facts() };
    const frozen = await runCli(["freeze", "--reason", "card reported lost"], fleet.env);
    expect(frozen.code, frozen.stderr).toBe(0);
    expect(frozen.stdout).toMatch(
      /^Payments are frozen \(since \d{4}-\d\d-\d\dT[\d:.]+Z, by [^/\s]+\/\d+, reason: "card reported lost"\)\./,
    );
    expect(frozen.stdout).toContain("No server on this journal");
    // Run by an agent's shell, it does not name the command that lifts it.
    expect(frozen.stdout).not.toContain("paid-actions-mcp unfreeze");

    for (const server of fleet.servers) {
      const r = await buy(server);
      expect(r.isError).toBe(true);
      const error = sc(r).error;
      expect(error).toMatchObject({ code: "frozen", reason: "card reported lost", retryable: false });
      expect(error.message).toMatch(/^payments are frozen by a person \(reason: "card reported lost", since /);
      expect(`${error.message} ${error.whatToDo}`).not.toMatch(/paid-actions-mcp|`/);
    }
    expect(await balance()).toBe(before.balance);
    expect(await facts()).toEqual(before.journal);
    expect(before.journal.reserved).toBe(0n);

    const q = await call(fleet.servers[1]!.client, "quote_action", {
      action: "servers.provision",
      input: { ...SMALL_SERVER },
    });
    expect(q.isError).toBeFalsy();
    expect(sc(q)).toMatchObject({ amount: "0.288", payable: false, refusal: { code: "frozen" } });

    const again = await runCli(["freeze", "--reason", "another reason"], fleet.env);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      /^Payments were already frozen \(.*reason: "card reported lost"\); the freeze stays as it was\./,
    );
    expect((await fleet.journal.frozen())?.reason).toBe("card reported lost");
  });

  it("unfreeze without a terminal exits 2 and changes nothing", async () => {
    const r = await runCli(["unfreeze"], fleet.env);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(NO_TTY);
    expect(r.stdout).toBe("");
    expect((await fleet.journal.frozen())?.reason).toBe("card reported lost");
    expect(sc(await buy(fleet.servers[0]!)).error.code).toBe("frozen");
  });

  it("doctor reports the freeze as a warning, with its reason", async () => {
    const r = await runCli(["doctor"], fleet.env, 60_000);
    expect(r.stdout).toMatch(
      /^\[warn\] freeze: payments are frozen \(since \S+, by \S+, reason: "card reported lost"\): no server on this journal signs a new payment until a person unfreezes payments at a terminal$/m,
    );
    expect(r.stdout).toContain("Ready to pay once a person unfreezes payments.");
    expect(r.code, r.stdout).toBe(0);
  });

  it("unfreeze at a terminal: a wrong PIN leaves payments frozen; the right one lifts the freeze and each server's next call pays", async () => {
    const home = fleet.env.PAID_ACTIONS_HOME!;
    await setPin(home, PIN);
    try {
      const wrong = runInPty(["unfreeze"], fleet.env);
      await wrong.waitFor("Approval PIN: ");
      wrong.type("frz-0000-bad\r");
      const refused = await wrong.exit;
      expect(refused.code).toBe(1);
      expect(refused.screen).toContain(`Payments are frozen (since`);
      expect(refused.screen).toContain("paid-actions-mcp: wrong PIN; payments stay frozen");
      expect(refused.screen).not.toContain("frz-0000-bad");
      expect((await fleet.journal.frozen())?.reason).toBe("card reported lost");
      expect(sc(await buy(fleet.servers[1]!)).error.code).toBe("frozen");

      const right = runInPty(["unfreeze"], fleet.env);
      await right.waitFor("Approval PIN: ");
      right.type(`${PIN}\r`);
      const lifted = await right.exit;
      expect(lifted.code, lifted.screen).toBe(0);
      expect(lifted.screen).toContain("Payments are unfrozen");
      expect(lifted.screen).not.toContain(PIN);
      expect(await fleet.journal.frozen()).toBeUndefined();
    } finally {
      await clearPin(home);
    }
    const before = await balance();
    for (const server of fleet.servers) {
      const r = await buy(server);
      expect(r.isError, JSON.stringify(sc(r))).toBeFalsy();
      expect(sc(r).executionId).toMatch(/^exe_/);
    }
    expect(await balance()).toBe(before - 2n * PRICE);

    const nothing = await runInPty(["unfreeze"], fleet.env).exit;
    expect(nothing.code).toBe(0);
    expect(nothing.screen).toContain("Payments are not frozen");
  });

  it("frozen at a terminal, the freeze says so and the person is told the command that lifts it", async () => {
    const p = await runInPty(["freeze"], fleet.env).exit;
    try {
      expect(p.code, p.screen).toBe(0);
      expect(p.screen).toMatch(/Payments are frozen \(since \S+, by terminal, no reason given\)\./);
      expect(p.screen).toContain("To lift the freeze, a person runs `paid-actions-mcp unfreeze` at a terminal.");
      expect(await fleet.journal.frozen()).toMatchObject({ reason: null, by: "terminal" });
    } finally {
      await fleet.journal.unfreeze();
    }
  });
});
