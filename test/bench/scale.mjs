// `npm run bench`, sections 4–6: how the reconciler's cost grows with unfinished work, how
// list_executions holds up over very large journals, and what the reference service alone
// sustains.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { request } from "undici";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import {
  INPUT,
  JOURNAL_LEVELS,
  loadWallet,
  log,
  RECONCILE_LEVELS,
  RECONCILE_WINDOW_MS,
  ROOT,
  QUICK,
  SERVICE_WINDOW_MS,
  serviceEnv,
  sleep,
  startSandbox,
  stats,
  timed,
  work,
} from "./common.mjs";
import { attribute } from "./profile-attribution.mjs";

// ---- 4. Reconciler -------------------------------------------------------------------------

/**
 * With `profile`, the window at the largest level runs under V8's sampling profiler in this
 * process (node:inspector), and `profile` holds where its CPU went (profile-attribution.mjs).
 */
export async function reconciler({ profile = false } = {}) {
  log("4. reconciler cost with unfinished executions…");
  const slow = await startSandbox("sandbox-slow", 3_600_000);
  const { openPaidActions } = await import(join(ROOT, "dist", "app", "index.js"));
  const { Reconciler } = await import(join(ROOT, "dist", "engine", "reconciler.js"));
  const { createServiceClient } = await import(join(ROOT, "dist", "engine", "service", "client.js"));
  const home = join(work, "reconcile-home");
  const pa = await openPaidActions({
    env: serviceEnv(slow.info, home),
    log: () => undefined,
    reconcile: false,
    resume: false,
  });
  const pollClient = createServiceClient({
    baseUrl: slow.info.baseUrl,
    apiKey: slow.info.apiKey,
    timeoutMs: 10_000,
    maxAttempts: 1,
  });
  // Finished executions the reconciler must not touch: 10,000 of them (written straight into the journal file).
  const raw = new Database(pa.journal.path);
  raw.pragma("busy_timeout = 10000");
  const insert = raw.prepare(
    `INSERT INTO intents (intent_id, intent_key, idem_key, service, action, input, fingerprint, state, execution_id, exec_status, budget_state, created_at, updated_at)
     VALUES (?, ?, ?, ?, 'servers.provision', '{}', 'x', 'executed', ?, 'completed', 'spent', ?, ?)`,
  );
  raw.transaction(() => {
    for (let i = 0; i < 10_000; i++)
      insert.run(
        `int_done${i}`,
        `done-${i}`,
        `done-${i}`,
        pa.engine.service,
        `exe_done${i}`,
        Date.now() - 1000,
        Date.now(),
      );
  })();
  const levels = [];
  let paid = 0;
  let profiled;
  for (const level of RECONCILE_LEVELS) {
    while (paid < level) {
      const batch = Math.min(16, level - paid);
      await Promise.all(
        Array.from({ length: batch }, (_, i) =>
          pa.engine.pay({ action: "servers.provision", input: { ...INPUT, image: `rec-${paid + i}` } }),
        ),
      );
      paid += batch;
    }
    // Every unfinished execution due now, as right after a start.
    raw
      .prepare(`UPDATE intents SET next_poll_at = ?, poll_interval_ms = 1000 WHERE next_poll_at IS NOT NULL`)
      .run(Date.now());
    const rec = new Reconciler({ engine: pa.engine, journal: pa.journal, client: pollClient, now: Date.now });
    const stopProfile = profile && level === RECONCILE_LEVELS.at(-1) ? await profileHere() : undefined;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    rec.start();
    await sleep(RECONCILE_WINDOW_MS);
    await rec.stop();
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    levels.push({
      unfinished: level,
      finishedRows: 10_000,
      requests: rec.requests,
      requestsPerSecond: rec.requests / (wall / 1000),
      cpuShare: cpuMs / wall,
      cpuMsPerPoll: rec.requests > 0 ? cpuMs / rec.requests : 0,
    });
    if (stopProfile) profiled = await stopProfile();
  }
  raw.close();
  await pa.close();
  slow.child.kill("SIGTERM");
  return { windowMs: RECONCILE_WINDOW_MS, levels, ...(profiled ? { profile: profiled } : {}) };
}

/** V8's sampling profiler on this process; the returned function stops it and resolves with its attribution. */
async function profileHere() {
  const { Session } = await import("node:inspector/promises");
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 200 });
  await session.post("Profiler.start");
  return async () => {
    const { profile } = await session.post("Profiler.stop");
    session.disconnect();
    mkdirSync(join(ROOT, ".bench", "profile"), { recursive: true });
    writeFileSync(join(ROOT, ".bench", "profile", "reconciler.cpuprofile"), JSON.stringify(profile));
    return attribute(profile);
  };
}

// ---- 5. Journal ------------------------------------------------------------------------------

export async function journal() {
  log("5. list_executions latency over large journals…");
  const { openJournal } = await import(join(ROOT, "dist", "app", "index.js"));
  const out = [];
  let rows = 0;
  const home = join(work, "journal-home");
  mkdirSync(home, { recursive: true });
  for (const level of JOURNAL_LEVELS) {
    const j = await openJournal({ PAID_ACTIONS_HOME: home });
    const raw = new Database(j.journal.path);
    // Each row holds what its state proves (the journal narrows every row it reads: an
    // executed action has its quote, requirements, proof and execution), in the shapes the
    // engine writes them.
    const insert = raw.prepare(
      `INSERT INTO intents (intent_id, intent_key, idem_key, service, action, input, fingerprint, state, quote_id, quote, amount, payee,
         quote_expires_at, quoted_at, requirements, proof, execution_id, execution, exec_status, output, budget_state, budget_amount,
         budget_at, call_id, created_at, updated_at)
       VALUES (@id, @id, @id, 'bench', @action, '{"region":"eu-west-1","plan":"nano","durationHours":1}', 'x', 'executed', @quote,
         json_object('quoteId', @quote, 'action', @action, 'price', json_object('amount', '0.005', 'currency', 'USDC')), '5000',
         'Treasury1111111111111111111111111111111111', @at + 300000, @at,
         '{"scheme":"exact","network":"solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1","amount":"5000"}', 'proof', @exe,
         json_object('executionId', @exe, 'status', @status, 'action', @action, 'createdAt', '2026-01-01T00:00:00.000Z'), @status,
         '{"serverId":"svr_x","ipv4":"203.0.113.7"}', 'spent', '5000', @at, 'call_bench', @at, @at)`,
    );
    const statuses = ["completed", "completed", "completed", "refunded", "pending", "processing"];
    const actions = ["servers.provision", "domains.register", "storage.purchase"];
    const start = Date.now() - 1e9;
    raw.transaction(() => {
      for (; rows < level; rows++) {
        insert.run({
          id: `int_b${rows}`,
          quote: `qt_b${rows}`,
          exe: `exe_b${rows}`,
          status: statuses[rows % 6],
          action: actions[rows % 3],
          at: start + rows * 1000,
        });
      }
    })();
    // The engine's reads are async (the journal's port): each sample awaits its page.
    const measure = async (opts) => {
      const samples = [];
      for (let i = 0; i < 200; i++) {
        const t0 = performance.now();
        const page = await j.engine.listExecutions(opts);
        samples.push(performance.now() - t0);
        if (page.items.length === 0) throw new Error("empty page");
      }
      return stats(samples);
    };
    const first = await j.engine.listExecutions({ limit: 20 });
    const page2 = await j.engine.listExecutions({ limit: 20, cursor: first.nextCursor });
    out.push({
      rows: level,
      latest: await measure({ limit: 20 }),
      byStatus: await measure({ limit: 20, status: "refunded" }),
      secondPage: await measure({ limit: 20, cursor: first.nextCursor }),
      pageSize: page2.items.length,
    });
    raw.close();
    await j.close();
  }
  return out;
}

// ---- 6. The reference service alone ------------------------------------------------------------

/** Calls `once` from `concurrency` clients for `windowMs`; resolves with how many completed per second. */
export async function throughput(concurrency, windowMs, once) {
  let done = 0;
  const until = performance.now() + windowMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        await timed(once);
        done++;
      }
    }),
  );
  return done / (windowMs / 1000);
}

/**
 * `quote` (POST /quotes); `prepare` (a fresh quote and a proof signed for it with the stock
 * ExactSvmScheme: what a paying client does before it asks for the execution); `execute` (POST
 * /executions with a prepared proof, which the service verifies, co-signs, submits to its
 * ledger, commits and runs: answered 201 or it throws); `settled` (both, one after the other).
 */
export async function serviceCalls(svc) {
  const headers = { authorization: `Bearer ${svc.info.apiKey}`, "content-type": "application/json" };
  const wallet = await loadWallet(svc.info.walletPath);
  const scheme = new ExactSvmScheme(wallet, { rpcUrl: svc.info.rpcUrl });
  const { readWireBase64, base58 } = await import(join(ROOT, "dist", "domain", "solana-wire.js"));
  const quote = async () => {
    const res = await request(`${svc.info.baseUrl}/quotes`, {
      method: "POST",
      headers,
      body: JSON.stringify({ action: "servers.provision", input: INPUT, budget: { amount: "1", currency: "USDC" } }),
    });
    const body = await res.body.json();
    if (res.statusCode !== 201) throw new Error(`quote ${res.statusCode}`);
    return body;
  };
  const prepare = async () => {
    const q = await quote();
    const reqs = q.paymentRequirement.accepts[0];
    const p = await scheme.createPaymentPayload(2, reqs);
    const proof = Buffer.from(JSON.stringify({ ...p, accepted: reqs })).toString("base64");
    const blockhash = base58(readWireBase64(p.payload.transaction).blockhash);
    return { quoteId: q.quoteId, proof, blockhash };
  };
  const execute = async ({ quoteId, proof }) => {
    const res = await request(`${svc.info.baseUrl}/executions`, {
      method: "POST",
      headers: { ...headers, "x-quote-id": quoteId, "x-payment-proof": proof },
      body: JSON.stringify({ action: "servers.provision", input: INPUT }),
    });
    const text = await res.body.text();
    if (res.statusCode !== 201) throw new Error(`execution ${res.statusCode}: ${text.slice(0, 300)}`);
  };
  const latestBlockhash = async () => {
    const res = await request(svc.info.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getLatestBlockhash", params: [] }),
    });
    return (await res.body.json()).result.value.blockhash;
  };
  return { quote, prepare, execute, settled: async () => execute(await prepare()), latestBlockhash };
}

/** Settled executions run by this many clients at once. */
export const SETTLED_CLIENTS = 8;
/** Executions prepared for one settled window (each its own quote and proof). */
export const SETTLED_EXECUTIONS = QUICK ? 1000 : 4000;

/**
 * `count` executions made ready to settle by 16 clients, before any window: each its own quote
 * and proof. Every proof is signed against the ledger's current blockhash: when the ledger
 * moved to a new one meanwhile (it replaces a blockhash handed out 60 s ago, whoever asks
 * next; asking here is what a client does), those signed against the old one are signed again.
 * A quote lives 5 minutes, longer than a preparation and its window together.
 */
export async function prepareExecutions(calls, count) {
  const prepared = new Array(count);
  let todo = [...prepared.keys()];
  for (let attempt = 0; attempt < 3 && todo.length > 0; attempt++) {
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < todo.length) {
          const i = todo[next++];
          prepared[i] = await calls.prepare();
        }
      }),
    );
    const current = await calls.latestBlockhash();
    todo = todo.filter((i) => prepared[i].blockhash !== current);
  }
  if (todo.length > 0) throw new Error(`${todo.length} proofs signed against a blockhash the ledger no longer takes`);
  return prepared;
}

/**
 * The settled window: every prepared execution POSTed from `concurrency` clients, each a paid
 * execution the service settles (it verifies the proof, co-signs it, submits it to its ledger,
 * commits, runs the action) and answers 201 — anything else fails the run. Nothing else runs
 * in this process meanwhile: no quoting, no signing. Resolves with settled executions per
 * second from the first request sent to the last answer.
 */
export async function settleAll(calls, prepared, concurrency = SETTLED_CLIENTS) {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < prepared.length) await calls.execute(prepared[next++]);
    }),
  );
  return prepared.length / ((performance.now() - t0) / 1000);
}

export async function service(svc) {
  log("6. the reference service alone…");
  const calls = await serviceCalls(svc);
  const quotesPerSecond = await throughput(16, SERVICE_WINDOW_MS, calls.quote);
  // A short warm-up, then the window, on executions prepared before it.
  await settleAll(calls, await prepareExecutions(calls, 200));
  const prepared = await prepareExecutions(calls, SETTLED_EXECUTIONS);
  const settledPerSecond = await settleAll(calls, prepared);
  return {
    quotesPerSecond,
    settledExecutionsPerSecond: settledPerSecond,
    settledExecutions: prepared.length,
    settledClients: SETTLED_CLIENTS,
  };
}
