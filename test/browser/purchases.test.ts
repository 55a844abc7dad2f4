/**
 * The console's x402 purchases in a real headless Chromium, started as a person starts it
 * (`paid-actions-mcp console --no-open`) on a home whose journal holds paid_fetch purchases
 * (written as the engine writes them: test/console/purchase-records.ts): the Purchases page
 * lists them and filters by origin, one purchase shows its timeline, the spending page draws
 * the origin's share beside the actions', and the approval of a fetch names its method and
 * URL. No request's header value, query value or body, and no proof, is ever in a page; no
 * script error or CSP violation on the way. Screenshots go to test/output/screenshots/.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openJournal } from "../../src/app/index.js";
import {
  launchBrowser,
  login,
  requireChromium,
  screenshot,
  startConsoleProcess,
  type ConsoleProcess,
  type TestBrowser,
} from "../helpers/browser.js";
import { serviceEnv } from "../helpers/engine.js";
import { ensureBuilt } from "../helpers/process.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { APPROVAL, IDS, OTHER, recordPurchases, SECRETS, SELLER } from "../console/purchase-records.js";

let t: TestSandbox;
let home: string;
let browser: TestBrowser | undefined;
let consoleProc: ConsoleProcess | undefined;
let page: Page;

beforeAll(async () => {
  requireChromium();
  ensureBuilt();
  t = await startTestSandbox();
  home = mkdtempSync(join(tmpdir(), "pam-browser-purchases-"));
  const env = { ...serviceEnv(t, home), PAID_ACTIONS_ALLOW_ORIGINS: `${SELLER},${OTHER}` };
  const j = await openJournal(env);
  try {
    await recordPurchases({
      journal: j.journal,
      transcripts: j.transcripts,
      service: j.engine.service,
      t0: Date.now() - 60_000,
    });
  } finally {
    await j.close();
  }
  consoleProc = await startConsoleProcess(env);
  browser = await launchBrowser();
  page = await browser.newPage();
  await login(page, consoleProc.loginUrl);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await consoleProc?.stop();
  await t?.close();
  rmSync(home, { recursive: true, force: true });
});

/** The page's whole markup holds none of the requests' secrets. */
async function holdsNoSecret(): Promise<void> {
  const html = await page.content();
  for (const [what, secret] of Object.entries(SECRETS)) expect(html, what).not.toContain(secret);
}

describe("console in Chromium: x402 purchases", () => {
  it("the Purchases page lists them newest first, filters by origin, and leads to one purchase's timeline", async () => {
    await page.locator('nav a[data-nav="purchases"]').click();
    await page.waitForURL((u) => u.pathname === "/purchases");
    const rows = page.locator("table.purchases-table tbody tr[data-purchase]");
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(4);
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-purchase")))).toEqual([
      IDS.waiting,
      IDS.delivered,
      IDS.older[1],
      IDS.older[0],
    ]);
    const delivered = page.locator(`tr[data-purchase="${IDS.delivered}"]`);
    const text = await delivered.innerText();
    for (const part of [SELLER, "GET", "/weather?api_key=…&city=…", "0.01", "200", "executed", "verified on chain"])
      expect(text).toContain(part);
    await holdsNoSecret();
    await screenshot(page, "purchases");

    await page.locator('input[name="origin"]').fill(OTHER);
    await page.locator("form.filters button[type=submit]").click();
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(1);
    expect(new URL(page.url()).searchParams.get("origin")).toBe(OTHER);

    await page.goto(`${consoleProc!.origin}/purchases`);
    await page.locator(`tr[data-purchase="${IDS.delivered}"] a`).click();
    await page.waitForURL((u) => u.pathname === `/purchases/${IDS.delivered}`);
    const steps = page.locator("ol.timeline li");
    await expect.poll(() => steps.count(), { timeout: 10_000 }).toBe(7);
    expect(await steps.evaluateAll((lis) => lis.map((li) => li.getAttribute("data-step")))).toEqual([
      "request",
      "price",
      "reservation",
      "payment",
      "request",
      "answer",
      "settlement",
    ]);
    expect(await page.locator("ol.timeline").innerText()).toContain("Settlement verified on chain");
    await holdsNoSecret();
    await screenshot(page, "purchase");
  });

  it("the spending page draws the origin's share beside the actions'; the approval of a fetch names its request", async () => {
    await page.locator('nav a[data-nav="spending"]').click();
    await page.waitForURL((u) => u.pathname === "/spending");
    const origins = page.locator("svg.originbars g.ab-row");
    await expect.poll(() => origins.count(), { timeout: 10_000 }).toBe(1);
    expect(await origins.first().getAttribute("data-action")).toBe(SELLER);
    await screenshot(page, "spending-by-origin");

    await page.goto(`${consoleProc!.origin}/approvals/${APPROVAL}`);
    const card = page.locator(`article[data-approval="${APPROVAL}"]`);
    await card.waitFor({ timeout: 10_000 });
    expect(await card.locator("h2").innerText()).toBe(`POST ${OTHER}`);
    const request = await card.locator(".fetch-request").innerText();
    expect(request).toContain(`${OTHER}/summarize`);
    expect(request).toContain("authorization, x-trace (values not shown)");
    expect(await card.locator("details.input").count()).toBe(0);
    await holdsNoSecret();
    await screenshot(page, "approval-fetch");
    expect(browser!.errors()).toEqual([]);
  });
});
