/**
 * The console in a real headless Chromium with an approval PIN set: the approval's page asks
 * for the PIN, a wrong one decides nothing, the right one decides, and the agent's retry
 * follows the decision. (The rest of the console in Chromium: console.test.ts.)
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { setPin } from "../../src/engine/approvals/pin.js";
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
import { callTool, inProcessSuite } from "../helpers/inproc.js";
import { ensureBuilt } from "../helpers/process.js";

const suite = inProcessSuite({ prefix: "pam-browser-pin", providerDelayMs: 1_500 });
const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;

/** A person approves above 1 USDC (as in console.test.ts). */
const LIMITS = {
  PAID_ACTIONS_APPROVAL_ABOVE: "1",
  PAID_ACTIONS_MAX_PER_CALL: "5",
  PAID_ACTIONS_MAX_PER_DAY: "4",
  PAID_ACTIONS_MAX_TOTAL: "10",
};
const WEEK_SERVER = { region: "eu-central-1", plan: "small", durationHours: 168, image: "ubuntu-24.04" }; // 2.016 USDC: needs a person

let browser: TestBrowser | undefined;
let consoleProc: ConsoleProcess | undefined;

beforeAll(() => {
  // Fails every test here with how to install it, rather than skipping them.
  requireChromium();
  ensureBuilt();
}, 120_000);
afterEach(async () => {
  await browser?.close();
  await consoleProc?.stop();
  browser = undefined;
  consoleProc = undefined;
});

describe("console in Chromium", () => {
  it("with an approval PIN: the page asks for it, a wrong one decides nothing, the right one declines, and the approval's own page says so", async () => {
    const env = suite.env(LIMITS);
    await setPin(env.PAID_ACTIONS_HOME!, "2468");
    const agent = await suite.start({ env, era: "modern" });
    const asked = await callTool(agent.client, "servers_provision", WEEK_SERVER, 30_000);
    expect(sc(asked).error.code).toBe("approval_required");
    const approvalId = String(sc(asked).error.approvalId);

    consoleProc = await startConsoleProcess(env);
    browser = await launchBrowser();
    const page = await browser.newPage();
    await login(page, consoleProc.loginUrl);
    // The page the MCP server links a person to.
    await page.goto(`${consoleProc.origin}/approvals/${approvalId}`);
    const card = page.locator(`article.approval[data-approval="${approvalId}"]`);
    const pin = card.locator("input.pin");
    await pin.waitFor();
    expect(await pin.getAttribute("type")).toBe("password");
    const message = card.locator(".decide-message");
    const statusNow = async () => {
      const res = await raw(`${consoleProc!.origin}/api/approvals/${approvalId}`, {
        headers: { cookie: await sessionCookie(browser!.context, consoleProc!.origin) },
      });
      return JSON.parse(res.body).approval.status as string;
    };

    // No PIN typed: the page asks for it and sends nothing.
    await card.locator("button.approve").click();
    await message.getByText("Type the approval PIN first.").waitFor();
    // A wrong PIN: the console's refusal is shown, nothing is decided.
    await pin.fill("1111");
    await card.locator("button.approve").click();
    await message.locator(".notice-error").getByText("not the approval PIN").waitFor({ timeout: 10_000 });
    expect(await statusNow()).toBe("pending");
    expect(await card.locator("button.approve").isEnabled()).toBe(true);

    // The right PIN, and the person declines.
    await pin.fill("2468");
    await card.locator("button.decline").click();
    await card.locator('[data-status="declined"]').first().waitFor({ timeout: 10_000 });
    expect(await statusNow()).toBe("declined");
    expect(await card.locator("button.decide").count()).toBe(0);
    await expect.poll(() => page.locator("#pending-count").isHidden()).toBe(true);
    await screenshot(page, "approval-declined");

    // The agent's retry pays nothing.
    const retry = await callTool(agent.client, "servers_provision", { ...WEEK_SERVER, approvalId }, 30_000);
    expect(retry.isError).toBe(true);
    expect(sc(await callTool(agent.client, "get_spending")).spentTotal).toBe("0.00");

    // Reloaded, the approval's page shows its outcome and no buttons.
    await page.reload();
    await card.locator('[data-status="declined"]').first().waitFor();
    expect(await card.innerText()).toContain("Declined");
    expect(await card.locator("button.decide").count()).toBe(0);
    expect(browser.errors()).toEqual([]);
  }, 120_000);
});
