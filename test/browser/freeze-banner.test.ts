/**
 * The freeze banner in a real headless Chromium: the console started as a person starts it
 * (`paid-actions-mcp console --no-open`) shows, on every page and without a reload, that
 * payments were frozen (by the built CLI, as a person or an agent's shell freezes them) with
 * the reason and since when, keeps showing it across pages and reloads, and hides it once a
 * person lifts the freeze. No script error or CSP violation on the way. A screenshot goes to
 * test/output/screenshots/freeze-banner.png.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
import { runCli } from "../helpers/mcp.js";
import { ensureBuilt } from "../helpers/process.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

let t: TestSandbox;
let home: string;
let browser: TestBrowser | undefined;
let consoleProc: ConsoleProcess | undefined;

beforeAll(async () => {
  requireChromium();
  ensureBuilt();
  t = await startTestSandbox();
  home = mkdtempSync(join(tmpdir(), "pam-browser-freeze-"));
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await consoleProc?.stop();
  await t?.close();
  rmSync(home, { recursive: true, force: true });
});

describe("console in Chromium: the freeze banner", () => {
  it("appears live on every page with the reason and since when, stays across pages and reloads, and goes once the freeze is lifted", async () => {
    const env = serviceEnv(t, home);
    consoleProc = await startConsoleProcess(env);
    browser = await launchBrowser();
    const page = await browser.newPage();
    await login(page, consoleProc.loginUrl);
    await page.waitForURL((u) => u.pathname === "/approvals");
    await expect.poll(() => page.locator("#live").getAttribute("data-state"), { timeout: 10_000 }).toBe("live");
    const banner = page.locator("#freeze-banner");
    expect(await banner.isHidden()).toBe(true);

    const frozen = await runCli(["freeze", "--reason", "spend review <b>now</b>"], env);
    expect(frozen.code, frozen.stderr).toBe(0);
    await banner.waitFor({ state: "visible", timeout: 10_000 });
    const text = await banner.innerText();
    expect(text).toContain("Payments are frozen.");
    // The reason is text, never markup.
    expect(text).toContain("spend review <b>now</b>");
    expect(await banner.locator("b").count()).toBe(0);
    expect(text).toMatch(
      /Since .+ \(.+\), by \S+\/\d+\. Reason: spend review <b>now<\/b>\. No server on this journal signs a new payment until a person runs paid-actions-mcp unfreeze at a terminal/,
    );
    expect(await banner.getAttribute("role")).toBe("alert");

    await page.locator('nav a[data-nav="spending"]').click();
    await page.waitForURL((u) => u.pathname === "/spending");
    expect(await banner.isVisible()).toBe(true);
    await page.goto(`${consoleProc.origin}/executions`);
    await banner.waitFor({ state: "visible", timeout: 10_000 });
    expect(await banner.innerText()).toContain("spend review <b>now</b>");
    await screenshot(page, "freeze-banner");

    const j = await openJournal(env);
    try {
      await j.journal.unfreeze();
    } finally {
      await j.close();
    }
    await banner.waitFor({ state: "hidden", timeout: 10_000 });
    expect(browser.errors()).toEqual([]);
  });
});
