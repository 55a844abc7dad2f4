/**
 * A purchase's receipt in the console, in a real headless Chromium, the console started as a
 * person starts it (`paid-actions-mcp console --no-open`) on the home of an engine that paid on
 * the sandbox over HTTP: a paid_fetch of the sandbox's own resource (which signs its offers and
 * receipts) and a paid action. The purchase's and the execution's pages lead to the receipt's
 * readable page — what was bought, the approval, the payment, the chain, the outcome and the
 * seller's word, each "checked" or "not checked", then every check — and its download is the
 * JSON `paid-actions-mcp receipt` writes (made anew: the same but for when it was made and read,
 * and its signature), which `receipt verify --rpc` accepts. No script error on the way.
 */
import { readFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReceiptDocument } from "../../src/engine/index.js";
import {
  launchBrowser,
  login,
  requireChromium,
  screenshot,
  startConsoleProcess,
  type ConsoleProcess,
  type TestBrowser,
} from "../helpers/browser.js";
import { engineFixture, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { runCli } from "../helpers/mcp.js";
import { ensureBuilt } from "../helpers/process.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

let t: TestSandbox;
let f: EngineFixture;
let browser: TestBrowser | undefined;
let consoleProc: ConsoleProcess | undefined;
let page: Page;
let fetchId = "";
let executionId = "";

const cli = (args: string[]) => runCli(args, f.env as Record<string, string>, 60_000);

beforeAll(async () => {
  requireChromium();
  ensureBuilt();
  t = await startTestSandbox();
  const own = t.sb.baseUrl.replace(/\/v1$/, "");
  f = await engineFixture({ t, env: { PAID_ACTIONS_ALLOW_ORIGINS: own } });
  fetchId = (await f.pa.engine.payFetch({ url: `${own}/x402/weather?city=Lisbon` })).result.intentId!;
  executionId = (await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER })).executionId;
  consoleProc = await startConsoleProcess(f.env as Record<string, string>);
  browser = await launchBrowser();
  page = await browser.newPage();
  await login(page, consoleProc.loginUrl);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await consoleProc?.stop();
  await f?.close();
  await t?.close();
});

/** Each section's badge on the receipt page, by section. */
async function badges(): Promise<Record<string, string | null>> {
  const pills = page.locator("section.receipt-section h2 .pill");
  await expect.poll(() => pills.count(), { timeout: 20_000 }).toBe(6);
  const pairs = await pills.evaluateAll((els) =>
    els.map((el) => [el.getAttribute("data-section") ?? "", el.getAttribute("data-checked")] as const),
  );
  return Object.fromEntries(pairs);
}

/** The receipt without what differs between two makings: when it was made and read, and so its chain digest and signature. */
function comparable(doc: ReceiptDocument): unknown {
  const copy = structuredClone(doc) as Partial<ReceiptDocument> & Record<string, unknown>;
  delete copy.madeAt;
  delete copy.signature;
  if (copy.chain) delete (copy.chain as Partial<NonNullable<ReceiptDocument["chain"]>>).readAt;
  delete (copy.digests as Partial<ReceiptDocument["digests"]>).chain;
  return copy;
}

describe("console in Chromium: a purchase's receipt", () => {
  it("the purchase's page leads to its receipt: each section checked or not, every check, the seller's word", async () => {
    await page.goto(`${consoleProc!.origin}/purchases/${fetchId}`);
    await page.locator(`a[data-receipt="${fetchId}"]`).click();
    await page.waitForURL((u) => u.pathname === `/receipts/${fetchId}`);
    expect(await badges()).toEqual({
      bought: "not checked",
      approval: "not checked",
      payment: "checked",
      chain: "checked",
      outcome: "not checked",
      seller: "checked",
    });
    const text = await page.locator("main").innerText();
    expect(text).toContain("Every check holds");
    expect(text).toContain("/x402/weather?city=…");
    expect(text).not.toContain("Lisbon");
    expect(text).toContain(`verified by ${t.sb.sellerKey!.kid}`);
    const checks = page.locator("ul.receipt-checks li");
    expect(await checks.evaluateAll((lis) => lis.map((li) => li.getAttribute("data-holds")))).not.toContain("false");
    expect(await checks.evaluateAll((lis) => lis.map((li) => li.getAttribute("data-check")))).toEqual(
      expect.arrayContaining(["signature", "transaction", "seller.offer", "seller.receipt"]),
    );
    await screenshot(page, "receipt");
    expect(browser!.errors()).toEqual([]);
  });

  it("its download is the JSON `receipt` writes, and `receipt verify --rpc` accepts it", async () => {
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.locator('a[data-download="receipt"]').click(),
    ]);
    expect(download.suggestedFilename()).toBe(`receipt-${fetchId}.json`);
    const file = (await download.path())!;
    const downloaded = JSON.parse(readFileSync(file, "utf8")) as ReceiptDocument;
    const made = await cli(["receipt", fetchId]);
    expect(made.code, made.stderr).toBe(0);
    const written = JSON.parse(made.stdout) as ReceiptDocument;
    expect(comparable(downloaded)).toEqual(comparable(written));
    expect(downloaded.signature).toMatchObject({ scheme: "ed25519", signer: written.payment.payer });
    const verified = await cli(["receipt", "verify", file, "--rpc", t.sb.rpcUrl]);
    expect(verified.code, verified.stdout).toBe(0);
  });

  it("an execution's page leads to its receipt too", async () => {
    await page.goto(`${consoleProc!.origin}/executions/${executionId}`);
    await page.locator(`a[data-receipt="${executionId}"]`).click();
    await page.waitForURL((u) => u.pathname === `/receipts/${executionId}`);
    // The v1 service signs its offer and its receipt (x402 offer-receipt): the seller's word is checked too.
    expect(await badges()).toMatchObject({ payment: "checked", chain: "checked", seller: "checked" });
    expect(await page.locator("main").innerText()).toContain("servers.provision");
    expect(await page.locator("main").innerText()).toContain(`verified by ${t.sb.sellerKey!.kid}`);
    expect(browser!.errors()).toEqual([]);
  });
});
