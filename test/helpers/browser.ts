/**
 * Browser tests' helpers: a headless Chromium (the system's, else npm's: chromium.ts) driven
 * by playwright-core, the console started as a person starts it (`node dist/cli.js console
 * --no-open`, its login link read from stdout), signing a page in with that link, the page's
 * errors (a CSP violation or a script error fails the test), and full-page screenshots under
 * test/output/screenshots/.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { request as httpRequest } from "node:http";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { findChromium, type BrowserSource, type FoundBrowser } from "./chromium.js";
import { CLI_PATH, PROJECT_ROOT } from "./process.js";

export const SCREENSHOTS = join(PROJECT_ROOT, "test", "output", "screenshots");

const ARGS = [
  "--headless=new",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Fails (never skips) when there is no browser to drive, saying how to get one; returns the
 * one launchBrowser() will start (PAM_TEST_BROWSER, or `source`, chooses whose).
 */
export function requireChromium(source?: BrowserSource): FoundBrowser {
  return findChromium(source);
}

export interface TestBrowser {
  browser: Browser;
  context: BrowserContext;
  /** Opens a page that records its console errors, uncaught exceptions and CSP violations. */
  newPage(): Promise<Page>;
  /** Every error any page reported so far. */
  errors(): string[];
  close(): Promise<void>;
}

export async function launchBrowser(
  o: { width?: number; height?: number; source?: BrowserSource } = {},
): Promise<TestBrowser> {
  const found = requireChromium(o.source);
  const browser = await chromium.launch({ ...(await found.launchOptions()), args: ARGS, timeout: 30_000 });
  const context = await browser.newContext({
    viewport: { width: o.width ?? 1280, height: o.height ?? 900 },
    deviceScaleFactor: 1,
    locale: "en-GB",
    timezoneId: "UTC",
  });
  const errors: string[] = [];
  return {
    browser,
    context,
    async newPage() {
      const page = await context.newPage();
      page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
      page.on("console", (m) => {
        // The 401/403/409 answers the tests provoke show up as failed-resource lines; they are expected.
        if (m.type() === "error" && !/Failed to load resource/.test(m.text())) errors.push(`console: ${m.text()}`);
      });
      return page;
    },
    errors: () => [...errors],
    async close() {
      await context.close().catch(() => undefined);
      await browser.close().catch(() => undefined);
    },
  };
}

/**
 * Follows a one-time login link, or opens the sign-in page (a file:// URL) as an opener hands
 * it to the browser; resolves on the console page it lands on.
 */
export async function login(page: Page, loginUrl: string): Promise<void> {
  if (loginUrl.startsWith("file:")) {
    await page.goto(loginUrl, { waitUntil: "commit" });
    // The page submits itself, the console answers with a hop page, the hop lands on `next`.
    await page.waitForURL((u) => u.protocol === "http:" && u.pathname !== "/login", {
      timeout: 15_000,
      waitUntil: "domcontentloaded",
    });
    return;
  }
  const res = await page.goto(loginUrl, { waitUntil: "domcontentloaded" });
  if (!res || res.status() >= 400) throw new Error(`the login link answered ${res?.status()}`);
  if (new URL(page.url()).pathname === "/login") throw new Error("the login link did not redirect into the console");
}

/** `Cookie:` header value of the context's console session for an origin. */
export async function sessionCookie(context: BrowserContext, origin: string): Promise<string> {
  const cookies = await context.cookies(origin);
  const c = cookies.find((x) => x.name === `pam_console_${new URL(origin).port}`);
  if (!c)
    throw new Error(`no console session cookie for ${origin}: ${cookies.map((x) => x.name).join(", ") || "none"}`);
  return `${c.name}=${c.value}`;
}

/** A full-page PNG at test/output/screenshots/<name>.png; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true, animations: "disabled" });
  return path;
}

export interface ConsoleProcess {
  child: ChildProcess;
  /** The login link it printed (one-time). */
  loginUrl: string;
  origin: string;
  port: number;
  stderr(): string;
  /** SIGTERM, then SIGKILL if it overstays; resolves with its exit. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `node dist/cli.js console --no-open` on an env (its home's journal) and reads its `Console: <url>` line. */
export function startConsoleProcess(
  env: Record<string, string>,
  args: string[] = [],
  timeoutMs = 30_000,
): Promise<ConsoleProcess> {
  const child = spawn(process.execPath, [CLI_PATH, "console", "--no-open", ...args], {
    env,
    cwd: PROJECT_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  child.stderr!.on("data", (c: Buffer) => (err += c.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new Error(`the console printed no "Console: <url>" line within ${timeoutMs} ms; stdout: ${out} stderr: ${err}`),
      );
    }, timeoutMs);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(
        new Error(`the console exited (${code ?? signal}) before printing its link; stdout: ${out} stderr: ${err}`),
      );
    });
    child.stdout!.on("data", (c: Buffer) => {
      out += c.toString();
      const m = /^Console: (http:\/\/\S+)$/m.exec(out);
      if (!m) return;
      clearTimeout(timer);
      const loginUrl = m[1]!;
      const url = new URL(loginUrl);
      resolve({
        child,
        loginUrl,
        origin: url.origin,
        port: Number(url.port),
        stderr: () => err,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
          const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
          const r = await exited;
          clearTimeout(killer);
          return r;
        },
      });
    });
  });
}

/** One raw request (node:http lets a test send any Host header). */
export function raw(
  url: string,
  o: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: o.method ?? "GET", headers: o.headers }, (res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += c.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end(o.body);
  });
}
