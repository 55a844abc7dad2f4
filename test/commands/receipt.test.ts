/**
 * `receipt` and `receipt verify` over the built CLI, against purchases made on a real sandbox
 * over HTTP with a real journal: a paid action (approved by a person), a refunded execution,
 * a paid_fetch of the sandbox's own resource (which signs offers and receipts with its own
 * key), a paid_fetch of a stock @x402/express seller signing with the package's own issuer,
 * and a purchase that ended in `attention` (the seller settled, then answered 500). Each
 * receipt holds under `receipt verify --rpc` (exit 0); changing any one field — the amount,
 * the payee, the transaction, the approval, the outcome — makes it fail (exit 3), naming
 * what changed. A seller's tampered offer is reported in the result and the receipt, not trusted.
 * The paid action's receipt carries the v1 service's signed offer and receipt, as the result says.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReceiptDocument } from "../../src/engine/index.js";
import { engineFixture, refusal, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { runCli } from "../helpers/mcp.js";
import { ensureBuilt } from "../helpers/process.js";
import { on } from "../helpers/proxy.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { startSeller, stopAllSellers, type Seller } from "../helpers/sellers.js";
import { waitFor } from "../helpers/wait.js";

let t: TestSandbox;
let f: EngineFixture;
let dir: string;
let stock: Seller;
let liar: Seller;
let tamperer: Seller;
const ids: Record<"action" | "refunded" | "own" | "stock" | "attention" | "tampered", string> = {
  action: "",
  refunded: "",
  own: "",
  stock: "",
  attention: "",
  tampered: "",
};
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
  dir = mkdtempSync(join(tmpdir(), "pam-receipts-"));
  t = await startTestSandbox();
  const common = { facilitatorUrl: t.sb.facilitatorUrl, network: t.sb.network, payTo: t.sb.keys.seller.address };
  stock = await startSeller({ ...common, framework: "express", offerReceipt: true });
  liar = await startSeller({ ...common, framework: "express", lie: "500-after-settle" });
  tamperer = await startSeller({ ...common, framework: "hono", offerReceipt: true, lie: "tamper-offer" });
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
      PAID_ACTIONS_ALLOW_ORIGINS: [own, stock.url, liar.url, tamperer.url].join(","),
      PAID_ACTIONS_APPROVAL_ABOVE: "0.1",
    },
    open: { reconcile: true, reconcilerIntervalMs: { min: 50, max: 200 } },
  });
  const action = await payApproved(fail, false);
  ids.action = action.executionId;
  results.action = action.payment;
  ids.refunded = (await payApproved(fail, true)).executionId;
  const own1 = await f.pa.engine.payFetch({ url: `${own}/x402/weather?city=Lisbon` });
  ids.own = own1.result.intentId!;
  results.own = own1.result.payment;
  const stock1 = await f.pa.engine.payFetch({ url: `${stock.url}/paid/data` });
  ids.stock = stock1.result.intentId!;
  results.stock = stock1.result.payment;
  const lied = await refusal(f.pa.engine.payFetch({ url: `${liar.url}/paid/data`, intentKey: "receipt-attention" }));
  expect(lied.code).toBe("execution_rejected");
  ids.attention = (await f.pa.journal.intentByKey("receipt-attention"))!.intentId;
  const tampered = await f.pa.engine.payFetch({ url: `${tamperer.url}/paid/data` });
  ids.tampered = tampered.result.intentId!;
  results.tampered = tampered.result.payment;
  await waitFor(
    async () => {
      const byExec = async (id: string) => (await f.pa.journal.intentByExecution(id))!;
      const [a, r] = [await byExec(ids.action), await byExec(ids.refunded)];
      const fetches = await Promise.all([ids.own, ids.stock, ids.tampered].map((id) => f.pa.journal.intent(id)));
      const done =
        a.execStatus === "completed" &&
        a.settlement === "verified" &&
        r.refundState === "verified" &&
        fetches.every((i) => i?.settlement === "verified");
      if (!done) await f.pa.reconciler!.runOnce(Number.MAX_SAFE_INTEGER);
      return done;
    },
    { timeoutMs: 40_000, intervalMs: 100, what: "the reconciler to settle every purchase on chain" },
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

const verify = (file: string) => cli(["receipt", "verify", file, "--rpc", t.sb.rpcUrl]);

describe("receipt: one signed document per purchase, that verify accepts with the chain", () => {
  it.each(["action", "refunded", "own", "stock", "attention", "tampered"] as const)(
    "the %s purchase's receipt holds, its transfer on chain as stated",
    async (which) => {
      const { file, doc } = await made(ids[which]);
      expect(doc).toMatchObject({
        receipt: "paid-actions/1",
        signature: { scheme: "ed25519", signer: doc.payment.payer },
      });
      expect(doc.chain).toMatchObject({ failed: false, finality: "finalized" });
      expect(doc.chain!.transfer).toMatchObject({ authority: doc.payment.payer, source: doc.payment.source });
      const run = await verify(file);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toMatch(/ok {3}on chain: .* is on chain in slot \d+ \(finalized\), as stated/);
      expect(run.stdout).toMatch(/ok {3}signature: signed by the payer/);
    },
  );

  it("says what was bought, the approval, the outcome and the refund seen on chain — and no secret", async () => {
    const action = (await made(ids.action)).doc;
    expect(action.bought).toMatchObject({ kind: "action", action: "servers.provision", executionId: ids.action });
    expect(action.approval).toMatchObject({ status: "used", channel: "person", evidence: null });
    expect(action.outcome).toMatchObject({ status: "completed", settlement: "verified", refunds: [] });
    expect(action.outcome.outputDigest).toMatch(/^[0-9a-f]{64}$/);
    const refunded = (await made(ids.refunded)).doc;
    expect(refunded.outcome).toMatchObject({ status: "refunded", refunds: [{ state: "verified" }] });
    expect(refunded.outcome.refunds[0]!.seenOnChain).toBe(refunded.payment.amount);
    const own = (await made(ids.own)).doc;
    expect(own.bought.request).toMatchObject({ method: "GET", url: expect.stringMatching(/\/x402\/weather\?city=…$/) });
    const attention = (await made(ids.attention)).doc;
    expect(attention.outcome).toMatchObject({ state: "attention", status: null });
    expect(attention.outcome.attention).toBeTruthy();
    expect(attention.payment.fate).toBe("landed");
    for (const doc of [action, refunded, own, attention]) {
      const text = JSON.stringify(doc);
      expect(text).not.toContain(t.sb.apiKey);
      expect(text).not.toContain("Lisbon");
    }
  });

  it("a seller's signed offer and receipt are verified, kept, and in the receipt: the sandbox's and a stock seller's", async () => {
    expect(results.own).toMatchObject({
      seller: { signed: true, offer: "verified", receipt: "verified", signer: t.sb.sellerKey!.kid },
    });
    expect(results.stock).toMatchObject({ seller: { signed: true, offer: "verified", receipt: "verified" } });
    expect((results.stock!.seller as { signer: string }).signer).toMatch(/^did:jwk:/);
    for (const which of ["own", "stock"] as const) {
      const { doc } = await made(ids[which]);
      expect(doc.seller!.offer).toMatchObject({ state: "verified", signed: { format: "jws" }, withheld: null });
      expect(doc.seller!.receipt).toMatchObject({ state: "verified", signed: { format: "jws" } });
    }
  });

  it("a paid action's receipt carries the service's signed offer and receipt, checked against the resource its challenge named", async () => {
    const kid = t.sb.sellerKey!.kid;
    expect(results.action).toMatchObject({
      seller: { signed: true, offer: "verified", receipt: "verified", signer: kid },
    });
    const { file, doc } = await made(ids.action);
    // The service's own URL, as its challenge named it (the engine reaches it through a proxy).
    const origin = new URL(t.sb.baseUrl).origin;
    expect(doc.bought.request).toEqual({ method: "POST", url: `${t.sb.baseUrl}/executions`, origin });
    for (const part of [doc.seller!.offer, doc.seller!.receipt])
      expect(part).toMatchObject({
        state: "verified",
        signer: kid,
        signed: { format: "jws" },
        withheld: null,
        problems: [],
      });
    const run = await verify(file);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/ok {3}seller\.offer: verified by did:key:/);
    expect(run.stdout).toMatch(/ok {3}seller\.receipt: verified by did:key:/);
  });

  it("a tampered offer is reported as such, not trusted: in the result, the receipt, and verify's report", async () => {
    expect(results.tampered).toMatchObject({ seller: { signed: false, offer: "invalid" } });
    const { file, doc } = await made(ids.tampered);
    expect(doc.seller!.offer).toMatchObject({ state: "invalid" });
    const run = await verify(file);
    expect(run.code).toBe(0); // the receipt states the offer was invalid, and it is
    expect(run.stdout).toMatch(/ok {3}seller\.offer: invalid/);
  });
});

/** Each field a person might change, and what verify names when it is. */
const EDITS: Array<[string, (d: any) => void, RegExp]> = [
  ["the amount", (d) => (d.payment.amount = "0.001"), /FAIL payment\.amount/],
  ["the payee", (d) => (d.payment.payee = "11111111111111111111111111111111"), /FAIL payment\.payee/],
  [
    "the transaction",
    (d) => (d.payment.transaction = d.payment.transaction.replace(/^./, (c: string) => (c === "2" ? "3" : "2"))),
    /FAIL payment(\.transaction)?:/,
  ],
  ["the approval", (d) => (d.approval.decidedAt = "2020-01-01T00:00:00.000Z"), /FAIL approval:/],
  ["the approval's id", (d) => (d.approval.approvalId = "apr_forged"), /FAIL approval:/],
  ["the outcome", (d) => (d.outcome.status = "failed"), /FAIL outcome:/],
  [
    "the refunds",
    (d) => d.outcome.refunds.push({ transaction: null, claimed: "1", seenOnChain: "1", state: "verified" }),
    /FAIL outcome:/,
  ],
  ["the chain's slot", (d) => (d.chain.slot = String(BigInt(d.chain.slot) + 1n)), /FAIL chain:/],
];

describe("receipt verify: a receipt edited in any one field fails, naming it", () => {
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

  it("a file that is not a receipt fails with exit 3; an unknown id makes none (exit 1)", async () => {
    const file = join(dir, "not-json.json");
    writeFileSync(file, "{ not json");
    expect((await cli(["receipt", "verify", file])).code).toBe(3);
    const run = await cli(["receipt", "int_nope"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/no purchase or execution int_nope/);
  });
});
