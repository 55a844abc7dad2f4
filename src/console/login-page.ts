/**
 * The console's sign-in page on disk: how a one-time login token reaches the person's browser
 * without passing through a command line. An opener (`xdg-open`, `open`, `start`, or the
 * host's for URL-mode elicitation) is handed the path of a small HTML file instead of a URL
 * with the token in it: any local user can read a process's command line (/proc/<pid>/cmdline,
 * `ps`), but only this user can read the file (mode 0600, in a 0700 folder under the home).
 * The page POSTs the token to the console's /login and submits itself on load.
 *
 * A page lives as long as its token: it is deleted once the token is used (or refused), when
 * the token expires, and when the console closes; pages a killed console left behind are
 * swept when the next page is written (their tokens died with it).
 */
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, lstatSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { digest } from "./security.js";

const PAGE_NAME = /^login-[0-9a-f]{32}\.html$/;

/** The folder's name under the home. */
export const LOGIN_PAGE_DIR = "console";

/** Submits the form on load; allowed by the page's own CSP through its hash, and nothing else. */
const SUBMIT = "document.forms[0].submit();";
const SUBMIT_HASH = `sha256-${createHash("sha256").update(SUBMIT).digest("base64")}`;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The page for one token: a form that POSTs it (and `next`) to the console and submits itself.
 * The comment on top is for whoever opens it as text (an editor, not a browser).
 */
export function loginPageHtml(origin: string, token: string, next: string): string {
  const csp = `default-src 'none'; script-src '${SUBMIT_HASH}'; form-action ${origin}; base-uri 'none'`;
  return [
    "<!doctype html>",
    "<!-- paid-actions-mcp console: a one-time sign-in page, readable only by you. Open it in your web browser:",
    "     it signs that browser in once, within 10 minutes, and is deleted then. Do not share it. -->",
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${csp}">`,
    '<meta name="referrer" content="no-referrer">',
    "<title>Signing in to the paid-actions console</title></head><body>",
    `<form method="post" action="${escapeHtml(origin)}/login">`,
    `<input type="hidden" name="token" value="${escapeHtml(token)}">`,
    `<input type="hidden" name="next" value="${escapeHtml(next)}">`,
    '<p>Signing in to the paid-actions console… <button type="submit">Continue</button></p>',
    "</form>",
    `<script>${SUBMIT}</script>`,
    "</body></html>",
    "",
  ].join("\n");
}

/**
 * The folder for sign-in pages: created 0700; an existing one must be a real folder of this
 * user (not a link), and is narrowed to 0700 if it was wider.
 */
function privateDir(home: string): string {
  const dir = join(home, LOGIN_PAGE_DIR);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a folder`);
  if (process.getuid && st.uid !== process.getuid()) throw new Error(`${dir} belongs to another user`);
  if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
  return dir;
}

export interface LoginPages {
  /** Writes the page for one token; resolves with its file:// URL and path. */
  write(token: string, next: string): Promise<{ url: string; path: string }>;
  /** The token was presented (used or refused): its page, if any, goes. */
  spent(token: string): void;
  /** Deletes every page still waiting (the console is closing). */
  close(): void;
}

export function createLoginPages(o: {
  home: string;
  origin: () => string;
  ttlMs: number;
  log?: (line: string) => void;
}): LoginPages {
  /** digest(token) -> its page */
  const pages = new Map<string, { path: string; timer: NodeJS.Timeout }>();
  let swept = false;
  let closed = false;

  const remove = (key: string) => {
    const page = pages.get(key);
    if (!page) return;
    pages.delete(key);
    clearTimeout(page.timer);
    try {
      rmSync(page.path, { force: true });
    } catch (e) {
      o.log?.(`console: could not delete a sign-in page (${(e as Error).message})`);
    }
  };

  /** Pages older than a token's life were left by a console that did not close. */
  const sweep = (dir: string) => {
    for (const name of readdirSync(dir)) {
      if (!PAGE_NAME.test(name)) continue;
      const path = join(dir, name);
      try {
        if (Date.now() - statSync(path).mtimeMs > o.ttlMs) rmSync(path, { force: true });
      } catch {
        // Gone already, or another console's: either way not ours to report.
      }
    }
  };

  return {
    async write(token, next) {
      // A page written after close() would outlive its console (its timer does not hold the process).
      if (closed) throw new Error("the console is closed");
      const dir = privateDir(o.home);
      if (!swept) {
        swept = true;
        sweep(dir);
      }
      const path = join(dir, `login-${randomBytes(16).toString("hex")}.html`);
      // Created with its mode, and never through an existing name (a planted link fails with EEXIST).
      const file = await open(path, "wx", 0o600);
      const key = digest(token);
      if (closed) {
        await file.close().catch(() => undefined);
        rmSync(path, { force: true });
        throw new Error("the console is closed");
      }
      remove(key); // one page per token
      pages.set(key, { path, timer: setTimeout(() => remove(key), o.ttlMs).unref() });
      try {
        await file.writeFile(loginPageHtml(o.origin(), token, next));
      } catch (e) {
        remove(key);
        throw e;
      } finally {
        await file.close().catch(() => undefined);
      }
      return { url: pathToFileURL(path).href, path };
    },
    spent: (token) => remove(digest(token)),
    close() {
      closed = true;
      for (const key of [...pages.keys()]) remove(key);
    },
  };
}
