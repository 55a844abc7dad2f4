/**
 * Chaos: thousands of paid calls from an MCP client, through the built server over stdio,
 * through a proxy that injects faults between the server and the reference service —
 * resets before and after forwarding, delays past the client timeout, truncated and
 * non-JSON bodies, 502/503/429 with and without Retry-After, duplicated deliveries — while
 * the server itself is SIGKILLed and restarted at random points. Afterwards: every intent
 * is final or marked for attention, no intent paid twice or executed twice, spend within
 * the caps, and the journal agrees with the service and the ledger. The seed is printed;
 * CHAOS_SEED=<seed> replays a run, CHAOS_CALLS=<n> changes its size. It runs on each rail
 * (test/helpers/rails.ts); on EVM with an eighth of the calls (each settles on anvil, one
 * facilitator transaction at a time: 500 took three minutes here) and a 20 USDC daily cap, as
 * the sandbox's EVM agent key holds 25 USDC (EVM has no delegate: the key's balance is the ceiling).
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Journal } from "../../src/engine/journal/sqlite.js";
import { CLI_PATH, ensureBuilt } from "../helpers/process.js";
import { startProxy, type Proxy, type ProxyAction } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { serviceEnv } from "../helpers/engine.js";
import { runCli } from "../helpers/mcp.js";
import { prng } from "../helpers/prng.js";
import { RefusalLedger, sandboxSide } from "../helpers/refusal-ledger.js";
import { RAILS } from "../helpers/rails.js";

const SEED = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
const CHAOS_CALLS = Number(process.env.CHAOS_CALLS ?? 2000);
const CONCURRENCY = 12;
const FAULT_RATE = 0.07;

interface Intent {
  key: string;
  input: { region: string; plan: string; durationHours: number; image: string };
  attempts: number;
  result?: { executionId: string; quoteId: string; amount: string };
  refusal?: string;
}

const FAULTS: Array<() => ProxyAction> = [
  () => ({ kind: "reset-before" }),
  () => ({ kind: "reset-after" }),
  () => ({ kind: "delay", ms: 700 }),
  () => ({ kind: "truncate" }),
  () => ({ kind: "garbage" }),
  () => ({ kind: "status", status: 502, body: { error: { code: "bad_gateway", message: "upstream" } } }),
  () => ({
    kind: "status",
    status: 503,
    body: { error: { code: "unavailable", message: "later" } },
    headers: { "retry-after": "0" },
  }),
  () => ({ kind: "status", status: 503, body: { error: { code: "unavailable", message: "later" } } }),
  () => ({
    kind: "status",
    status: 429,
    body: { error: { code: "rate_limited", message: "slow down" } },
    headers: { "retry-after": "0" },
  }),
  () => ({ kind: "status", status: 429, body: { error: { code: "rate_limited", message: "slow down" } } }),
  () => ({ kind: "duplicate" }),
];

describe.each(RAILS)("chaos on $name: faults between server and service, and a server killed at random", (rail) => {
  const CALLS = rail.name === "evm" ? Math.ceil(CHAOS_CALLS / 8) : CHAOS_CALLS;
  const MAX_PER_DAY_USDC = rail.name === "evm" ? 20n : 40n;
  let t: TestSandbox;
  /** The payer's and the v1 payee's balances on the rail's ledger before the run. */
  let start: { payer: bigint; payee: bigint };
  let proxy: Proxy;
  let home: string;
  let env: Record<string, string>;
  const stderr: string[] = [];
  const outputs: string[] = [];
  /** Every refusal the agent got, retried or final. */
  const said = new RefusalLedger();
  let faultsOn = true;

  beforeAll(async () => {
    ensureBuilt();
    process.stderr.write(
      `chaos seed ${SEED} — replay with CHAOS_SEED=${SEED} npx vitest run test/hostile/chaos.test.ts\n`,
    );
    t = await startTestSandbox({
      ...rail.sandbox,
      rateLimit: { perSecond: 100_000, burst: 100_000 },
      providerDelayMs: 0,
    });
    start = { payer: await rail.balance(t, rail.payer(t)), payee: await rail.balance(t, rail.treasury(t)) };
    const rng = prng(SEED ^ 0x5eed);
    proxy = await startProxy(t.sb.baseUrl.replace(/\/v1$/, ""), [
      {
        match: () => true,
        action: {
          kind: "dynamic",
          choose: () => (faultsOn && rng() < FAULT_RATE ? FAULTS[Math.floor(rng() * FAULTS.length)]!() : undefined),
        },
      },
    ]);
    home = mkdtempSync(join(tmpdir(), "pam-chaos-"));
    writeFileSync(join(home, "config.json"), JSON.stringify({ http: { timeoutMs: 400, maxAttempts: 4 } }));
    env = {
      ...serviceEnv(t, home, `${proxy.url}/v1`),
      ...rail.env(t),
      PAID_ACTIONS_CONFIG: join(home, "config.json"),
      PAID_ACTIONS_MAX_PER_CALL: "1",
      PAID_ACTIONS_MAX_PER_DAY: MAX_PER_DAY_USDC.toString(),
      PAID_ACTIONS_APPROVAL_ABOVE: "100",
    };
  }, 120_000);

  afterAll(async () => {
    await proxy?.close();
    await t?.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  async function startServer() {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI_PATH, "serve"],
      env,
      stderr: "pipe",
    });
    let log = "";
    transport.stderr?.on("data", (c: Buffer) => (log += c.toString()));
    const client = new Client({ name: "chaos-agent", version: "1.0.0" });
    await client.connect(transport);
    return { client, transport, log: () => log };
  }

  /** The run's intents, once `run` has driven every one to an answer. */
  let intents: Intent[] | undefined;
  let journal: Journal | undefined;
  /** The journal's intents after the run. */
  let rows: Awaited<ReturnType<Journal["intentsSince"]>> = [];
  afterAll(() => journal?.close());

  /** What a step goes on from; a clear failure when the run failed. */
  const ran = (): Intent[] => {
    if (!intents || !journal) throw new Error("the chaos run did not finish: see the first failure");
    return intents;
  };
  const image = (input: string) => (JSON.parse(input) as { image?: string }).image;
  const settledAtService = () =>
    t.sb.db
      .prepare(
        `SELECT p.quote_id, p.transaction_sig, p.amount, q.input FROM payments p JOIN quotes q ON q.quote_id = p.quote_id WHERE p.status = 'settled'`,
      )
      .all() as any[];

  /** Rounds under faults, each ended by a SIGKILL once a random number of calls completed; then a final pass. */
  async function run(all: Intent[], rng: () => number) {
    const queue = [...all];
    const started = Date.now();
    let kills = 0;
    let rounds = 0;

    const settle = (intent: Intent, result: any) => {
      outputs.push(JSON.stringify(result));
      const sc = result?.structuredContent;
      if (result?.isError && sc?.error) said.record(sc.error);
      if (!result?.isError && sc?.executionId) {
        intent.result = { executionId: sc.executionId, quoteId: sc.quote.quoteId, amount: sc.quote.amount };
        return;
      }
      const code = sc?.error?.code ?? "unknown";
      const retry = [
        "service_unavailable",
        "outcome_unknown",
        "busy",
        "payment_invalid",
        "service_error",
        "payment_failed",
      ].includes(code);
      if (retry && intent.attempts < 8) queue.push(intent);
      else intent.refusal = code;
    };

    // Rounds: run the queue until a random number of calls completed, then SIGKILL the server mid-traffic.
    while (queue.length > 0 && rounds < 200 && Date.now() - started < 420_000) {
      rounds++;
      const server = await startServer();
      const budget = 40 + Math.floor(rng() * 160);
      let completed = 0;
      let killed = false;
      await new Promise<void>((roundDone) => {
        let inflight = 0;
        const pump = () => {
          if (killed) return;
          if (completed >= budget && queue.length > 0) {
            killed = true;
            kills++;
            process.kill(server.transport.pid!, "SIGKILL");
            return;
          }
          while (inflight < CONCURRENCY && queue.length > 0 && !killed) {
            const intent = queue.shift()!;
            intent.attempts++;
            inflight++;
            void server.client
              .callTool(
                { name: "servers_provision", arguments: { ...intent.input, intentKey: intent.key } },
                undefined,
                { timeout: 20_000 },
              )
              .then(
                (r) => settle(intent, r),
                () => queue.push(intent), // the connection died (or the call timed out): retry with the same key
              )
              .finally(() => {
                inflight--;
                completed++;
                if (inflight === 0 && (queue.length === 0 || killed)) roundDone();
                else pump();
              });
          }
          if (inflight === 0) roundDone();
        };
        pump();
      });
      stderr.push(server.log());
      await server.client.close().catch(() => undefined);
    }

    // Final pass without faults: every call the agent did not get an answer for is retried with its key.
    faultsOn = false;
    const last = await startServer();
    for (const intent of all) {
      if (intent.result || intent.refusal) continue;
      const r = await last.client.callTool(
        { name: "servers_provision", arguments: { ...intent.input, intentKey: intent.key } },
        undefined,
        { timeout: 30_000 },
      );
      intent.attempts++;
      outputs.push(JSON.stringify(r));
      const sc = r.structuredContent as any;
      if (r.isError && sc?.error) said.record(sc.error);
      if (!r.isError && sc?.executionId)
        intent.result = { executionId: sc.executionId, quoteId: sc.quote.quoteId, amount: sc.quote.amount };
      else intent.refusal = sc?.error?.code ?? "unknown";
    }
    // A few resources and mirror tools, for the secrets scan below.
    for (const uri of ["paid-actions://executions", "paid-actions://spending"])
      outputs.push(JSON.stringify(await last.client.readResource({ uri })));
    outputs.push(JSON.stringify(await last.client.callTool({ name: "list_executions", arguments: { limit: 100 } })));
    outputs.push(JSON.stringify(await last.client.callTool({ name: "get_spending", arguments: {} })));
    stderr.push(last.log());
    await last.client.close();

    const paid = all.filter((i) => i.result);
    const refusals = new Map<string, number>();
    for (const i of all) if (i.refusal) refusals.set(i.refusal, (refusals.get(i.refusal) ?? 0) + 1);
    process.stderr.write(
      `chaos seed ${SEED}: ${CALLS} intents, ${paid.length} paid, refusals ${JSON.stringify(Object.fromEntries(refusals))}, ` +
        `${kills} kills in ${rounds} rounds, ${proxy.seen.length} requests through the proxy, ${Math.round((Date.now() - started) / 1000)} s\n`,
    );
  }

  it(`${CALLS} paid calls under faults and server kills each end with an answer`, async () => {
    const rng = prng(SEED);
    const plans = ["nano", "small"];
    const all: Intent[] = Array.from({ length: CALLS }, (_, i) => ({
      key: `chaos-${SEED}-${i}`,
      input: {
        region: "eu-west-1",
        plan: plans[Math.floor(rng() * plans.length)]!,
        durationHours: 1 + Math.floor(rng() * 4),
        image: `img-${SEED}-${i}`,
      },
      attempts: 0,
    }));
    await run(all, rng);
    intents = all;
    journal = new Journal(join(home, "journal.sqlite"));
    rows = await journal.intentsSince(0);
    expect(all.filter((i) => i.result).length).toBeGreaterThan(CALLS / 20);
  }, 600_000);

  it("every intent is final or marked for attention: nothing lost", () => {
    const byKey = new Map(rows.map((r) => [r.intentKey, r]));
    for (const intent of ran()) {
      const row = byKey.get(intent.key);
      expect(row, `intent ${intent.key} is in the journal`).toBeDefined();
      expect(["executed", "refused", "failed", "attention"], `intent ${intent.key} (seed ${SEED})`).toContain(
        row!.state,
      );
      if (intent.result) {
        expect(row!.state).toBe("executed");
        expect(row!.executionId).toBe(intent.result.executionId);
      }
    }
  });

  it("per intent at most one settled payment and at most one execution at the service: nothing paid twice", () => {
    ran();
    const paidPerIntent = new Map<string, number>();
    for (const p of settledAtService())
      paidPerIntent.set(image(p.input)!, (paidPerIntent.get(image(p.input)!) ?? 0) + 1);
    const execPerIntent = new Map<string, number>();
    for (const e of t.sb.db.prepare(`SELECT input FROM executions`).all() as any[])
      execPerIntent.set(image(e.input)!, (execPerIntent.get(image(e.input)!) ?? 0) + 1);
    for (const [img, n] of paidPerIntent) expect(n, `settled payments for ${img} (seed ${SEED})`).toBe(1);
    for (const [img, n] of execPerIntent) expect(n, `executions for ${img} (seed ${SEED})`).toBe(1);
  });

  it("the journal agrees with the service, and the ledger with both, within the caps", async () => {
    ran();
    // Every settled payment is one the journal holds as spent.
    const settled = settledAtService();
    const byQuote = new Map(rows.filter((r) => r.quoteId).map((r) => [r.quoteId!, r]));
    for (const s of settled) {
      const row = byQuote.get(s.quote_id);
      expect(row, `a settled payment for quote ${s.quote_id} the journal does not know (seed ${SEED})`).toBeDefined();
      expect(["spent", "reserved"]).toContain(row!.budgetState);
      if (row!.paymentTx) expect(row!.paymentTx).toBe(s.transaction_sig);
      expect(row!.amount).toBe(BigInt(s.amount));
    }
    for (const row of rows.filter((r) => r.executionId)) {
      const e = t.sb.db.prepare(`SELECT quote_id FROM executions WHERE execution_id = ?`).get(row.executionId) as any;
      expect(e?.quote_id, `execution ${row.executionId} at the service (seed ${SEED})`).toBe(row.quoteId);
    }
    // ...and with the ledger: what left the wallet is exactly what the service settled, within the caps,
    // and the payee received exactly that.
    const settledTotal = settled.reduce((sum, s) => sum + BigInt(s.amount), 0n);
    const spent = start.payer - (await rail.balance(t, rail.payer(t)));
    expect(spent).toBe(settledTotal);
    expect((await rail.balance(t, rail.treasury(t))) - start.payee).toBe(settledTotal);
    expect(spent).toBeLessThanOrEqual(MAX_PER_DAY_USDC * 1_000_000n);
    const usage = await journal!.usage(Date.now());
    expect(usage.day).toBeGreaterThanOrEqual(spent);
    expect(usage.day).toBeLessThanOrEqual(MAX_PER_DAY_USDC * 1_000_000n);
  });

  it("every refusal that said nothing was charged or paid: no transfer for its purchase, its kept proofs replayed", async () => {
    ran();
    const checked = await said.check({ ...sandboxSide(t), journals: journal!, seen: proxy.seen });
    process.stderr.write(`chaos seed ${SEED}: the ledger held ${JSON.stringify(checked)} refusals true\n`);
  }, 120_000);

  it("`audit` reads the wallet's history from the ledger's RPC and agrees with the journal", async () => {
    const paid = ran().filter((i) => i.result);
    const audit = await runCli(["audit", "--json"], env, 120_000);
    const report = JSON.parse(audit.stdout || "{}") as {
      ok: boolean;
      discrepancies: unknown[];
      payments: unknown[];
      inFlight: unknown[];
      scan: unknown;
    };
    const summary = JSON.stringify(
      { discrepancies: report.discrepancies, inFlight: report.inFlight, scan: report.scan },
      null,
      1,
    ).slice(0, 6000);
    expect(audit.code, `audit (seed ${SEED}): ${audit.stderr}\n${summary}`).toBe(0);
    expect(report.ok).toBe(true);
    expect(report.discrepancies).toEqual([]);
    expect(report.payments.length).toBeGreaterThanOrEqual(paid.length);
  }, 150_000);

  it("no secret in stderr, tool results, resources or transcripts", () => {
    ran();
    const proofs = rows.map((r) => r.proof).filter(Boolean) as string[];
    const wallet = readFileSync(t.sb.walletPath, "utf8").trim();
    const seed = Buffer.from(Uint8Array.from(JSON.parse(wallet) as number[]).subarray(0, 32));
    // On EVM the agent's key file too (0x and 64 hex digits), as written and without its prefix.
    const evmKey = t.sb.evm ? readFileSync(t.sb.evm.agentKeyPath, "utf8").trim() : undefined;
    const keys = evmKey ? [evmKey, evmKey.slice(2)] : [];
    const secrets = [t.sb.apiKey, wallet, seed.toString("hex"), seed.toString("base64"), ...keys, ...proofs];
    const transcripts = readdirSync(join(home, "transcripts")).map((f) =>
      readFileSync(join(home, "transcripts", f), "utf8"),
    );
    expect(transcripts.length).toBeGreaterThan(0);
    const haystack = [...stderr, ...outputs, ...transcripts].join("\n");
    for (const secret of secrets.slice(0, 4 + keys.length))
      expect(haystack.includes(secret), "a secret leaked into stderr, tool results, resources or transcripts").toBe(
        false,
      );
    // Proofs are long base64 strings: look only inside long base64 runs (linear, not proofs x haystack).
    const proofSet = new Set(proofs);
    const minProof = Math.min(...proofs.map((p) => p.length));
    for (const run of haystack.match(/[A-Za-z0-9+/]{200,}={0,2}/g) ?? []) {
      if (run.length < minProof) continue;
      expect(proofSet.has(run) || proofs.some((p) => run.includes(p)), "a payment proof leaked").toBe(false);
    }
  });
});
