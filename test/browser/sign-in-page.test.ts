/**
 * `paid-actions-mcp console` signing the person's browser in, end to end in a real headless
 * Chromium: the built CLI runs with a fake `xdg-open` first on PATH, and Chromium opens what
 * that opener was handed — the sign-in page's path, as a real opener hands a file to the
 * default browser. The page posts itself (Origin: null), the console's hop page moves on to
 * the console with the SameSite=Strict session, and the live approvals page works, with no
 * CSP violation anywhere (the file's own policy, the hop page, the console).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, login, requireChromium, sessionCookie, type TestBrowser } from "../helpers/browser.js";
import { fakeOpener, type FakeOpener } from "../helpers/opener.js";
import { CLI_PATH, ensureBuilt } from "../helpers/process.js";

let root: string;
let opener: FakeOpener;
let browser: TestBrowser | undefined;
let child: ChildProcess | undefined;

beforeAll(() => {
  requireChromium();
  ensureBuilt();
  root = mkdtempSync(join(tmpdir(), "pam-browser-sign-in-"));
  opener = fakeOpener(root);
}, 120_000);
afterEach(async () => {
  await browser?.close();
  browser = undefined;
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the console command's sign-in page in Chromium", () => {
  it("opened by path, it signs the browser in and lands on the console with its session", async () => {
    const env = { ...opener.env("chromium"), PAID_ACTIONS_HOME: join(root, "home") };
    child = spawn(process.execPath, [CLI_PATH, "console"], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout!.on("data", (c: Buffer) => (out += c));
    const [path] = await opener.argv("chromium");
    const origin = new URL(/^Console: (\S+)$/m.exec(out)![1]!).origin;

    browser = await launchBrowser();
    const page = await browser.newPage();
    await login(page, pathToFileURL(path!).href);
    expect(new URL(page.url()).origin).toBe(origin);
    await page.waitForURL((u) => u.pathname === "/approvals");
    await expect.poll(() => page.locator("#live").getAttribute("data-state"), { timeout: 10_000 }).toBe("live");
    await page.getByText("Nothing is waiting for you").waitFor();
    expect(await sessionCookie(browser.context, origin)).toMatch(/^pam_console_\d+=/);
    expect(await page.evaluate(async () => (await fetch("/api/session")).status)).toBe(200);
    expect(existsSync(path!)).toBe(false);
    expect(browser.errors()).toEqual([]);
  });
});
