/**
 * URL-mode elicitation in a real headless Chromium: a host that opens URLs gets the file://
 * URL of a one-time sign-in page for the console's page of one payment (the MCP server
 * started the console in its own process), opens it as an opener hands a file to the
 * person's browser, and answers at once; the page signs the browser in and lands on the
 * payment's page; the agent's call waits while the person reads the payment and approves it
 * there, then pays — with no second call from the agent. Both protocol eras.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { ElicitRequest, ElicitResult } from "@modelcontextprotocol/client";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openJournal } from "../../src/app/index.js";
import { startConsole } from "../../src/console/server.js";
import { launchBrowser, login, requireChromium, screenshot, type TestBrowser } from "../helpers/browser.js";
import { callTool, ERAS, inProcessSuite } from "../helpers/inproc.js";
import { postLoginPage, readLoginPage, type LoginPageForm } from "../helpers/login-page.js";

const suite = inProcessSuite({ prefix: "pam-browser-url", providerDelayMs: 500 });
const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;
const balance = () => suite.sandbox().usdc(suite.sandbox().wallet.address);

const LIMITS = { PAID_ACTIONS_APPROVAL_ABOVE: "1", PAID_ACTIONS_MAX_PER_CALL: "5", PAID_ACTIONS_MAX_PER_DAY: "4" };
const WEEK_SERVER = { region: "eu-central-1", plan: "small", durationHours: 168, image: "ubuntu-24.04" }; // 2.016 USDC
const PRICE = 2_016_000n;

let browser: TestBrowser | undefined;
beforeAll(() => requireChromium());
afterEach(async () => {
  await browser?.close();
  browser = undefined;
});

describe.each(ERAS)("%s era: the host opens the console's page for a payment", (era) => {
  it("the person approves on the page while the agent's call waits; the call pays once", async () => {
    browser = await launchBrowser();
    const page = await browser.newPage();
    const asked: ElicitRequest[] = [];
    let signIn: LoginPageForm | undefined;
    let person: Promise<void> | undefined;
    const elicit = (request: ElicitRequest): ElicitResult => {
      asked.push(request);
      const url = String((request.params as { url?: string }).url);
      signIn = readLoginPage(url);
      // The host opens the link in the person's browser and answers at once: "they went there".
      person = (async () => {
        await login(page, url);
        // Signed in (the session cookie came along to the payment's page), on that page.
        expect(await page.evaluate(async () => (await fetch("/api/session")).status)).toBe(200);
        const approvalId = new URL(page.url()).pathname.split("/").pop()!;
        expect(new URL(page.url()).pathname).toBe(signIn!.next);
        const card = page.locator(`article.approval[data-approval="${approvalId}"]`);
        await card.waitFor({ timeout: 15_000 });
        expect(await card.innerText()).toContain('"durationHours": 168');
        await screenshot(page, `url-approval-${era}`);
        await card.locator("button.approve").click();
        await card.locator('[data-status="approved"]').first().waitFor({ timeout: 10_000 });
      })();
      return { action: "accept" };
    };
    const env = suite.env(LIMITS);
    const agent = await suite.start({ env, era, elicit, elicitModes: ["url"] });
    const before = await balance();
    // The person already has a console of their own open in this browser (as `console` runs it).
    const j = await openJournal(env);
    const own = await startConsole({
      engine: j.engine,
      journal: j.journal,
      transcripts: j.transcripts,
      home: j.home,
      config: j.configResult.ok ? j.configResult.config : undefined,
      audit: async () => ({}),
    });
    const ownPage = await browser.newPage();
    await login(ownPage, own.loginUrl("/approvals"));
    const ownSession = () => ownPage.evaluate(async () => (await fetch("/api/session")).status);
    expect(await ownSession()).toBe(200);

    const paid = await callTool(agent.client, "servers_provision", WEEK_SERVER, 60_000);
    await person;
    expect(paid.isError ?? false, JSON.stringify(sc(paid))).toBe(false);
    expect(sc(paid).payment.amount).toBe("2.016");
    expect(await balance()).toBe(before - PRICE);
    expect(asked).toHaveLength(1);
    const params = asked[0]!.params as { mode?: string; url?: string; message?: string };
    expect(params.mode).toBe("url");
    expect(params.message).toContain("2.016 USDC for servers.provision");
    // The host was handed a file:// URL without the token; the file it names is gone once used.
    expect(new URL(params.url!).protocol).toBe("file:");
    expect(params.url).not.toContain(signIn!.token);
    expect(signIn!.mode).toBe(0o600);
    expect(existsSync(fileURLToPath(params.url!))).toBe(false);
    // The page shows the outcome; the token it came with is spent.
    expect(await page.locator("article.approval").first().innerText()).toContain("Approved");
    expect((await postLoginPage(signIn!)).status).toBe(403);
    // Two consoles in one browser keep their own sessions (cookies are per host, not per port).
    expect(await ownSession()).toBe(200);
    expect(await page.evaluate(async () => (await fetch("/api/session")).status)).toBe(200);
    await own.close();
    await j.close();
    expect(browser.errors()).toEqual([]);
  });
});
