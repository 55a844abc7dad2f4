/**
 * `paid-actions-mcp console` opening the browser, from dist/, with a fake `xdg-open` first
 * on PATH (the one stand-in, at the OS boundary: a script that records its argv and stays
 * alive a while, as an opener that starts a browser does). While it runs, every process's
 * command line (/proc/<pid>/cmdline, readable by any local user) is read: the login token is
 * in none of them — the opener was handed the path of the sign-in page, which only this user
 * can read, and which signs in once. The openers of macOS and Windows are handed the same.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openerCommand } from "../../src/commands/console.js";
import { hopTarget, postLoginPage, readLoginPage } from "../helpers/login-page.js";
import { fakeOpener, type FakeOpener } from "../helpers/opener.js";
import { CLI_PATH, ensureBuilt } from "../helpers/process.js";
import { waitFor } from "../helpers/wait.js";

let root: string;
let home: string;
let opener: FakeOpener;
const children: ChildProcess[] = [];

beforeAll(() => {
  ensureBuilt();
  root = mkdtempSync(join(tmpdir(), "pam-opener-"));
  home = join(root, "home");
  opener = fakeOpener(root);
}, 120_000);
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface RunningConsole {
  child: ChildProcess;
  link: string;
  token: string;
  stderr(): string;
  exited: Promise<number | null>;
}

/** `node dist/cli.js console` (it opens the browser), with the fake opener first on PATH. */
function startConsole(name: string): Promise<RunningConsole> {
  const env = { ...opener.env(name), PAID_ACTIONS_HOME: home };
  const child = spawn(process.execPath, [CLI_PATH, "console"], { env, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let out = "";
  let err = "";
  child.stderr!.on("data", (c: Buffer) => (err += c));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no link within 20 s; stdout: ${out}; stderr: ${err}`)), 20_000);
    void exited.then((code) => reject(new Error(`exited with ${code} before printing its link; stderr: ${err}`)));
    child.stdout!.on("data", (c: Buffer) => {
      out += c;
      const m = /^Console: (http:\/\/127\.0\.0\.1:\d+\/login\?token=([A-Za-z0-9_-]+)\S*)$/m.exec(out);
      if (!m) return;
      clearTimeout(timer);
      resolve({ child, link: m[1]!, token: m[2]!, stderr: () => err, exited });
    });
  });
}

/** Every process's command line as any local user reads it (NULs between arguments). */
function commandLines(): string[] {
  const lines: string[] = [];
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      lines.push(readFileSync(`/proc/${pid}/cmdline`, "latin1").replace(/\0/g, " "));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return lines;
}

describe("paid-actions-mcp console opens the browser", () => {
  it("hands the opener the sign-in page's path: the token is on no command line while it runs; the page is 0600 and signs in once", async () => {
    const c = await startConsole("signs-in");
    const argv = await opener.argv("signs-in");
    // Read every command line, several times, while the opener lingers.
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) {
      for (const line of commandLines()) seen.add(line);
      await new Promise((r) => setTimeout(r, 100)); // samples 1 s of the opener's 3 s: no sync
    }
    expect([...seen].filter((l) => l.includes(c.token))).toEqual([]);
    // The scan did see the opener itself, with its argument: it ran while we looked.
    expect([...seen].some((l) => l.includes(`${opener.bin}/xdg-open ${argv[0]}`))).toBe(true);

    expect(argv).toHaveLength(1);
    const path = argv[0]!.startsWith("file:") ? fileURLToPath(argv[0]!) : argv[0]!;
    expect(isAbsolute(path)).toBe(true);
    expect(path.startsWith(join(home, "console") + sep)).toBe(true);
    const form = readLoginPage(path);
    expect(form).toMatchObject({
      token: c.token,
      next: "/",
      mode: 0o600,
      dirMode: 0o700,
      action: `${new URL(c.link).origin}/login`,
    });

    const first = await postLoginPage(form);
    expect(first.status).toBe(200);
    expect(hopTarget(await first.text())).toBe("/");
    const cookie = first.headers.get("set-cookie")!.split(";")[0]!;
    expect((await fetch(new URL("/api/session", c.link), { headers: { cookie } })).status).toBe(200);
    expect(existsSync(path)).toBe(false);
    expect((await postLoginPage(form)).status).toBe(403);
    expect((await fetch(c.link, { redirect: "manual" })).status).toBe(403);

    c.child.kill("SIGTERM");
    expect(await c.exited).toBe(0);
    expect(c.stderr()).not.toContain(c.token);
  });

  it("a page nobody used is deleted when the console stops", async () => {
    const c = await startConsole("unused");
    const [path] = await opener.argv("unused");
    expect(existsSync(path!)).toBe(true);
    c.child.kill("SIGINT");
    expect(await c.exited).toBe(0);
    expect(existsSync(path!)).toBe(false);
    expect(readdirSync(join(home, "console"))).toEqual([]);
  });

  it("without a place for the page it opens nothing and says so, and the printed link still works", async () => {
    const blocked = join(root, "blocked-home");
    mkdirSync(blocked);
    writeFileSync(join(blocked, "console"), "not a folder");
    const child = spawn(process.execPath, [CLI_PATH, "console"], {
      env: { ...opener.env("blocked"), PAID_ACTIONS_HOME: blocked },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let out = "";
    let err = "";
    child.stdout!.on("data", (c: Buffer) => (out += c));
    child.stderr!.on("data", (c: Buffer) => (err += c));
    await waitFor(() => /sign-in page/.test(err), { intervalMs: 50, what: () => `the refusal; stderr: ${err}` });
    const link = /^Console: (\S+)$/m.exec(out)![1]!;
    expect(err).toContain("open the link above yourself");
    expect(err).not.toContain(new URL(link).searchParams.get("token")!);
    // A negative check: no event marks that an opener will never run, so it watches a while.
    await new Promise((r) => setTimeout(r, 300));
    expect(existsSync(opener.log("blocked"))).toBe(false);
    expect((await fetch(link, { redirect: "manual" })).status).toBe(303);
    child.kill("SIGTERM");
  });
});

describe("the OS openers", () => {
  const path = "/home/someone/.paid-actions-mcp/console/login-0123.html";
  it.each([
    ["linux", "xdg-open", [path]],
    ["freebsd", "xdg-open", [path]],
    ["darwin", "open", [path]],
    // `start` takes its first quoted argument as a title, hence the empty one.
    ["win32", "cmd", ["/c", `start "" "${path}"`]],
  ] as const)("%s: %s is handed the page's path and nothing else", (platform, command, args) => {
    const c = openerCommand(path, platform);
    expect(c.command).toBe(command);
    expect(c.args).toEqual(args);
    expect(c.options).toMatchObject({ detached: true, stdio: "ignore" });
  });
});
