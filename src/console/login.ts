/**
 * The console's door: /login spends a one-time token, whichever way it reached the person.
 *
 * - GET /login?token=…&next=… is the link printed on stdout (a terminal is not a command
 *   line). The person's browser goes there itself, so a 303 to `next` carries the new cookie.
 * - POST /login (a form) comes from the sign-in page an opener was handed by path
 *   (login-page.ts), a file:// page: its Origin is "null" and the navigation is cross-site,
 *   so a redirect would reach `next` without the SameSite=Strict cookie. The answer is a
 *   small page of this origin that moves on to `next` by <meta http-equiv="refresh"> (the
 *   CSP allows no inline script): a navigation this origin starts, which the cookie follows.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { LoginPages } from "./login-page.js";
import { ApiError, escapeHtml, sendPage, sendText } from "./respond.js";
import { safeNext, type Guard } from "./security.js";

/** What a refused or sessionless visitor is told to do. */
export const FORBIDDEN = "open the console with `paid-actions-mcp console`";

/** A token, a `next` of at most 512 characters, their names: a sign-in form is far smaller. */
const MAX_FORM_BYTES = 4 * 1024;

/** Spends a token: the new session's cookie, or undefined for a token that does not work. */
function redeem(guard: Guard, pages: LoginPages, token: string | null | undefined): string | undefined {
  // Used or refused, a presented token's page has done its work.
  if (token && token.length <= 200) pages.spent(token);
  if (!guard.redeem(token)) return undefined;
  return guard.cookie(guard.createSession().id);
}

function refuse(res: ServerResponse): void {
  sendPage(
    res,
    403,
    "This console link does not work",
    `A console link works once, for 10 minutes. For a new one, ${FORBIDDEN}.`,
  );
}

/** The same-origin hop to `next` after a form login (see the module comment). */
function sendHop(res: ServerResponse, cookie: string, next: string): void {
  const href = escapeHtml(next);
  const body =
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=${href}">` +
    `<title>paid-actions console</title></head><body><p>Signed in. <a href="${href}">Continue to the console</a>.</p></body></html>\n`;
  res.writeHead(200, {
    "Set-Cookie": cookie,
    "Content-Type": "text/html; charset=utf-8",
    "Content-Length": Buffer.byteLength(body),
  });
  res.end(body);
}

/** A urlencoded form body of at most MAX_FORM_BYTES; ApiError 413/415 otherwise. */
export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(req.headers["content-type"] ?? "")) {
    throw new ApiError(415, "invalid_input", "a sign-in form is application/x-www-form-urlencoded");
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES)
      throw new ApiError(413, "invalid_input", `a sign-in form is at most ${MAX_FORM_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

/** Answers GET and POST /login (any other method: 405, and no token is spent). */
export async function handleLogin(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  guard: Guard,
  pages: LoginPages,
): Promise<void> {
  const method = req.method ?? "GET";
  if (method === "GET") {
    const cookie = redeem(guard, pages, url.searchParams.get("token"));
    if (!cookie) return refuse(res);
    // Started by another site's page (the console's 127.0.0.1 page moving to localhost for a
    // passkey): a redirect would reach `next` without the SameSite=Strict cookie; the hop does not.
    if (req.headers["sec-fetch-site"] === "cross-site")
      return sendHop(res, cookie, safeNext(url.searchParams.get("next")));
    res.writeHead(303, { "Set-Cookie": cookie, Location: safeNext(url.searchParams.get("next")), "Content-Length": 0 });
    return void res.end();
  }
  // Only a GET or a POST spends a token (a HEAD from a link preview must not).
  if (method !== "POST") return sendText(res, 405, "Method not allowed.\n");
  // The sign-in page is a file (Origin "null"); the console's own page is allowed too. A
  // foreign site's form is refused before its token is looked at, so it cannot spend one.
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== "null" && !guard.originAllowed(origin, req.headers.host)) {
    return sendPage(
      res,
      403,
      "This console link does not work",
      `A sign-in form must come from the console's own sign-in page. For a new one, ${FORBIDDEN}.`,
    );
  }
  const form = await readForm(req);
  const cookie = redeem(guard, pages, form.get("token"));
  if (!cookie) return refuse(res);
  sendHop(res, cookie, safeNext(form.get("next")));
}
