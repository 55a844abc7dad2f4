/**
 * Bad input from the agent: at least 10,000 generated tool calls (fast-check) against the
 * real server — the built CLI (`node dist/cli.js serve`) over stdio with the SDK's Client,
 * in sandbox mode, with tight limits so that some calls are payable and most are not.
 *
 * For every call: the server answers; a refusal is a tool result with isError true and a
 * known structuredContent.error.code (an unknown tool name, or arguments that are not a
 * JSON object, may instead be a JSON-RPC InvalidParams error — the request itself is not a
 * valid tools/call); a success of a paid tool is within the per-call limit and below the
 * approval threshold (nothing was ever approved), and its arguments have no key outside the
 * tool's closed input schema (`__proto__` included). Every few batches and at the end: the
 * process is alive and answers ping and tools/list. At the end: what was committed in the
 * last 24 h, and what left the wallet on the (emulated) chain, are within the daily limit,
 * and the paid results agree with list_executions.
 *
 * The seed is printed first thing; FUZZ_SEED=<seed> replays the same 10,000 calls (the order
 * in which concurrent calls reach the server may differ). FUZZ_PATH=<path> from the failure
 * message runs only the failing batch, on a fresh server. FUZZ_DEBUG=1 prints latencies and
 * the server's stderr.
 *
 * The generated calls, their inputs and hostile values: test/helpers/fuzz/.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { formatDecimal, parseDecimal } from "../../src/domain/money.js";
import type { SandboxInfo } from "../../src/sandbox/index.js";
import { callArb } from "../helpers/fuzz/calls.js";
import { ALL_TOOLS, PAID, PAID_TOOLS } from "../helpers/fuzz/inputs.js";
import { listedExecutions, spendingOnceSettled, walletUsdc } from "../helpers/fuzz/read-back.js";
import { checkOnJournalOf, RefusalLedger } from "../helpers/refusal-ledger.js";
import { fuzzRunner, type FuzzTally } from "../helpers/fuzz/run.js";
import { sandboxStarted } from "../helpers/mcp.js";
import { CLI_PATH, PROJECT_ROOT, ensureBuilt } from "../helpers/process.js";

// ---- Limits and run size --------------------------------------------------------------

const MAX_PER_CALL = "0.5";
const MAX_PER_DAY = "3";
const APPROVAL_ABOVE = "0.4";
const BATCH = 16; // calls in flight at once
const RUNS = 625; // batches: 625 x 16 = 10,000 calls
const TOTAL_CALLS = BATCH * RUNS;
const CALL_TIMEOUT_MS = 30_000;
const LIVENESS_EVERY = 25; // batches
const RUN_TIME_LIMIT_MS = 150_000;

describe("hostile: bad input from the agent", () => {
  let home: string;
  let client: Client;
  let transport: StdioClientTransport;
  let child: ChildProcess | undefined;
  let stderr = "";
  let exitInfo: string | undefined;

  beforeAll(async () => {
    ensureBuilt();
    home = mkdtempSync(join(tmpdir(), "pam-fuzz-"));
    transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI_PATH, "serve"],
      cwd: PROJECT_ROOT,
      stderr: "pipe",
      env: {
        PATH: process.env.PATH ?? "",
        PAID_ACTIONS_HOME: home,
        PAID_ACTIONS_SANDBOX_DELAY_MS: "0",
        PAID_ACTIONS_MAX_PER_CALL: MAX_PER_CALL,
        PAID_ACTIONS_MAX_PER_DAY: MAX_PER_DAY,
        PAID_ACTIONS_APPROVAL_ABOVE: APPROVAL_ABOVE,
      },
    });
    transport.stderr?.on("data", (c: Buffer) => {
      if (stderr.length < 2_000_000) stderr += c.toString();
    });
    // No elicitation capability: an approval can only come from a human's `approve` command,
    // which nothing in this test runs.
    client = new Client({ name: "fuzz-agent", version: "1.0.0" });
    await client.connect(transport);
    child = (transport as unknown as { _process?: ChildProcess })._process;
    if (!child?.pid) throw new Error("the transport started no process");
    child.once("exit", (code, signal) => (exitInfo = `exit code ${code} signal ${signal}`));
    // Up to BATCH large requests wait for 'drain' on the child's stdin at once.
    child.stdin?.setMaxListeners(BATCH * 4);
  }, 90_000);

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    if (child && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child!.once("exit", r));
      const timer = setTimeout(() => child!.kill("SIGKILL"), 8_000);
      await gone;
      clearTimeout(timer);
    }
    if (home) rmSync(home, { recursive: true, force: true });
  }, 30_000);

  /** For each paid tool whose input schema is closed (additionalProperties: false), the keys it accepts. */
  const closedSchemas = new Map<string, Set<string>>();

  async function alive(where: string): Promise<void> {
    if (exitInfo) throw new Error(`the server process died (${where}): ${exitInfo}\n${stderr.slice(-4000)}`);
    await client.ping({ timeout: 10_000 });
    const { tools } = await client.listTools(undefined, { timeout: 10_000 });
    const names = tools.map((t) => t.name).sort();
    if (names.join(",") !== [...ALL_TOOLS].sort().join(","))
      throw new Error(`tools/list changed (${where}): ${names.join(",")}`);
  }

  let info: SandboxInfo | undefined;
  let balanceBefore = 0n;
  /** Every clean refusal the agent got. */
  const said = new RefusalLedger();
  /** The run's tally and its read-back, once every batch ran. */
  let done:
    | {
        tally: FuzzTally;
        batches: number;
        elapsed: number;
        spending: any;
        listed: Map<string, any>;
        onChain: bigint;
        paidSum: bigint;
        listedSum: bigint;
      }
    | undefined;
  const maxPerDay = parseDecimal(MAX_PER_DAY)!;
  const approvalAbove = parseDecimal(APPROVAL_ABOVE)!;
  const ran = () => {
    if (!done) throw new Error("the fuzz run did not finish: see the first failure");
    return done;
  };

  it("every paid tool publishes a closed input schema", async () => {
    await alive("start");
    for (const tool of (await client.listTools()).tools) {
      const schema = tool.inputSchema as { properties?: Record<string, unknown>; additionalProperties?: unknown };
      if (PAID.has(tool.name) && schema.additionalProperties === false)
        closedSchemas.set(tool.name, new Set(Object.keys(schema.properties ?? {})));
    }
    expect([...closedSchemas.keys()].sort()).toEqual([...PAID_TOOLS].sort());
  });

  it(`${TOTAL_CALLS} generated tool calls: every one answered cleanly, nothing paid outside the limits`, async () => {
    await sandboxStarted(home); // the first tools/list does not wait for the sandbox
    info = JSON.parse(readFileSync(join(home, "sandbox", "sandbox.json"), "utf8")) as SandboxInfo;
    balanceBefore = await walletUsdc(info);

    const seed =
      process.env.FUZZ_SEED !== undefined
        ? Number(process.env.FUZZ_SEED)
        : (Date.now() ^ Math.floor(Math.random() * 2 ** 31)) | 0;
    const path = process.env.FUZZ_PATH;
    // Printed first, so that even a crash or a timeout leaves the seed in the log.
    console.log(
      `[fuzz] fast-check seed ${seed}${path ? ` path ${path}` : ""} — replay: FUZZ_SEED=${seed} npx vitest run test/hostile/fuzz.test.ts`,
    );
    const { tally, runOne } = fuzzRunner({
      client,
      closedSchemas,
      maxPerCall: MAX_PER_CALL,
      approvalAbove: APPROVAL_ABOVE,
      callTimeoutMs: CALL_TIMEOUT_MS,
      onRefusal: (e) => said.record(e),
    });
    let batches = 0;
    const started = Date.now();

    let firstFailure: string | undefined;
    const details = await fc.check(
      fc.asyncProperty(fc.array(callArb, { minLength: BATCH, maxLength: BATCH }), async (batch) => {
        // Every call of the batch runs to its end before a failure is reported, so nothing is left in flight.
        const settled = await Promise.allSettled(batch.map(runOne));
        batches++;
        const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
        if (failed) {
          firstFailure ??= (failed.reason as Error)?.message ?? String(failed.reason);
          throw failed.reason;
        }
        if (batches % LIVENESS_EVERY === 0) await alive(`after ${tally.sent} calls`);
      }),
      {
        seed,
        ...(path ? { path } : {}),
        numRuns: RUNS,
        // The server keeps state across runs (journal, spending): shrinking would replay
        // against a different state, so the first failing batch is reported as generated.
        endOnFailure: true,
        interruptAfterTimeLimit: RUN_TIME_LIMIT_MS,
        markInterruptAsFailure: true,
      },
    );
    if (details.failed) {
      // fast-check's own report prints the whole batch (megabytes of generated strings): a short one instead.
      throw new Error(
        `fuzz failed after ${details.numRuns} batch(es) (${tally.sent} calls) — replay: FUZZ_SEED=${details.seed} FUZZ_PATH=${details.counterexamplePath ?? ""}` +
          `${details.interrupted ? ` (interrupted: the run exceeded ${RUN_TIME_LIMIT_MS} ms)` : ""}\n${firstFailure ?? (details.errorInstance as Error)?.message ?? "?"}\n[server stderr, last 2000 chars]\n${stderr.slice(-2000)}`,
      );
    }

    await alive("end");
    const elapsed = Date.now() - started;

    // Settle: wait (bounded) for any intent still open to finish, then compare.
    const spending = await spendingOnceSettled(client);
    const listed = await listedExecutions(client);
    const balanceAfter = await walletUsdc(info);
    const paidSum = [...tally.paid.values()].reduce((a, b) => a + b, 0n);
    const listedSum = [...listed.values()].reduce((a, i) => a + (parseDecimal(i.amount) ?? 0n), 0n);
    const onChain = balanceBefore - balanceAfter;
    done = { tally, batches, elapsed, spending, listed, onChain, paidSum, listedSum };

    console.log(
      `[fuzz] ${tally.sent} calls in ${(elapsed / 1000).toFixed(1)} s (${batches} batches of ${BATCH}); ${tally.paid.size} paid (${formatDecimal(paidSum)} USDC), ` +
        `${listed.size} in list_executions, ${formatDecimal(onChain)} USDC left the wallet; committedLast24h ${spending.committedLast24h}; ` +
        `${tally.protocolErrors} JSON-RPC InvalidParams; daily cap hit ${tally.dailyCapHit}×\n[fuzz] kinds ${JSON.stringify(Object.fromEntries(tally.kinds))}\n[fuzz] outcomes ${JSON.stringify(Object.fromEntries([...tally.codes].sort()))}`,
    );
    expect(tally.sent).toBe(TOTAL_CALLS);
  }, 240_000);

  it("the whole run paid within the limits: the journal's view, the tool results' and the chain's", () => {
    const { spending, listed, onChain, paidSum, listedSum } = ran();
    expect(parseDecimal(spending.committedLast24h)!).toBeLessThanOrEqual(maxPerDay);
    expect(parseDecimal(spending.spentTotal)!).toBeLessThanOrEqual(maxPerDay);
    expect(paidSum).toBeLessThanOrEqual(maxPerDay);
    expect(listedSum).toBeLessThanOrEqual(maxPerDay);
    expect(onChain).toBeGreaterThanOrEqual(0n);
    expect(onChain).toBeLessThanOrEqual(maxPerDay);
    for (const [id, item] of listed) {
      expect(parseDecimal(item.amount)!, id).toBeLessThanOrEqual(approvalAbove);
    }
  });

  it("what the tools reported as paid is what the journal lists, and the chain moved that much", () => {
    const { tally, spending, listed, onChain, listedSum } = ran();
    // Anything more in the list is an intent whose call ended with its outcome open (none
    // expected while the service answers).
    for (const [id, amount] of tally.paid) {
      expect(listed.has(id), `paid execution ${id} missing from list_executions`).toBe(true);
      expect(parseDecimal(listed.get(id).amount)).toBe(amount);
    }
    for (const [id, item] of listed) {
      if (!tally.paid.has(id))
        expect(
          tally.openIntents.has(item.intentId),
          `execution ${id} (${item.intentId}) in list_executions, but no tool result reported it`,
        ).toBe(true);
    }
    if (listed.size === tally.paid.size && [...listed.values()].every((i) => i.status !== "refunded")) {
      // Every paid execution is still paid (none refunded): the chain moved exactly that much.
      expect(onChain).toBe(listedSum);
    }
    expect(parseDecimal(spending.committedLast24h)!).toBeGreaterThanOrEqual(onChain);
  });

  it("every refusal that said nothing was charged or paid: no transfer for its purchase on the ledger", async () => {
    ran();
    const side = {
      rpcUrl: info!.rpcUrl,
      mint: info!.asset,
      wallet: info!.owner ?? "",
      facilitatorUrl: info!.facilitatorUrl,
    };
    const checked = await checkOnJournalOf(said, { PATH: process.env.PATH ?? "", PAID_ACTIONS_HOME: home }, side);
    expect(checked.claims).toBeGreaterThan(1000);
  }, 60_000);

  it("the run exercised what it claims to: payments happened, and limits refused the rest", () => {
    const { tally } = ran();
    expect(tally.paid.size).toBeGreaterThan(0);
    expect(tally.codes.get("invalid_input") ?? 0).toBeGreaterThan(1000);
    expect(tally.codes.get("budget_exceeded") ?? 0).toBeGreaterThan(0);
    expect(tally.codes.get("approval_required") ?? 0).toBeGreaterThan(0);
  });

  it("the embedded service never failed on what it was sent, and the server never died", () => {
    const { tally } = ran();
    if (process.env.FUZZ_DEBUG)
      console.log(
        `[fuzz] latency ${JSON.stringify(Object.fromEntries([...tally.latency].map(([k, v]) => [k, { n: v.n, avgMs: Math.round(v.total / v.n), maxMs: v.max }])))}`,
      );
    if (process.env.FUZZ_DEBUG) console.log(`[fuzz] server stderr:\n${stderr.slice(0, 20_000)}`);
    expect(stderr).not.toMatch(/internal error on req_/);
    expect(exitInfo).toBeUndefined();
  });
});
