/**
 * The console's page and its assets, served from the `assets/` folder next to this module
 * (dist/console/assets once built; `npm run build` copies them there). Every page route gets
 * index.html — the page routes on location.pathname itself — and /assets/<file> gets that
 * file, with its content type, and never anything outside the folder.
 */
import { readFile, stat } from "node:fs/promises";
import type { ServerResponse } from "node:http";
import { extname, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { sendText } from "./respond.js";

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
  ".woff2": "font/woff2",
};

/** The paths the page answers to (it routes on location.pathname). */
const PAGE =
  /^\/(?:(?:approvals|executions|purchases|receipts|transcripts)(?:\/[A-Za-z0-9_.-]{1,100})?|spending|audit|passkeys)?$/;

export function isPageRoute(pathname: string): boolean {
  return PAGE.test(pathname);
}

export class StaticFiles {
  readonly dir: string;

  constructor(dir: URL = new URL("./assets/", import.meta.url)) {
    this.dir = resolve(fileURLToPath(dir));
  }

  /** The file an /assets/ path names inside the folder, or undefined for anything else (traversal, hidden files, odd characters). */
  resolveAsset(rest: string): string | undefined {
    let name: string;
    try {
      name = decodeURIComponent(rest);
    } catch {
      return undefined;
    }
    const segments = name.split("/");
    if (segments.some((s) => !/^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,100}$/.test(s) || s.includes(".."))) return undefined;
    const path = resolve(this.dir, ...segments);
    return path.startsWith(this.dir + sep) ? path : undefined;
  }

  /** Serves `/assets/<rest>`: 404 for anything that is not a file of the folder. */
  async asset(res: ServerResponse, rest: string): Promise<void> {
    const path = this.resolveAsset(rest);
    if (!path || !(await this.send(res, path))) sendText(res, 404, "Not found.\n");
  }

  /** Serves index.html for a page route. */
  async page(res: ServerResponse): Promise<void> {
    if (!(await this.send(res, resolve(this.dir, "index.html")))) {
      sendText(
        res,
        500,
        "The console's page is missing from this installation (dist/console/assets/index.html); reinstall paid-actions-mcp or run npm run build.\n",
      );
    }
  }

  private async send(res: ServerResponse, path: string): Promise<boolean> {
    try {
      if (!(await stat(path)).isFile()) return false;
      const body = await readFile(path);
      res.writeHead(200, {
        "Content-Type": CONTENT_TYPES[extname(path).toLowerCase()] ?? "application/octet-stream",
        "Content-Length": body.length,
      });
      res.end(body);
      return true;
    } catch {
      return false;
    }
  }
}
