/**
 * The console in a real headless Chromium (driven by playwright-core), started as a person
 * starts it (`paid-actions-mcp console --no-open`) on the home of an MCP server that
 * an agent is using: a payment above the approval threshold appears live on the approvals
 * page while the agent waits, the person approves it there, the agent's retry pays, and the
 * execution moves to `completed` on the executions page without a reload. The spending page
 * draws spend against the caps, a transcript renders as a sequence diagram, and the audit
 * page says whether journal and chain agree. Requests without the cookie, with a foreign Host
 * or Origin, or without the CSRF token are refused. Screenshots of each page go to
 * test/output/screenshots/. (With an approval PIN: console-pin.test.ts.)
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  launchBrowser,
  login,
  raw,
  requireChromium,
  screenshot,
  sessionCookie,
  startConsoleProcess,
  type ConsoleProcess,
  type TestBrowser,
} from "../helpers/browser.js";
import { callTool, inProcessSuite, startInProcess, type InProcServer } from "../helpers/inproc.js";
import { ensureBuilt } from "../helpers/process.js";

const suite = inProcessSuite({ prefix: "pam-browser", providerDelayMs: 1_500 });
const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;

/** A person approves above 1 USDC; the rolling 24 h cap is 4 USDC, the total cap 10. */
const LIMITS = {
  PAID_ACTIONS_APPROVAL_ABOVE: "1",
  PAID_ACTIONS_MAX_PER_CALL: "5",
  PAID_ACTIONS_MAX_PER_DAY: "4",
  PAID_ACTIONS_MAX_TOTAL: "10",
};
const SMALL_SERVER = { region: "eu-west-1", plan: "small", durationHours: 24 }; // 0.288 USDC
const STORAGE = { tier: "object", sizeGb: 40, durationMonths: 1, region: "eu-west-1" }; // 0.92 USDC
const WEEK_SERVER = { region: "eu-central-1", plan: "small", durationHours: 168, image: "ubuntu-24.04" }; // 2.016 USDC: needs a person

beforeAll(() => {
  // Fails every test here with how to install it, rather than skipping them.
  requireChromium();
  ensureBuilt();
}, 120_000);

/** Clicks a link of the nav bar (in-app navigation, no reload). */
async function nav(page: Page, name: string): Promise<void> {
  await page.locator(`nav a[data-nav="${name}"]`).click();
  await page.waitForURL((u) => u.pathname.startsWith(`/${name}`));
}

describe("console in Chromium", () => {
  describe("an approval appears live, is approved on the page, the agent pays, and every page shows it", () => {
    // One session, checked step by step: each `it` goes on from where the one before left the page.
    let env: Record<string, string> = {};
    let agent: InProcServer | undefined;
    let proc: ConsoleProcess | undefined;
    let chromium: TestBrowser | undefined;
    let page: Page | undefined;
    let approvalId = "";
    let executionId = "";
    let callId = "";
    beforeAll(async () => {
      env = suite.env(LIMITS);
      agent = await startInProcess({ env, era: "legacy" });
    }, 60_000);
    afterAll(async () => {
      await chromium?.close();
      await proc?.stop();
      await agent?.close();
    });
    /** What a step goes on from; a clear failure when the step that makes it failed. */
    const session = () => {
      if (!agent || !proc || !chromium || !page)
        throw new Error("the console session did not start: see the first failure");
      return { agent, proc, browser: chromium, page };
    };
    const cookieOf = async () => {
      const { proc, browser } = session();
      return sessionCookie(browser.context, proc.origin);
    };

    it("pays below the threshold without asking anyone; the person signs in to a live, empty approvals page", async () => {
      const a = agent!;
      // Some history below the threshold: paid without asking anyone.
      for (const [tool, input] of [
        ["servers_provision", SMALL_SERVER],
        ["storage_purchase", STORAGE],
      ] as const) {
        const r = await callTool(a.client, tool, input, 30_000);
        expect(r.isError ?? false, JSON.stringify(sc(r))).toBe(false);
      }

      proc = await startConsoleProcess(env);
      expect(proc.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      chromium = await launchBrowser();
      page = await chromium.newPage();
      await login(page, proc.loginUrl);
      await page.waitForURL((u) => u.pathname === "/approvals");
      await expect.poll(() => page!.locator("#live").getAttribute("data-state"), { timeout: 10_000 }).toBe("live");
      await page.getByText("Nothing is waiting for you").waitFor();
      // Marks this document: a reload would lose it.
      await page.evaluate(() => ((globalThis as { stillHere?: boolean }).stillHere = true));
    }, 90_000);

    it("a payment that needs a person appears on the open page by itself, with everything a person needs to decide", async () => {
      const { agent, proc, page } = session();
      // The agent asks to pay 2.016 USDC: a person must approve it.
      const asked = await callTool(agent.client, "servers_provision", WEEK_SERVER, 30_000);
      const error = sc(asked).error;
      expect(error.code).toBe("approval_required");
      approvalId = String(error.approvalId);

      // It appears on the open page by itself, with everything a person needs to decide.
      const card = page.locator(`article.approval[data-approval="${approvalId}"]`);
      await card.waitFor({ timeout: 10_000 });
      expect(await page.evaluate(() => (globalThis as { stillHere?: boolean }).stillHere)).toBe(true);
      await expect.poll(() => page.locator("#pending-count").textContent()).toBe("1");
      const text = await card.innerText();
      expect(text).toContain("servers.provision");
      expect(text).toContain("2.016");
      expect(text).toContain("eu-central-1");
      expect(text).toContain('"durationHours": 168');
      expect(text).toMatch(/expires in \d+:\d\d/);
      const review = JSON.parse(
        (
          await raw(`${proc.origin}/api/approvals/${approvalId}`, {
            headers: { cookie: await cookieOf() },
          })
        ).body,
      ).approval;
      expect(review.payee).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
      expect(text).toContain(review.payee);
      // Spend afterwards: 0.288 + 0.92 + 2.016 = 3.224 of the 4.00 day cap (past 80 %: amber), of 10.00 in total.
      expect(review.after).toEqual({
        spentLast24h: "3.224",
        maxPerDay: "4.00",
        spentTotal: "3.224",
        maxTotal: "10.00",
      });
      expect(text).toContain("3.224 of 4.00 USDC");
      expect(text).toContain("3.224 of 10.00 USDC");
      const small = card.locator("svg.capbar-small");
      expect(await small.count()).toBe(2);
      expect(await small.nth(0).getAttribute("data-level")).toBe("warn");
      expect(await small.nth(1).getAttribute("data-level")).toBe("ok");
      await screenshot(page, "approvals-pending");
      // On a phone's width nothing runs off the side.
      await page.setViewportSize({ width: 390, height: 844 });
      await expect
        .poll(() =>
          page.evaluate(
            () =>
              (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document
                .documentElement.scrollWidth,
          ),
        )
        .toBeLessThanOrEqual(390);
      await screenshot(page, "approvals-narrow");
      await page.setViewportSize({ width: 1280, height: 900 });
    });

    it("the agent's retry before anyone decides pays nothing; the person approves on the page", async () => {
      const { agent, page } = session();
      const card = page.locator(`article.approval[data-approval="${approvalId}"]`);
      // The agent's retry before anyone decides pays nothing.
      expect(sc(await callTool(agent.client, "servers_provision", { ...WEEK_SERVER, approvalId })).error.code).toBe(
        "approval_required",
      );

      // The person approves on the page.
      await card.locator("button.approve").click();
      await card.locator('[data-status="approved"]').first().waitFor({ timeout: 10_000 });
      expect(await card.innerText()).toContain("Approved");
      await expect.poll(() => page.locator("#pending-count").isHidden()).toBe(true);
      await page.locator(`.decided article.approval[data-approval="${approvalId}"]`).waitFor();
      await screenshot(page, "approvals-approved");
    });

    it("the agent's retry with the approvalId pays; the executions page follows it to completed live, and filters it", async () => {
      const { agent, page } = session();
      // The agent calls again with the approvalId and pays.
      const paid = await callTool(agent.client, "servers_provision", { ...WEEK_SERVER, approvalId }, 30_000);
      expect(paid.isError ?? false, JSON.stringify(sc(paid))).toBe(false);
      executionId = String(sc(paid).executionId);
      expect(sc(paid).payment.amount).toBe("2.016");

      // The executions page follows it to `completed` live (the provider takes 1.5 s).
      await nav(page, "executions");
      const row = page.locator(`tr[data-execution="${executionId}"]`);
      await row.waitFor({ timeout: 10_000 });
      await expect.poll(() => row.getAttribute("data-status"), { timeout: 20_000 }).toBe("completed");
      expect(await page.locator("tbody tr").count()).toBe(3);
      expect(await page.evaluate(() => (globalThis as { stillHere?: boolean }).stillHere)).toBe(true);
      await screenshot(page, "executions");
      // Filters: by action (kept in the URL), then by status.
      await page.locator('form.filters input[name="action"]').fill("storage.purchase");
      await page.locator('form.filters button[type="submit"]').click();
      await expect.poll(() => page.locator("tbody tr[data-intent]").count()).toBe(1);
      expect(new URL(page.url()).searchParams.get("action")).toBe("storage.purchase");
      await page.locator('form.filters input[name="action"]').fill("");
      await page.locator('form.filters select[name="status"]').selectOption("failed");
      await expect.poll(() => page.locator("tbody").innerText()).toContain("No execution matches these filters.");
      await page.locator('form.filters select[name="status"]').selectOption("completed");
      await expect.poll(() => page.locator("tbody tr[data-intent]").count()).toBe(3);
    }, 60_000);

    it("an execution's page shows its timeline, output and transcripts", async () => {
      const { page } = session();
      const row = page.locator(`tr[data-execution="${executionId}"]`);
      // One execution: its timeline, output and transcripts.
      await row.locator("a").first().click();
      await page.waitForURL((u) => u.pathname === `/executions/${executionId}`);
      await page.locator("ol.timeline").waitFor();
      const steps = await page
        .locator("ol.timeline li")
        .evaluateAll((els) => els.map((e) => e.getAttribute("data-step")));
      for (const step of ["quote", "approval", "reservation", "payment", "execution"]) expect(steps).toContain(step);
      expect(await page.locator("h1 .pill").innerText()).toBe("completed");
      expect(await page.locator("pre.json").first().innerText()).toContain("serverId");
      await screenshot(page, "execution");
    });

    it("its paid call's transcript draws as a sequence diagram, with an inspector", async () => {
      const { page } = session();
      // Its paid call's transcript, as a sequence diagram.
      const links = page.locator('a[href^="/transcripts/call_"]');
      expect(await links.count()).toBeGreaterThanOrEqual(1);
      await links.last().click();
      await page.waitForURL((u) => u.pathname.startsWith("/transcripts/call_"));
      callId = new URL(page.url()).pathname.split("/").pop()!;
      const diagram = page.locator("svg.sequence");
      await diagram.waitFor();
      const entries = await page.evaluate(
        async (id) =>
          ((await (await fetch(`/api/transcripts/${id}`)).json()) as { entries: Array<{ step: string }> }).entries,
        callId,
      );
      expect(entries.length).toBeGreaterThan(3);
      expect(await diagram.locator("line.lifeline").count()).toBe(4);
      expect(await diagram.locator("text.lifeline-name").allTextContents()).toEqual([
        "Agent",
        "MCP server",
        "Service",
        "Chain",
      ]);
      for (let i = 0; i < entries.length; i++)
        expect(
          await diagram.locator(`g.arrow[data-entry="${i}"]`).count(),
          `arrows of entry ${i} (${entries[i]!.step})`,
        ).toBeGreaterThanOrEqual(1);
      const http = entries.findIndex((e) => e.step === "http");
      await diagram.locator(`g.arrow[data-entry="${http}"]`).first().click();
      await expect.poll(() => page.locator(".inspector h3").innerText()).toBe(`${http + 1}. http`);
      expect(await page.locator(".inspector").innerText()).toContain("[redacted]");
      await screenshot(page, "transcript");
    });

    it("spending draws the bars against the caps, with the page's own money arithmetic", async () => {
      const { proc, page } = session();
      // Spending: the bars against the caps.
      await nav(page, "spending");
      const spending = JSON.parse(
        (
          await raw(`${proc.origin}/api/spending`, {
            headers: { cookie: await cookieOf() },
          })
        ).body,
      );
      expect(spending.spentLast24h).toBe("3.224");
      const day = page.locator(".cap-day svg.capbar");
      await day.waitFor();
      expect(await day.getAttribute("data-cap")).toBe("4.00");
      expect(await day.getAttribute("data-level")).toBe("warn");
      const width = async (sel: string) => Number(await day.locator(sel).getAttribute("width"));
      expect((await width("rect.cb-spent")) / (await width("rect.cb-track"))).toBeCloseTo(3.224 / 4, 2);
      expect(await day.innerHTML()).toContain("cap 4.00 USDC");
      const total = page.locator(".cap-total svg.capbar");
      expect(await total.getAttribute("data-level")).toBe("ok");
      expect(
        Number(await total.locator("rect.cb-spent").getAttribute("width")) /
          Number(await total.locator("rect.cb-track").getAttribute("width")),
      ).toBeCloseTo(3.224 / 10, 2);
      expect(await total.innerHTML()).toContain("cap 10.00 USDC");
      expect(await page.locator("svg.actionbars g.ab-row").count()).toBe(2);
      // The page's money arithmetic (BigInt on atomic units): amber past 80 %, red at the cap.
      // (A string, so the test runner's transform leaves its import() alone.)
      const money = await page.evaluate(`import("/assets/money.js").then((m) => ({
        levels: [m.level("3.20", "4.00"), m.level("3.200001", "4.00"), m.level("4.00", "4.00"), m.level("5", "4.00")],
        sum: m.decimal(m.atomic("0.1") + m.atomic("0.2")),
        percent: m.percent("3.224", "4.00"),
        rejects: [m.atomic("1e3"), m.atomic("-1"), m.atomic("0.0000001")],
      }))`);
      expect(money).toEqual({
        levels: ["ok", "warn", "over", "over"],
        sum: "0.30",
        percent: "80.6 %",
        rejects: [null, null, null],
      });
      expect(await page.locator("svg.days g.day").count()).toBe(14);
      await screenshot(page, "spending");
    });

    it("audit says journal and chain agree; the transcripts list has the call", async () => {
      const { browser, page } = session();
      // Audit: journal and chain agree.
      await nav(page, "audit");
      const verdict = page.locator(".verdict");
      await verdict.waitFor({ timeout: 30_000 });
      expect(await verdict.getAttribute("data-ok")).toBe("true");
      await screenshot(page, "audit");

      // Transcripts list.
      await nav(page, "transcripts");
      await page.locator(`tr[data-call="${callId}"]`).waitFor();
      expect(browser.errors()).toEqual([]);
    }, 60_000);

    it("refuses requests without the cookie, with a foreign Host or Origin, or without the CSRF token", async () => {
      const { proc } = session();
      const origin = proc.origin;
      const cookie = await cookieOf();
      const csrf = JSON.parse((await raw(`${origin}/api/session`, { headers: { cookie } })).body).csrf as string;
      expect(csrf.length).toBeGreaterThan(10);
      const post = (headers: Record<string, string>) =>
        raw(`${origin}/api/approvals/${approvalId}/decline`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: "{}",
        });
      // No cookie: 401, page and API alike.
      expect((await raw(`${origin}/api/approvals`)).status).toBe(401);
      expect((await raw(`${origin}/spending`)).status).toBe(401);
      // A foreign Host (DNS rebinding), even with the cookie.
      expect([403, 421]).toContain(
        (await raw(`${origin}/api/approvals`, { headers: { cookie, host: `evil.example:${proc.port}` } })).status,
      );
      // Writes: a foreign Origin, no Origin, no CSRF token, a wrong one: 403.
      expect((await post({ cookie, origin: "http://evil.example", "x-csrf-token": csrf })).status).toBe(403);
      expect((await post({ cookie, "x-csrf-token": csrf })).status).toBe(403);
      expect((await post({ cookie, origin })).status).toBe(403);
      expect((await post({ cookie, origin, "x-csrf-token": `${csrf}x` })).status).toBe(403);
      expect((await post({ origin, "x-csrf-token": csrf })).status).toBe(401);
      // With all of them the request gets through the guard: the approval is used, so 409.
      const through = await post({ cookie, origin, "x-csrf-token": csrf });
      expect(through.status).toBe(409);
      expect(JSON.parse(through.body).error.code).toBe("approval_invalid");
    });

    it("money leaving the wallet outside this journal: the audit page says they disagree and explains it", async () => {
      const { browser, page } = session();
      // Money leaves the wallet outside this journal (a payment made with the same wallet by
      // something else): the audit page says they disagree and explains the discrepancy.
      const sandbox = suite.sandbox();
      const quote = await sandbox.quote("servers.provision", SMALL_SERVER);
      const proof = await sandbox.proof(quote.paymentRequirement.accepts[0]);
      const lost = await sandbox.call("POST", "/payments/confirm", {
        body: { quoteId: quote.quoteId, paymentProof: proof },
        headers: { "idempotency-key": `browser-lost-${quote.quoteId}` },
      });
      expect(lost.status).toBe(200);
      await nav(page, "audit");
      await page.locator('.verdict[data-ok="false"]').waitFor({ timeout: 30_000 });
      const discrepancy = page.locator('.discrepancy[data-kind="unknown_outflow"]');
      expect(await discrepancy.count()).toBe(1);
      const explained = await discrepancy.innerText();
      expect(explained).toContain(lost.body.transaction);
      expect(explained).toContain("0.288 USDC");
      expect(explained).toMatch(/What it means\..+What to do\./s);
      await screenshot(page, "audit-discrepancy");
      expect(browser.errors()).toEqual([]);
    }, 60_000);
  });
});
