/**
 * Receipts on the EVM rail (eip155:84532, the sandbox's anvil ledger), over the built CLI with
 * a real journal: a paid action on the v1 service (approved by a person), a refunded
 * execution, a paid_fetch of the sandbox's own resource (JWS offers and receipts by its key),
 * a paid_fetch of a stock @x402/express seller signing offers and receipts in EIP-712 with the
 * package's own issuer, and a purchase that ended in `attention`. Each receipt is signed with
 * EIP-191 by the agent's EVM key — the authorization's signer — carries the signed
 * transaction with the authorization in its calldata, and holds under `receipt verify --rpc`
 * (the anvil node); changing the amount, the payee, the transaction, the approval or the
 * outcome makes it fail (exit 3), naming what changed. The paid action's receipt carries the
 * v1 service's signed offer and receipt for the EVM requirement it paid.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE_SEPOLIA } from "../../src/domain/networks.js";
import type { ReceiptDocument } from "../../src/engine/index.js";
import { engineFixture, refusal, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { runCli } from "../helpers/mcp.js";
import { ensureBuilt } from "../helpers/process.js";
import { on } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { startSeller, stopAllSellers, type Seller } from "../helpers/sellers.js";
import { waitFor } from "../helpers/wait.js";

type Which = "action" | "refunded" | "own" | "eip712" | "attention";
let t: TestSandbox;
let f: EngineFixture;
let dir: string;
let stock: Seller;
let liar: Seller;
const sellerKey = generatePrivateKey();
const sellerAddress = privateKeyToAccount(sellerKey).address;
const ids = {} as Record<Which, string>;
const results: Record<string, { seller?: unknown } | null> = {};

const cli = (args: string[]) => runCli(args, f.env as Record<string, string>, 60_000);

/** Pays an action that needs a person's approval: asked, approved as at the console, paid with the approvalId. */
async function payApproved(fail: { next: boolean }, failIt: boolean) {
  const req = { action: "servers.provision", input: SMALL_SERVER };
  const asked = await refusal(f.pa.engine.pay(req, { callId: `call_${Math.random().toString(36).slice(2, 12)}` }));
  expect(asked.code).toBe("approval_required");
  const approvalId = (asked.context as { approvalId: string }).approvalId;
  await f.pa.engine.approve(approvalId, "console");
  fail.next = failIt;
  const paid = await f.pa.engine.pay({ ...req, approvalId });
  fail.next = false;
  return paid;
}

beforeAll(async () => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), "pam-receipts-evm-"));
  t = await startTestSandbox({ evm: true });
  const payTo = privateKeyToAccount(generatePrivateKey()).address;
  const common = { facilitatorUrl: t.sb.facilitatorUrl, network: BASE_SEPOLIA, payTo };
  stock = await startSeller({ ...common, framework: "express", offerReceipt: { eip712: sellerKey } });
  liar = await startSeller({ ...common, framework: "express", lie: "500-after-settle" });
  const own = t.sb.baseUrl.replace(/\/v1$/, "");
  const fail = { next: false };
  f = await engineFixture({
    t,
    rules: [
      {
        match: (r) => fail.next && on("POST", "/v1/executions")(r),
        action: { kind: "dynamic", choose: (r) => void (r.headers["x-sandbox-outcome"] = "fail") },
      },
    ],
    env: {
      PAID_ACTIONS_NETWORKS: "base-sepolia",
      PAID_ACTIONS_NETWORK: "",
      PAID_ACTIONS_EVM_WALLET: t.sb.evm!.agentKeyPath,
      PAID_ACTIONS_EVM_RPC_URL: t.sb.evm!.rpcUrl,
      PAID_ACTIONS_ALLOW_ORIGINS: [own, stock.url, liar.url].join(","),
      PAID_ACTIONS_APPROVAL_ABOVE: "0.1",
    },
    open: { reconcile: true, reconcilerIntervalMs: { min: 50, max: 200 } },
  });
  const action = await payApproved(fail, false);
  ids.action = action.executionId;
  results.action = action.payment;
  ids.refunded = (await payApproved(fail, true)).executionId;
  const own1 = await f.pa.engine.payFetch({ url: `${own}/x402/weather?city=Porto` });
  ids.own = own1.result.intentId!;
  results.own = own1.result.payment;
  const signed = await f.pa.engine.payFetch({ url: `${stock.url}/paid/data` });
  ids.eip712 = signed.result.intentId!;
  results.eip712 = signed.result.payment;
  const lied = await refusal(f.pa.engine.payFetch({ url: `${liar.url}/paid/data`, intentKey: "evm-attention" }));
  expect(lied.code).toBe("execution_rejected");
  ids.attention = (await f.pa.journal.intentByKey("evm-attention"))!.intentId;
  await waitFor(
    async () => {
      const byExec = async (id: string) => (await f.pa.journal.intentByExecution(id))!;
      const [a, r] = [await byExec(ids.action), await byExec(ids.refunded)];
      const fetches = await Promise.all([ids.own, ids.eip712].map((id) => f.pa.journal.intent(id)));
      const done =
        a.execStatus === "completed" &&
        a.settlement === "verified" &&
        r.refundState === "verified" &&
        fetches.every((i) => i?.settlement === "verified");
      if (!done) await f.pa.reconciler!.runOnce(Number.MAX_SAFE_INTEGER);
      return done;
    },
    { timeoutMs: 40_000, intervalMs: 100, what: "the reconciler to settle every EVM purchase on chain" },
  );
}, 180_000);

afterAll(async () => {
  await f?.close();
  await stopAllSellers();
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** `receipt ID --out FILE` over the built CLI: the file and the document in it. */
async function made(id: string): Promise<{ file: string; doc: ReceiptDocument }> {
  const file = join(dir, `${id}.json`);
  const run = await cli(["receipt", id, "--out", file]);
  expect(run.code, run.stderr).toBe(0);
  return { file, doc: JSON.parse(readFileSync(file, "utf8")) as ReceiptDocument };
}

const verify = (file: string) => cli(["receipt", "verify", file, "--rpc", t.sb.evm!.rpcUrl]);

describe("receipt on EVM: signed by the authorization's key, the transaction and its authorization carried, on chain as stated", () => {
  it.each(["action", "refunded", "own", "eip712", "attention"] as const)(
    "the %s purchase's receipt holds under verify --rpc",
    async (which) => {
      const { file, doc } = await made(ids[which]);
      const agent = t.sb.evm!.agentAddress;
      expect(doc).toMatchObject({
        receipt: "paid-actions/1",
        payment: {
          network: BASE_SEPOLIA,
          payer: agent,
          source: agent,
          memo: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        },
        signature: { scheme: "eip191", signer: agent },
      });
      expect(doc.chain).toMatchObject({
        failed: false,
        blockHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        finality: expect.stringMatching(/^(latest|safe|finalized), \d+ confirmations?$/),
        memos: [doc.payment.memo],
      });
      expect(doc.chain!.transfer).toMatchObject({
        source: agent,
        authority: agent,
        destination: doc.payment.payee,
        amount: expect.any(String),
      });
      const wire = JSON.parse(doc.chain!.wire) as { raw: string; authorization: Record<string, string> };
      expect(wire.raw).toMatch(/^0x[0-9a-f]+$/);
      expect(wire.authorization).toMatchObject({ from: agent, to: doc.payment.payee, nonce: doc.payment.memo });
      const run = await verify(file);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toMatch(/ok {3}signature: signed by the payer 0x/);
      expect(run.stdout).toMatch(
        new RegExp(`ok {3}transaction: 0x[0-9a-f]{64}: signed by 0x[0-9a-fA-F]{40}, ${agent}`),
      );
      expect(run.stdout).toMatch(/ok {3}on chain: 0x[0-9a-f]{64} is on chain in block \d+ \((latest|safe|finalized), /);
    },
  );

  it("says what was bought, the refund seen on chain, and the attention purchase's landed transfer", async () => {
    const action = (await made(ids.action)).doc;
    expect(action.approval).toMatchObject({ status: "used", channel: "person" });
    expect(action.outcome).toMatchObject({ status: "completed", settlement: "verified", refunds: [] });
    const refunded = (await made(ids.refunded)).doc;
    expect(refunded.outcome).toMatchObject({ status: "refunded", refunds: [{ state: "verified" }] });
    expect(refunded.outcome.refunds[0]!.seenOnChain).toBe(refunded.payment.amount);
    const attention = (await made(ids.attention)).doc;
    expect(attention.outcome).toMatchObject({ state: "attention", status: null });
    expect(attention.payment.fate).toBe("landed");
    expect(JSON.stringify([action, refunded, attention])).not.toContain(t.sb.apiKey);
  });

  it("a seller's EIP-712 offer and receipt are verified through the EVM rail, kept, and in the receipt", async () => {
    expect(results.eip712).toMatchObject({
      seller: { signed: true, offer: "verified", receipt: "verified", signer: sellerAddress },
    });
    expect(results.own).toMatchObject({ seller: { signed: true, offer: "verified", receipt: "verified" } });
    const { file, doc } = await made(ids.eip712);
    expect(doc.seller!.offer).toMatchObject({ state: "verified", signer: sellerAddress, signed: { format: "eip712" } });
    expect(doc.seller!.receipt).toMatchObject({
      state: "verified",
      signer: sellerAddress,
      signed: { format: "eip712" },
    });
    const run = await verify(file);
    expect(run.code, run.stdout).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`ok {3}seller\\.offer: verified by ${sellerAddress}`));
    expect(run.stdout).toMatch(new RegExp(`ok {3}seller\\.receipt: verified by ${sellerAddress}`));
  });

  it("a paid action's receipt carries the service's signed offer for the EVM requirement paid, and its receipt", async () => {
    const kid = t.sb.sellerKey!.kid;
    expect(results.action).toMatchObject({
      seller: { signed: true, offer: "verified", receipt: "verified", signer: kid },
    });
    const { file, doc } = await made(ids.action);
    expect(doc.bought.request).toMatchObject({ method: "POST", url: `${t.sb.baseUrl}/executions` });
    expect(doc.requirement).toMatchObject({ network: BASE_SEPOLIA });
    for (const part of [doc.seller!.offer, doc.seller!.receipt])
      expect(part).toMatchObject({ state: "verified", signer: kid, signed: { format: "jws" }, problems: [] });
    const stated = (jws: string) => JSON.parse(Buffer.from(jws.split(".")[1]!, "base64url").toString("utf8"));
    expect(stated(doc.seller!.offer!.signed!.signature)).toMatchObject({ network: BASE_SEPOLIA });
    expect(stated(doc.seller!.receipt!.signed!.signature)).toMatchObject({
      network: BASE_SEPOLIA,
      payer: doc.payment.payer,
      transaction: doc.payment.transaction,
    });
    const run = await verify(file);
    expect(run.code, run.stdout).toBe(0);
    expect(run.stdout).toMatch(/ok {3}seller\.offer: verified by did:key:/);
    expect(run.stdout).toMatch(/ok {3}seller\.receipt: verified by did:key:/);
  });

  it("a seller's EIP-712 offer signed by another key than it claims is not verified", async () => {
    const { file, doc } = await made(ids.eip712);
    // The payload the seller signed, changed: its signature recovers another address, so the receipt's word no longer holds.
    const offer = doc.seller!.offer!.signed!;
    offer.payload = { ...offer.payload, amount: "1" };
    writeFileSync(file, JSON.stringify(doc));
    const run = await verify(file);
    expect(run.code).toBe(3);
    expect(run.stdout).toMatch(/FAIL seller\.offer: the receipt says verified, it is mismatch/);
  });
});

/** Each field a person might change, and what verify names when it is. */
const EDITS: Array<[string, (d: any) => void, RegExp]> = [
  ["the amount", (d) => (d.payment.amount = "0.001"), /FAIL payment\.amount/],
  ["the payee", (d) => (d.payment.payee = "0x000000000000000000000000000000000000dEaD"), /FAIL payment\.payee/],
  [
    "the transaction",
    (d) => (d.payment.transaction = d.payment.transaction.replace(/.$/, (c: string) => (c === "0" ? "1" : "0"))),
    /FAIL payment(\.transaction)?:/,
  ],
  ["the approval", (d) => (d.approval.decidedAt = "2020-01-01T00:00:00.000Z"), /FAIL approval:/],
  ["the outcome", (d) => (d.outcome.status = "failed"), /FAIL outcome:/],
  ["the nonce", (d) => (d.payment.memo = `0x${"ab".repeat(32)}`), /FAIL payment(\.transaction)?:/],
  ["the block", (d) => (d.chain.blockHash = `0x${"cd".repeat(32)}`), /FAIL chain:/],
];

describe("receipt verify on EVM: a receipt edited in any one field fails, naming it", () => {
  it.each(EDITS)("changing %s makes verify exit 3", async (_what, edit, named) => {
    const { doc } = await made(ids.action);
    edit(doc);
    const file = join(dir, `edited-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(doc, null, 2));
    const run = await verify(file);
    expect(run.code, run.stdout + run.stderr).toBe(3);
    expect(run.stdout).toMatch(named);
    expect(run.stdout).toMatch(/FAIL signature/);
  });
});
