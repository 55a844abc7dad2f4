/**
 * A host that opens links inside itself (VS Code), in a real headless Chromium: it is handed
 * the console's http://127.0.0.1:<port>/approve page and the person a one-time code in the
 * question; the page asks for the code, the person types it, and the browser lands signed in
 * on the payment's page (the session cookie set by the page's own form, same-site), where the
 * person approves while the agent's call waits; the call pays once. Both protocol eras.
 */
import type { ElicitRequest, ElicitResult } from "@modelcontextprotocol/client";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, requireChromium, screenshot, type TestBrowser } from "../helpers/browser.js";
import { callTool, ERAS, inProcessSuite } from "../helpers/inproc.js";

const suite = inProcessSuite({ prefix: "pam-browser-code", providerDelayMs: 500 });
const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;
const balance = () => suite.sandbox().usdc(suite.sandbox().wallet.address);

const LIMITS = { PAID_ACTIONS_APPROVAL_ABOVE: "1", PAID_ACTIONS_MAX_PER_CALL: "5", PAID_ACTIONS_MAX_PER_DAY: "4" };
const WEEK_SERVER = { region: "eu-central-1", plan: "small", durationHours: 168, image: "ubuntu-24.04" }; // 2.016 USDC
const PRICE = 2_016_000n;
const CODE = /Type the one-time code ([2-9A-Z]{4}-[2-9A-Z]{4})/;

let browser: TestBrowser | undefined;
beforeAll(() => requireChromium());
afterEach(async () => {
  await browser?.close();
  browser = undefined;
});

describe.each(ERAS)("%s era: a host that opens links inside itself", (era) => {
  it("the person types the code on /approve, lands on the payment's page and approves; the waiting call pays once", async () => {
    browser = await launchBrowser();
    const page = await browser.newPage();
    const asked: ElicitRequest[] = [];
    let person: Promise<void> | undefined;
    const elicit = (request: ElicitRequest): ElicitResult => {
      asked.push(request);
      const { url, message } = request.params as { url?: string; message?: string };
      const code = CODE.exec(message ?? "")![1]!;
      person = (async () => {
        await page.goto(url!, { waitUntil: "domcontentloaded" });
        // Typed as a person might: lower case, without the dash.
        await page.locator("input#code").fill(code.toLowerCase().replace("-", ""));
        await Promise.all([
          page.waitForURL(/\/approvals\/apr_/, { timeout: 15_000, waitUntil: "domcontentloaded" }),
          page.locator('button[type="submit"]').click(),
        ]);
        expect(await page.evaluate(async () => (await fetch("/api/session")).status)).toBe(200);
        const approvalId = new URL(page.url()).pathname.split("/").pop()!;
        const card = page.locator(`article.approval[data-approval="${approvalId}"]`);
        await card.waitFor({ timeout: 15_000 });
        expect(await card.innerText()).toContain('"durationHours": 168');
        await screenshot(page, `code-approval-${era}`);
        await card.locator("button.approve").click();
        await card.locator('[data-status="approved"]').first().waitFor({ timeout: 10_000 });
      })();
      return { action: "accept" };
    };
    const env = suite.env(LIMITS);
    const agent = await suite.start({ env, era, elicit, elicitModes: ["url"], clientName: "Visual Studio Code" });
    const before = await balance();
    const paid = await callTool(agent.client, "servers_provision", WEEK_SERVER, 60_000);
    await person;
    expect(paid.isError ?? false, JSON.stringify(sc(paid))).toBe(false);
    expect(await balance()).toBe(before - PRICE);
    expect(asked).toHaveLength(1);
    const params = asked[0]!.params as { mode?: string; url?: string };
    expect(params.mode).toBe("url");
    expect(params.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/approve$/);
    expect(await page.locator("article.approval").first().innerText()).toContain("Approved");
    expect(browser.errors()).toEqual([]);
  });
});
