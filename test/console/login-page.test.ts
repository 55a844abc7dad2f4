/**
 * The console's sign-in page over real HTTP and a real home: the file an opener or a host is
 * handed instead of a link (mode 0600 in a 0700 folder, no token in its URL), its form posted
 * as Chromium posts it from a file:// page (Origin: null), the same-origin hop page that
 * carries the SameSite=Strict cookie on to `next`, one use per token whichever way it comes,
 * and the page's life: gone once used, at expiry, and when the console closes.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { openJournal } from "../../src/app/index.js";
import { createLoginPages, LOGIN_PAGE_DIR } from "../../src/console/login-page.js";
import { startConsole, type ConsoleHandle } from "../../src/console/server.js";
import { rawRequest } from "../helpers/console-http.js";
import { hopTarget, postLoginPage, readLoginPage } from "../helpers/login-page.js";

let home: string;
let j: Awaited<ReturnType<typeof openJournal>>;
let handle: ConsoleHandle;
const extra: ConsoleHandle[] = [];

const start = () =>
  startConsole({
    engine: j.engine,
    journal: j.journal,
    transcripts: j.transcripts,
    home,
    config: undefined,
    audit: async () => ({}),
  });

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "pam-login-page-"));
  j = await openJournal({ PAID_ACTIONS_HOME: home });
  handle = await start();
});
afterEach(async () => {
  await Promise.all(extra.splice(0).map((h) => h.close()));
});
afterAll(async () => {
  await handle?.close();
  await j?.close();
  rmSync(home, { recursive: true, force: true });
});

const pageDir = () => join(home, LOGIN_PAGE_DIR);

describe("console: the sign-in page", () => {
  it("is a file only this user can read, named by a URL without the token; its form signs in once and the hop page lands on `next` with the cookie", async () => {
    const login = handle.login("/approvals/apr_x");
    const page = await login.page();
    const token = new URL(login.url).searchParams.get("token")!;
    expect(page.url).toMatch(/^file:\/\//);
    expect(page.url).not.toContain(token);
    expect(page.path.startsWith(`${pageDir()}/login-`)).toBe(true);
    const form = readLoginPage(page.url);
    expect(form).toMatchObject({
      action: `${handle.origin}/login`,
      token,
      next: "/approvals/apr_x",
      mode: 0o600,
      dirMode: 0o700,
    });
    // The page allows its own submit script and a post to this console, nothing else.
    expect(form.html).toMatch(
      /Content-Security-Policy" content="default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+'; form-action http:\/\/127\.0\.0\.1:\d+; base-uri 'none'"/,
    );
    expect(await login.page()).toEqual(page); // one page per login

    const first = await postLoginPage(form);
    expect(first.status).toBe(200);
    // No redirect: after a cross-site POST the Strict cookie would not come along to `next`.
    expect(first.headers.get("location")).toBeNull();
    const cookie = first.headers.get("set-cookie")!;
    expect(cookie).toMatch(
      new RegExp(`^pam_console_${handle.port}=[A-Za-z0-9_-]{40,}; HttpOnly; SameSite=Strict; Path=/$`),
    );
    const hop = await first.text();
    expect(hopTarget(hop)).toBe("/approvals/apr_x");
    expect(hop).not.toContain("<script");
    expect(first.headers.get("content-security-policy")).toContain("script-src 'self'");
    const session = await fetch(`${handle.origin}/api/session`, { headers: { cookie: cookie.split(";")[0]! } });
    expect(session.status).toBe(200);
    expect(existsSync(page.path)).toBe(false);

    // Once: the form again, and the printed link of the same login, are refused.
    const again = await postLoginPage(form);
    expect(again.status).toBe(403);
    expect(again.headers.get("set-cookie")).toBeNull();
    expect(await again.text()).toContain("paid-actions-mcp console");
    expect((await fetch(login.url, { redirect: "manual" })).status).toBe(403);
  });

  it("the printed link and the page are one token: the link used first deletes the page, and the page then fails", async () => {
    const login = handle.login("/");
    const page = await login.page();
    const form = readLoginPage(page.path);
    const viaLink = await fetch(login.url, { redirect: "manual" });
    expect(viaLink.status).toBe(303);
    expect(viaLink.headers.get("location")).toBe("/");
    expect(existsSync(page.path)).toBe(false);
    expect((await postLoginPage(form)).status).toBe(403);
  });

  it("a form from a foreign Origin, of another type, too large, or to a foreign Host is refused without spending the token; HEAD and PUT are 405", async () => {
    const login = handle.login("/spending");
    const form = readLoginPage((await login.page()).path);
    const body = new URLSearchParams({ token: form.token, next: form.next }).toString();
    const post = (headers: Record<string, string>, b = body) =>
      rawRequest(handle.port, {
        method: "POST",
        path: "/login",
        headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
        body: b,
      });
    const foreign = await post({ origin: "http://evil.example" });
    expect(foreign.status).toBe(403);
    expect(foreign.headers["set-cookie"]).toBeUndefined();
    expect((await post({ origin: `http://127.0.0.1:${handle.port + 1}` })).status).toBe(403);
    expect((await post({ origin: "null", "content-type": "application/json" })).status).toBe(415);
    expect((await post({ origin: "null", "content-type": "text/plain" })).status).toBe(415);
    expect((await post({ origin: "null" }, `${body}&pad=${"x".repeat(5000)}`)).status).toBe(413);
    expect((await post({ origin: "null", host: `evil.example:${handle.port}` })).status).toBe(421);
    for (const method of ["HEAD", "PUT"]) {
      expect((await rawRequest(handle.port, { method, path: `/login?token=${form.token}` })).status, method).toBe(405);
    }
    expect(existsSync(form.path)).toBe(true);
    // Still good for the person's own browser.
    const ok = await postLoginPage(form);
    expect(ok.status).toBe(200);
    expect(hopTarget(await ok.text())).toBe("/spending");
  });

  it("a form posted from the console's own Origin or with none (no browser's cross-site form) works too; a `next` outside the console hops to /", async () => {
    const own = readLoginPage((await handle.login("/audit").page()).path);
    expect((await postLoginPage(own, { origin: handle.origin })).status).toBe(200);
    // A path of the console stays as it is, but only as text in the hop page.
    const markup = `/"><script>alert(1)</script>`;
    for (const next of ["//evil.example/x", "https://evil.example/", "/\\evil.example", "approvals", markup]) {
      const form = readLoginPage((await handle.login("/").page()).path);
      const body = new URLSearchParams({ token: form.token, next }).toString();
      const res = await rawRequest(handle.port, {
        method: "POST",
        path: "/login",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body,
      });
      expect(res.status, next).toBe(200);
      const hop = res.body;
      expect(hopTarget(hop), next).toBe(next === markup ? markup : "/");
      expect(hop).not.toContain("<script");
    }
  });

  it("pages not used are deleted when the console closes; a folder left too open is narrowed to 0700", async () => {
    chmodSync(pageDir(), 0o755);
    const other = await start();
    extra.push(other);
    const a = await other.login("/").page();
    expect(statSync(pageDir()).mode & 0o777).toBe(0o700);
    const b = await other.login("/executions").page();
    expect(existsSync(a.path) && existsSync(b.path)).toBe(true);
    await other.close();
    expect(existsSync(a.path)).toBe(false);
    expect(existsSync(b.path)).toBe(false);
  });
});

describe("console: sign-in pages on disk", () => {
  const origin = () => "http://127.0.0.1:1";
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "pam-login-pages-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("a page goes when its token expires", async () => {
    // The page's timer is the console's own: fake timers move it on instead of waiting it out.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const pages = createLoginPages({ home: join(dir, "expiry"), origin, ttlMs: 300 });
      const { path } = await pages.write("t".repeat(43), "/");
      expect(existsSync(path)).toBe(true);
      await vi.advanceTimersByTimeAsync(299);
      expect(existsSync(path)).toBe(true);
      await vi.advanceTimersByTimeAsync(1);
      expect(existsSync(path)).toBe(false);
      pages.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("pages a killed console left are swept when the next is written (a fresh one of another console stays)", async () => {
    const h = join(dir, "sweep");
    mkdirSync(join(h, LOGIN_PAGE_DIR), { recursive: true, mode: 0o700 });
    const stale = join(h, LOGIN_PAGE_DIR, `login-${"a".repeat(32)}.html`);
    const fresh = join(h, LOGIN_PAGE_DIR, `login-${"b".repeat(32)}.html`);
    const notOurs = join(h, LOGIN_PAGE_DIR, "notes.txt");
    for (const f of [stale, fresh, notOurs]) writeFileSync(f, "x", { mode: 0o600 });
    const old = (Date.now() - 11 * 60_000) / 1000;
    utimesSync(stale, old, old);
    utimesSync(notOurs, old, old);
    const pages = createLoginPages({ home: h, origin, ttlMs: 10 * 60_000 });
    await pages.write("u".repeat(43), "/");
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(fresh)).toBe(true);
    expect(existsSync(notOurs)).toBe(true);
    pages.close();
    expect(readdirSync(join(h, LOGIN_PAGE_DIR)).sort()).toEqual([`login-${"b".repeat(32)}.html`, "notes.txt"]);
  });

  it("refuses a folder that is a link (it could point anywhere) and writes nothing", async () => {
    const h = join(dir, "linked");
    mkdirSync(h, { mode: 0o700 });
    const elsewhere = mkdtempSync(join(tmpdir(), "pam-elsewhere-"));
    symlinkSync(elsewhere, join(h, LOGIN_PAGE_DIR));
    const pages = createLoginPages({ home: h, origin, ttlMs: 60_000 });
    await expect(pages.write("v".repeat(43), "/")).rejects.toThrow(/is not a folder/);
    expect(readdirSync(elsewhere)).toEqual([]);
    rmSync(elsewhere, { recursive: true, force: true });
  });
});
