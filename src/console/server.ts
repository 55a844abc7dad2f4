/**
 * The console's HTTP server, on 127.0.0.1 only: every request is checked in one place —
 * the Host (DNS rebinding), then the session cookie (a one-time login makes one: login.ts),
 * then, for a write, the Origin and the session's CSRF token — before it reaches the API,
 * the event stream or the page. Started by `paid-actions-mcp console`, and by an MCP server
 * that offers a person the approval page (URL-mode elicitation, or opened on the desktop).
 * Two doors lead in without a session: /login (a one-time token) and /approve (a one-time
 * code, for hosts that open links inside themselves).
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { apiErrorOf, handleApi, type ApiContext } from "./api.js";
import { CODE_PAGE, handleCodeLogin } from "./code-page.js";
import { OneTimeCodes } from "./codes.js";
import type { ConsoleDeps, ConsoleHandle, ConsoleLogin } from "./deps.js";
import { EventHub } from "./events.js";
import { FORBIDDEN, handleLogin } from "./login.js";
import { createLoginPages, type LoginPages } from "./login-page.js";
import { sendError, sendPage, sendText } from "./respond.js";
import { Guard, LOGIN_TTL_MS, safeNext, SECURITY_HEADERS } from "./security.js";
import { isPageRoute, StaticFiles } from "./static.js";

export type { ConsoleDeps, ConsoleHandle, ConsoleLogin } from "./deps.js";

function version(): string {
  try {
    return (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string })
      .version;
  } catch {
    return "unknown";
  }
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const failed = (e: Error) => reject(e);
    server.once("error", failed);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", failed);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** What a request is checked against and answered from. */
interface Parts {
  guard: Guard;
  codes: OneTimeCodes;
  pages: LoginPages;
  ctx: ApiContext;
  files: StaticFiles;
}

/**
 * One request whose Host is allowed: the login, else the session (401 without one), then for a
 * write the Origin and the session's CSRF token, then the API, an asset or the page.
 */
async function route(
  { guard, codes, pages, ctx, files }: Parts,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const method = req.method ?? "GET";
  const reading = method === "GET" || method === "HEAD";
  if (url.pathname === "/login") return handleLogin(req, res, url, guard, pages);
  if (url.pathname === CODE_PAGE) return handleCodeLogin(req, res, guard, codes);
  const api = url.pathname === "/api" || url.pathname.startsWith("/api/");
  const session = guard.session(req.headers.cookie);
  if (!session) {
    if (api) return sendError(res, 401, "unauthorized", `no console session: ${FORBIDDEN}`);
    return sendPage(
      res,
      401,
      "paid-actions console",
      `This page needs a console session: ${FORBIDDEN} and use the link it prints.`,
    );
  }
  if (!reading) {
    if (!guard.originAllowed(req.headers.origin, req.headers.host))
      return sendError(res, 403, "forbidden", "a write must come from the console's own page (Origin)");
    if (!guard.csrfValid(session, req.headers["x-csrf-token"]))
      return sendError(res, 403, "forbidden", "a write needs the session's X-CSRF-Token (from GET /api/session)");
  }
  if (api) return handleApi(ctx, req, res, session, url);
  if (!reading) return sendText(res, 405, "Method not allowed.\n");
  if (url.pathname.startsWith("/assets/")) return files.asset(res, url.pathname.slice("/assets/".length));
  if (isPageRoute(url.pathname)) return files.page(res);
  sendText(res, 404, "Not found.\n");
}

/**
 * The HTTP server: the security headers on every answer, the Host checked before anything
 * else, then route(); an error a request throws is answered (scrubbed) and, when it is the
 * console's own fault, logged.
 */
function createConsoleServer(
  parts: Parts,
  port: () => number,
  scrub: (text: string) => string,
  log: (line: string) => void,
): Server {
  const server = createServer((req, res) => {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    if (!parts.guard.hostAllowed(req.headers.host)) {
      return sendText(res, 421, `This console answers only as 127.0.0.1:${port()} or localhost:${port()}.\n`);
    }
    let url: URL;
    try {
      url = new URL(req.url ?? "/", `http://${req.headers.host}`);
    } catch {
      return sendText(res, 400, "Bad request.\n");
    }
    route(parts, req, res, url).catch((e: unknown) => {
      const error = apiErrorOf(e, scrub);
      if (error.status >= 500) log(`console: ${req.method} ${url.pathname}: ${error.message}`);
      if (res.headersSent) return void res.end();
      if (url.pathname.startsWith("/api/")) sendError(res, error.status, error.code, error.message);
      else sendText(res, error.status, `${error.message}\n`);
    });
  });
  // No request should hold a socket for long, but an event stream lives as long as its page.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  return server;
}

/**
 * What mints a one-time login for a page of the console: its link, and its sign-in page
 * written on first ask (a failed write is tried again on the next ask).
 */
function loginMaker(guard: Guard, pages: LoginPages, origin: string): (next?: string) => ConsoleLogin {
  return (next) => {
    const token = guard.mintToken();
    const path = safeNext(next);
    let page: Promise<{ url: string; path: string }> | undefined;
    return {
      url: `${origin}/login?token=${token}&next=${encodeURIComponent(path)}`,
      page: () =>
        (page ??= pages.write(token, path).catch((e: unknown) => {
          page = undefined; // a full disk or a bad folder: the next call tries again
          throw e;
        })),
    };
  };
}

/**
 * Starts the console on 127.0.0.1 (`o.port`, or a free port): resolves once it listens.
 * Rejects with the listen error (code EADDRINUSE when the port is taken).
 */
export async function startConsole(deps: ConsoleDeps, o: { port?: number } = {}): Promise<ConsoleHandle> {
  const now = deps.now ?? Date.now;
  const log = deps.log ?? (() => undefined);
  let port = 0;
  const guard = new Guard(() => port, now);
  const codes = new OneTimeCodes(now);
  const pages = createLoginPages({
    home: deps.home,
    origin: () => `http://127.0.0.1:${port}`,
    ttlMs: LOGIN_TTL_MS,
    log,
  });
  const events = new EventHub({ journal: deps.journal, config: deps.config, now, log });
  const files = new StaticFiles();
  const ctx: ApiContext = { d: { ...deps, now, log }, events, version: version(), pinTurn: Promise.resolve() };
  const scrub = (text: string) => deps.transcripts.scrub(text);
  const server = createConsoleServer({ guard, codes, pages, ctx, files }, () => port, scrub, log);
  port = await listen(server, o.port ?? 0);
  const origin = `http://127.0.0.1:${port}`;
  let closing: Promise<void> | undefined;
  const login = loginMaker(guard, pages, origin);
  ctx.login = login;
  return {
    origin,
    port,
    login,
    loginUrl: (next?: string) => login(next).url,
    codeLogin: (next?: string) => ({ url: `${origin}${CODE_PAGE}`, code: codes.mint(safeNext(next)) }),
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        pages.close();
        events.close();
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
