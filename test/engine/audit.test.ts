/**
 * `paid-actions-mcp audit` (and doctor's chain check), the built CLI against a real reference
 * service over HTTP: its ledger is the chain, read through its own Solana JSON-RPC.
 */
import { spawn } from "node:child_process";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { engineFixture, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { CLI_PATH, ensureBuilt, PROJECT_ROOT } from "../helpers/process.js";
import { on } from "../helpers/proxy.js";
import { waitFor } from "../helpers/wait.js";

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_PATH, ...args], {
      cwd: PROJECT_ROOT,
      env: { ...env, NODE_OPTIONS: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c));
    child.stderr.on("data", (c: Buffer) => (stderr += c));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function auditJson(
  env: NodeJS.ProcessEnv,
  extra: string[] = [],
): Promise<{ code: number | null; report: any; stderr: string }> {
  const r = await runCli(["audit", "--json", ...extra], env);
  let report: any;
  try {
    report = JSON.parse(r.stdout);
  } catch {
    throw new Error(`audit --json printed no JSON document (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
  return { code: r.code, report, stderr: r.stderr };
}

const pay = (f: EngineFixture) => f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER });

describe("audit: the journal against the wallet's history on the chain", () => {
  let f: EngineFixture | undefined;
  beforeAll(() => ensureBuilt(), 120_000);
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it("an honest history — payments, one execution failed and refunded on chain — agrees (exit 0); a future --since has nothing to compare; a bad one is a usage error", async () => {
    let failNext = false;
    f = await engineFixture({
      rules: [
        {
          match: (r) => failNext && on("POST", "/v1/executions")(r),
          // The sandbox's provider fails this execution, then refunds it by a real transfer.
          action: { kind: "dynamic", choose: (r) => void (r.headers["x-sandbox-outcome"] = "fail") },
        },
      ],
    });
    const first = await pay(f);
    failNext = true;
    const failed = await pay(f);
    failNext = false;
    const third = await pay(f);

    // The reconciler follows the failed execution to its refund and verifies it on chain.
    const { journal, reconciler } = f.pa;
    let last = await journal.intent(failed.intentId);
    await waitFor(
      async () => {
        last = await journal.intent(failed.intentId);
        if (last!.refundState === "verified") return true;
        await reconciler!.runOnce(Number.MAX_SAFE_INTEGER);
        return false;
      },
      {
        timeoutMs: 20_000,
        intervalMs: 50,
        what: () =>
          `the refund to be verified: ${JSON.stringify(last, (_, v) => (typeof v === "bigint" ? String(v) : v))}`,
      },
    );
    expect((await f.pa.journal.intent(failed.intentId))!.refundCredit).toBe(288_000n);

    const { code, report, stderr } = await auditJson(f.env);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(report).toMatchObject({ ok: true, discrepancies: [], inFlight: [], wallet: f.t.wallet.address });
    expect(report.outflows.map((o: any) => [o.quoteId, o.amount, o.matched])).toEqual(
      [first, failed, third].map((c) => [c.quote.quoteId, "0.288", true]),
    );
    expect(report.payments.map((p: any) => p.status)).toEqual(["on_chain", "on_chain", "on_chain"]);
    expect(report.refunds).toMatchObject([
      { intentId: failed.intentId, status: "verified", credited: "0.288", chainAmount: "0.288" },
    ]);
    expect(report.scan.transactionsRead).toBeGreaterThanOrEqual(4); // 3 payments + 1 refund (+ the genesis funding)
    expect(Date.parse(report.since)).toBeLessThan((await f.pa.journal.paymentsSince(0))[0]!.signedAt);

    const plain = await runCli(["audit"], f.env);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/Read \d+ transaction\(s\)/);
    expect(plain.stdout).toContain("0 discrepancies");
    expect(plain.stdout).toContain("The journal and the chain agree.");

    const doctor = await runCli(["doctor"], f.env);
    expect(doctor.stdout).toMatch(
      /\[ok {2}\] chain: the journal and the chain agree for the last 24 h \(3 payment\(s\)/,
    );
    // The RPC is named by its origin only: an RPC URL may carry an API key in its path.
    expect(doctor.stdout).not.toContain("/solana");
    expect(doctor.stdout).toContain(`via ${new URL(f.t.sb.rpcUrl).origin})`);

    const future = await auditJson(f.env, ["--since", "2999-01-01"]);
    expect(future.code).toBe(0);
    expect(future.report).toMatchObject({
      since: "2999-01-01T00:00:00.000Z",
      ok: true,
      outflows: [],
      payments: [],
      discrepancies: [],
    });

    for (const bad of ["yesterday", "2026-02-30", "2026-11-01T12:00:00Q"]) {
      const r = await runCli(["audit", "--since", bad], f.env);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain("--since must be an ISO date or datetime");
    }
  });

  it("a settled payment the journal knows nothing of (the service lost it) is an unknown outflow naming its quote (exit 3)", async () => {
    f = await engineFixture();
    const known = await pay(f);
    // The wallet pays a quote outside the engine: settled on chain, never journaled.
    const quote = await f.t.quote("servers.provision", SMALL_SERVER);
    const proof = await f.t.proof(quote.paymentRequirement.accepts[0]);
    const confirmed = await f.t.call("POST", "/payments/confirm", {
      body: { quoteId: quote.quoteId, paymentProof: proof },
      headers: { "idempotency-key": `audit-lost-${quote.quoteId}` },
    });
    expect(confirmed.status).toBe(200);

    const { code, report } = await auditJson(f.env);
    expect(code).toBe(3);
    expect(report.ok).toBe(false);
    expect(report.discrepancies).toEqual([
      expect.objectContaining({
        kind: "unknown_outflow",
        quoteId: quote.quoteId,
        transaction: confirmed.body.transaction,
        chainAmount: "0.288",
      }),
    ]);
    expect(report.outflows.find((o: any) => o.quoteId === known.quote.quoteId)).toMatchObject({ matched: true });

    const plain = await runCli(["audit"], f.env);
    expect(plain.code).toBe(3);
    expect(plain.stdout).toContain("DISCREPANCY unknown_outflow");
    expect(plain.stdout).toContain(quote.quoteId);
    expect(plain.stdout).toContain("0.288 USDC");

    const doctor = await runCli(["doctor"], f.env);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toMatch(
      /\[FAIL\] chain: 1 discrepancy between the journal and the chain in the last 24 h \(unknown_outflow\)/,
    );
  });

  it("a payment the journal counts as landed that never settled is claimed_but_absent (exit 3)", async () => {
    f = await engineFixture();
    await pay(f);
    // A service that claimed a settlement that never happened: the journal believes a payment
    // for a real quote landed, and nothing for it ever left the wallet.
    const quote = await f.t.quote("servers.provision", SMALL_SERVER);
    const j = f.pa.journal;
    const now = Date.now();
    await j.insertIntent({
      intentId: "int_audit_ghost",
      intentKey: "audit-ghost",
      idemKey: "audit-ghost",
      service: f.pa.config!.serviceId ?? "svc",
      action: "servers.provision",
      input: SMALL_SERVER,
      fingerprint: "audit-ghost",
      agentBudget: null,
      callId: null,
      createdAt: now,
      leaseOwner: "test",
      leaseUntil: now,
    });
    // The payment row and its intent's commit in one transaction, as the engine writes a signed proof.
    const recorded = await j.recordSigned(
      {
        quoteId: quote.quoteId,
        intentId: "int_audit_ghost",
        attempt: 1,
        amount: 288_000n,
        payee: f.t.sb.keys.treasury.address,
        payer: f.t.wallet.address,
        mint: f.pa.config!.mint,
        source: null,
        blockhash: null,
        lastValidHeight: null,
        signedAt: now,
        sentAt: now,
        fate: "landed",
        tx: "5GhostTransaction1111111111111111111111111111111111111111111111111",
        claimedTx: null,
        checkedAt: now,
        watch: false,
      },
      {
        intentId: "int_audit_ghost",
        patch: {
          state: "executed",
          quoteId: quote.quoteId,
          // What an executed intent holds (the journal refuses one without): its quote, challenge, proof and execution.
          quote,
          quoteExpiresAt: Date.parse(quote.expiresAt),
          quotedAt: now,
          requirements: quote.paymentRequirement.accepts[0],
          proof: "ghost-proof",
          executionId: "exe_audit_ghost",
          execution: {
            executionId: "exe_audit_ghost",
            status: "completed",
            action: "servers.provision",
            createdAt: new Date(now).toISOString(),
          },
          amount: 288_000n,
          payee: f.t.sb.keys.treasury.address,
          settlement: "verified",
          paymentTx: "5GhostTransaction1111111111111111111111111111111111111111111111111",
          budgetState: "spent",
          budgetAmount: 288_000n,
          budgetAt: now,
          execStatus: "completed",
          leaseOwner: null,
          leaseUntil: null,
        },
        now,
        expect: { state: "new", owner: "test" },
      },
    );
    expect(recorded).toBe(true);

    const { code, report } = await auditJson(f.env);
    expect(code).toBe(3);
    expect(report.discrepancies).toEqual([
      expect.objectContaining({
        kind: "claimed_but_absent",
        quoteId: quote.quoteId,
        intentId: "int_audit_ghost",
        journalAmount: "0.288",
      }),
    ]);
    expect(report.payments.find((p: any) => p.quoteId === quote.quoteId)).toMatchObject({
      status: "absent",
      chainTransaction: null,
    });
  });

  it("an RPC that does not answer: cannot tell (exit 1), said on stderr without the RPC URL's path", async () => {
    f = await engineFixture();
    await pay(f);
    const r = await runCli(["audit"], { ...f.env, SOLANA_RPC_URL: "http://127.0.0.1:9/rpc-key-s3cr3t?api-key=s3cr3t" });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("cannot tell");
    expect(r.stderr).toContain("http://127.0.0.1:9");
    expect(r.stderr).not.toContain("s3cr3t");
  });
});
