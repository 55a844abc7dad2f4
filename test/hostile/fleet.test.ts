/**
 * A fleet of agents, one budget: four MCP server processes (the built CLI over real stdio),
 * each with its own home, all on one PostgreSQL journal, one wallet and one service (the
 * reference sandbox in this process). 200 concurrent paid calls against a daily cap that
 * admits exactly 60 of them.
 *
 * Part 1: nothing fails. Exactly 60 are paid, the other 140 are refused `budget_exceeded`,
 * and the wallet, the service's records and the journal all agree to the atomic unit.
 *
 * Part 2: the same while servers are SIGKILLed at random moments (seeded: FLEET_SEED=<n>
 * replays a run's choices) and restarted at once on the same home and journal. Calls in
 * flight on a killed server are lost on the client side; what they left in the journal must
 * be driven to the end by the survivors (resume at start-up, the reconciler), and still no
 * more than the cap is ever paid, nothing is paid twice, and the money agrees everywhere.
 *
 * An intent whose server died before it scheduled a follow-up keeps its lease for 30 s, so
 * the restarted server's start-up resume cannot take it; the survivors' reconcilers sweep
 * for such orphans every 15 s and resume each one once its lease has expired. An orphan
 * left undriven past that fails the test.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatDecimal, parseDecimal } from "../../src/domain/money.js";
import { serviceEnv } from "../helpers/engine.js";
import { fleetMoney } from "../helpers/fleet-money.js";
import {
  killAndRestart,
  pending,
  prng,
  readJournal,
  startSlot,
  stderrDigest,
  UNFINISHED,
  type JournalFacts,
  type Slot,
} from "../helpers/fleet.js";
import { call, cleanupAll, ensureBuilt, freshHome, sc, text } from "../helpers/mcp.js";
import { checkOnJournalOf, RefusalLedger, sandboxSide } from "../helpers/refusal-ledger.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.mjs";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { pollUntil, waitFor } from "../helpers/wait.js";

const SERVERS = 4;
const CALLS = 200;
const ADMITTED = 60;
const INPUT = { region: "eu-west-1", plan: "small", durationHours: 1 } as const;
const CALL_TIMEOUT_MS = 60_000;
/** How long the journal may take, after the calls, to hold nothing unfinished or followed. */
const SETTLE_MS = 90_000;
/** A lease that expired this long ago with nobody driving its intent (a sweep runs every 15 s): an orphan nothing resumes. */
const ORPHAN_GRACE_MS = 20_000;

let pgServer: TestPostgres | undefined;
let t: TestSandbox;
let price: bigint;
let cap: bigint;
const pools: pg.Pool[] = [];
const slotsOfAllParts: Slot[] = [];
/** How long part 1's calls took: part 2 times its kills within a run as long. */
let part1Ms = 4_000;

/** The money checks, on this file's sandbox, cap and price (set in beforeAll). */
const { snapshot, moneyAgrees } = fleetMoney(() => ({ t, cap, price }));

beforeAll(async () => {
  ensureBuilt();
  pgServer = await startTestPostgres();
  // 200 concurrent calls, each several requests, and four reconcilers: never throttled.
  const unthrottled = { perSecond: 1_000_000, burst: 1_000_000 };
  t = await startTestSandbox({ providerDelayMs: 20, rateLimit: unthrottled, rpcRateLimit: unthrottled });
  const quote = await t.quote("servers.provision", { ...INPUT });
  expect(quote.currency).toBe("USDC");
  price = parseDecimal(quote.amount)!;
  expect(price).toBe(parseDecimal("0.012"));
  cap = BigInt(ADMITTED) * price;
}, 120_000);

afterAll(async () => {
  await cleanupAll(); // every server process, every home
  for (const p of pools) await p.end().catch(() => undefined);
  await t?.close();
  await pgServer?.stop();
}, 60_000);

interface Outcome {
  i: number;
  slot: number;
  gen: number;
  kind: "paid" | "refused" | "lost" | "other";
  executionId?: string;
  detail?: string;
}

/** A fresh database and four servers on it, each with a fresh home. */
async function fleet(): Promise<{ url: string; db: pg.Pool; slots: Slot[] }> {
  const url = await pgServer!.createDatabase();
  const db = new pg.Pool({ connectionString: url, max: 2 });
  db.on("error", () => undefined);
  pools.push(db);
  const slots = await Promise.all(
    Array.from({ length: SERVERS }, (_, index) => {
      const home = freshHome();
      const env = {
        ...serviceEnv(t, home),
        PAID_ACTIONS_JOURNAL_URL: url,
        PAID_ACTIONS_MAX_PER_DAY: formatDecimal(cap),
        PAID_ACTIONS_MAX_PER_CALL: "1",
        PAID_ACTIONS_APPROVAL_ABOVE: "1000",
      };
      return startSlot(index, home, env);
    }),
  );
  slotsOfAllParts.push(...slots);
  return { url, db, slots };
}

/** Every refusal the clients got, per part: each that says nothing was paid is held to the ledger. */
const refusals = [new RefusalLedger(), new RefusalLedger()];

/** Sends call `i` to its slot's current process and says how it ended. */
async function paidCall(part: number, i: number, slots: Slot[]): Promise<Outcome> {
  const slot = slots[i % SERVERS]!;
  const gen = slot.gen;
  const args = { ...INPUT, image: `img-p${part}-n${i}`, intentKey: `fleet-p${part}-n${i}` };
  try {
    const r = await call(slot.server.client, "servers_provision", args, CALL_TIMEOUT_MS);
    const s = sc(r);
    if (r.isError && s?.error) refusals[part - 1]!.record(s.error);
    if (!r.isError && typeof s?.executionId === "string" && /^exe_/.test(s.executionId))
      return { i, slot: slot.index, gen, kind: "paid", executionId: s.executionId };
    if (r.isError && s?.error?.code === "budget_exceeded") return { i, slot: slot.index, gen, kind: "refused" };
    return { i, slot: slot.index, gen, kind: "other", detail: text(r).slice(0, 300) };
  } catch (e) {
    const message = (e as Error).message;
    return {
      i,
      slot: slot.index,
      gen,
      kind: /connection closed/i.test(message) ? "lost" : "other",
      detail: message.slice(0, 300),
    };
  }
}

/**
 * Waits (bounded) until the journal holds no unfinished intent and follows no execution.
 * Orphans — unfinished intents nothing schedules (no next_poll_at), whose lease expired more
 * than ORPHAN_GRACE_MS ago, while no unfinished intent is being driven at all, for 3 s on
 * end — are intents nothing will ever resume: `onOrphans` is told.
 */
async function settled(
  db: pg.Pool,
  onOrphans?: (orphans: JournalFacts["intents"]) => Promise<void>,
): Promise<{ ms: number; left: { unfinished: number; following: number } }> {
  const start = Date.now();
  let idleSince: number | undefined;
  /** What is left, after telling `onOrphans` of intents that have been idle 3 s on end. */
  const look = async () => {
    const left = await pending(db);
    if (!onOrphans || left.unfinished === 0) return left;
    const now = Date.now();
    const unfinished = (await readJournal(db)).intents.filter((x) => UNFINISHED.includes(x.state));
    const driven = unfinished.some((x) => x.leaseUntil !== null && x.leaseUntil >= now);
    const orphans = unfinished.filter(
      (x) => x.nextPollAt === null && (x.leaseUntil === null || x.leaseUntil < now - ORPHAN_GRACE_MS),
    );
    if (driven || orphans.length === 0) idleSince = undefined;
    else if (idleSince === undefined) idleSince = now;
    else if (now - idleSince >= 3_000) {
      idleSince = undefined;
      await onOrphans(orphans);
    }
    return left;
  };
  const { value: left } = await pollUntil(look, (l) => l.unfinished === 0 && l.following === 0, {
    timeoutMs: SETTLE_MS,
    intervalMs: 500,
  });
  return { ms: Date.now() - start, left };
}

function report(part: number, slots: Slot[], extra = ""): void {
  const digest = stderrDigest(slots.flatMap((s) => s.all.map((p) => p.stderr())));
  const lines = [...digest.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([line, n]) => `  ${String(n).padStart(4)} × ${line}`);
  console.log(
    `[fleet] part ${part}: server stderr (${lines.length} kinds of line)${extra}\n${lines.join("\n") || "  (none)"}`,
  );
}

describe("hostile: a fleet of agents, one budget (PostgreSQL journal)", () => {
  it("4 servers, 200 concurrent paid calls, a cap that admits 60: exactly 60 paid, 140 refused, and the money agrees everywhere", async () => {
    const { url, db, slots } = await fleet();
    const before = await snapshot();
    const started = Date.now();
    const outcomes = await Promise.all(Array.from({ length: CALLS }, (_, i) => paidCall(1, i, slots)));
    const callsMs = Date.now() - started;
    part1Ms = callsMs;

    const paid = outcomes.filter((o) => o.kind === "paid");
    const refused = outcomes.filter((o) => o.kind === "refused");
    expect(outcomes.filter((o) => o.kind === "other" || o.kind === "lost")).toEqual([]);
    expect(paid.length).toBe(ADMITTED);
    expect(refused.length).toBe(CALLS - ADMITTED);

    const { left } = await settled(db);
    expect(left).toEqual({ unfinished: 0, following: 0 });
    const { facts, spent } = await moneyAgrees(
      db,
      url,
      before,
      paid.map((o) => o.executionId!),
    );
    expect(spent).toBe(cap);
    expect(facts.intents.length).toBe(CALLS);
    const byState = new Map<string, number>();
    for (const x of facts.intents)
      byState.set(
        `${x.state}/${x.budgetState}/${x.errorCode ?? "-"}`,
        (byState.get(`${x.state}/${x.budgetState}/${x.errorCode ?? "-"}`) ?? 0) + 1,
      );
    expect(Object.fromEntries(byState)).toEqual({
      "executed/spent/-": ADMITTED,
      "refused/none/budget_exceeded": CALLS - ADMITTED,
    });
    // The clients saw exactly what the journal holds.
    expect(paid.map((o) => o.executionId).sort()).toEqual(
      facts.intents
        .filter((x) => x.executionId)
        .map((x) => x.executionId)
        .sort(),
    );

    const spending = sc(await call(slots[0]!.server.client, "get_spending", {}, 20_000));
    expect(parseDecimal(spending.committedLast24h)).toBe(cap);
    expect(parseDecimal(spending.remainingToday)).toBe(0n);
    expect(parseDecimal(spending.reserved)).toBe(0n);
    // Every refusal said nothing was paid ("Nothing was paid."): no transfer for its purchase on the ledger.
    expect((await checkOnJournalOf(refusals[0]!, slots[0]!.env, sandboxSide(t))).claims).toBe(CALLS - ADMITTED);

    report(1, slots);
    console.log(
      `[fleet] part 1: paid ${paid.length}, refused ${refused.length}, lost-to-kill 0, duration ${(callsMs / 1000).toFixed(1)} s (settled +${((Date.now() - started - callsMs) / 1000).toFixed(1)} s), seed -`,
    );
  }, 180_000);

  it("the same while servers are SIGKILLed at random moments and restarted: never more than the cap, nothing paid twice, the money agrees", async () => {
    const seed = process.env.FLEET_SEED ? Number(process.env.FLEET_SEED) : Math.floor(Math.random() * 2 ** 31);
    console.log(`[fleet] part 2: seed ${seed} (replay with FLEET_SEED=${seed})`);
    const rng = prng(seed);
    // 2 or 3 kills, each at a random moment of the run: a random time within what part 1's
    // calls took, or once a random number of the calls has ended, whichever comes first (so
    // it falls inside the run). The victim is a random server among those with calls in
    // flight then; it is restarted at once, and a kill meant for a server still restarting
    // waits for it and hits a process that is resuming at start-up.
    const kills = Array.from({ length: 2 + Math.floor(rng() * 2) }, () => ({
      atMs: 200 + Math.floor(rng() * Math.max(500, part1Ms * 0.9 - 200)),
      after: Math.floor(rng() * 150),
      pick: rng(),
    })).sort((a, b) => a.atMs - b.atMs);

    const { url, db, slots } = await fleet();
    const before = await snapshot();
    const started = Date.now();
    let ended = 0;
    const inFlight = new Map<string, number>(); // "slot/gen" -> calls in flight on that process
    const flightKey = (slot: number, gen: number) => `${slot}/${gen}`;
    const outcomes: Outcome[] = [];
    const running = Array.from({ length: CALLS }, (_, i) => {
      const slot = slots[i % SERVERS]!;
      const key = flightKey(slot.index, slot.gen);
      inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
      return paidCall(2, i, slots).then((o) => {
        ended++;
        inFlight.set(key, inFlight.get(key)! - 1);
        outcomes.push(o);
        return o;
      });
    });
    const done: Array<{ atMs: number; victim: number; gen: number; inFlight: number; onVictim: number; pid: number }> =
      [];
    const restarting = new Map<number, Promise<void>>();
    const killer = (async () => {
      for (const k of kills) {
        // The fault's own moment (a random time, or a random count of calls ended), not a sync.
        await waitFor(() => ended >= k.after || Date.now() - started >= k.atMs, {
          timeoutMs: k.atMs + 1_000,
          intervalMs: 5,
          what: "the kill's moment",
        });
        const busy = slots.filter((s) => (inFlight.get(flightKey(s.index, s.gen)) ?? 0) > 0);
        const pool = busy.length > 0 ? busy : slots;
        const slot = pool[Math.floor(k.pick * pool.length)]!;
        await restarting.get(slot.index);
        done.push({
          atMs: Date.now() - started,
          victim: slot.index,
          gen: slot.gen,
          inFlight: CALLS - ended,
          onVictim: inFlight.get(flightKey(slot.index, slot.gen)) ?? 0,
          pid: slot.server.pid,
        });
        restarting.set(slot.index, killAndRestart(slot));
      }
      await Promise.all(restarting.values());
    })();
    await Promise.all(running);
    await killer;
    const callsMs = Date.now() - started;
    console.log(`[fleet] part 2: kills ${JSON.stringify(done)}`);

    // At least two kills while calls were in flight.
    expect(done.filter((k) => k.inFlight > 0).length).toBeGreaterThanOrEqual(2);

    // A call either got its answer (paid or refused by the cap) or was lost with the process it was on.
    const wasKilled = (o: Outcome) => slots[o.slot]!.killed.has(o.gen);
    expect(outcomes.filter((o) => o.kind === "other")).toEqual([]);
    expect(outcomes.filter((o) => o.kind === "lost" && !wasKilled(o))).toEqual([]);
    const paid = outcomes.filter((o) => o.kind === "paid");
    const refused = outcomes.filter((o) => o.kind === "refused");
    const lost = outcomes.filter((o) => o.kind === "lost");

    // Drive everything to the end: the survivors resume what the killed servers left, with
    // no operator's help. An orphan (unfinished, its lease long expired, nothing driving
    // it) is a failure.
    const findings: string[] = [];
    const { ms: settleMs, left } = await settled(db, async (orphans) => {
      findings.push(
        `${orphans.length} unfinished intent(s) whose lease expired ≥${ORPHAN_GRACE_MS / 1000} s ago are driven by nobody: ` +
          orphans.map((o) => `${o.intentId} ${o.state}/${o.budgetState} lease ${o.leaseOwner ?? "none"}`).join("; "),
      );
    });
    expect(findings, "orphaned purchases nobody resumed").toEqual([]);
    expect(left, `the journal still drives or follows intents after ${SETTLE_MS / 1000} s`).toEqual({
      unfinished: 0,
      following: 0,
    });

    const {
      facts,
      spent,
      paid: journalPaid,
    } = await moneyAgrees(
      db,
      url,
      before,
      paid.map((o) => o.executionId!),
    );
    // Every recorded intent ended paid, or refused by the cap (nothing else could stop one here).
    const ends = new Map<string, number>();
    for (const x of facts.intents)
      ends.set(
        `${x.state}/${x.budgetState}/${x.errorCode ?? "-"}`,
        (ends.get(`${x.state}/${x.budgetState}/${x.errorCode ?? "-"}`) ?? 0) + 1,
      );
    expect(
      [...ends.keys()].filter((k) => k !== "executed/spent/-" && k !== "refused/none/budget_exceeded"),
      JSON.stringify(Object.fromEntries(ends)),
    ).toEqual([]);
    // Never more than the cap; and since every recorded intent either paid or was refused by the
    // cap, more than 60 recorded intents means the cap was reached: exactly 60 paid.
    expect(journalPaid).toBeLessThanOrEqual(ADMITTED);
    if (facts.intents.length > ADMITTED) {
      expect(journalPaid).toBe(ADMITTED);
      expect(spent).toBe(cap);
    }
    // The clients' answers are a subset of the journal's (calls lost to a kill may have been finished by a resume).
    expect(paid.length).toBeLessThanOrEqual(journalPaid);
    const keys = new Map(facts.intents.map((x) => [x.intentKey, x]));
    for (const o of refused) expect(keys.get(`fleet-p2-n${o.i}`)?.state).toBe("refused");
    for (const o of paid) expect(keys.get(`fleet-p2-n${o.i}`)?.executionId).toBe(o.executionId);

    const spending = sc(await call(slots[1]!.server.client, "get_spending", {}, 20_000));
    expect(parseDecimal(spending.committedLast24h)).toBe(spent);
    expect((await checkOnJournalOf(refusals[1]!, slots[1]!.env, sandboxSide(t))).claims).toBe(refused.length);

    const resumedLost = lost.filter((o) => keys.get(`fleet-p2-n${o.i}`)?.executionId).length;
    report(2, slots, findings.length ? ` — ${findings.length} orphan finding(s)` : "");
    console.log(
      `[fleet] part 2: paid ${journalPaid} (clients saw ${paid.length}, ${resumedLost} more finished by resumes of lost calls), refused ${refused.length} (journal ${facts.intents.filter((x) => x.state === "refused").length}), ` +
        `lost-to-kill ${lost.length}, recorded intents ${facts.intents.length}, kills ${done.length}, orphans ${findings.length ? "yes" : "no"}, ` +
        `duration ${(callsMs / 1000).toFixed(1)} s (settled +${(settleMs / 1000).toFixed(1)} s), seed ${seed}`,
    );
  }, 240_000);
});
