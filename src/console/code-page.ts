/**
 * The console's `/approve` page: where a person types the one-time code (codes.ts) shown to
 * them by a host that opens links inside itself, and is signed in on the console's page for
 * the payment it names. GET shows the form; POST (from this page only: its Origin must be the
 * console's, which the page's same-origin referrer policy has the browser send) spends the
 * code and answers with the session cookie and a 303 to that page —
 * the form is the console's own, so the navigation that follows is same-site and the
 * SameSite=Strict cookie goes along. The page holds no secret and needs no script.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { OneTimeCodes } from "./codes.js";
import { FORBIDDEN, readForm } from "./login.js";
import { escapeHtml, sendText } from "./respond.js";
import { safeNext, type Guard } from "./security.js";

/** The path of the page. */
export const CODE_PAGE = "/approve";

/** The page, with `note` above the form (why the last code did not work). */
function codePageHtml(note?: string): string {
  return [
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="same-origin">',
    "<title>paid-actions console: one-time code</title></head><body>",
    "<h1>Open a payment in the paid-actions console</h1>",
    note ? `<p role="alert">${escapeHtml(note)}</p>` : "",
    "<p>Type the one-time code you were shown with the payment (in your MCP host, or by your agent).",
    " It works once, for 5 minutes.</p>",
    `<form method="post" action="${CODE_PAGE}">`,
    '<label for="code">Code</label> ',
    '<input id="code" name="code" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" maxlength="16" required autofocus>',
    ' <button type="submit">Continue</button>',
    "</form></body></html>",
    "",
  ].join("\n");
}

function sendCodePage(res: ServerResponse, status: number, note?: string, headers: Record<string, string> = {}): void {
  const body = codePageHtml(note);
  res.writeHead(status, {
    ...headers,
    // Under "no-referrer" (every other answer's policy) a browser sends `Origin: null` with the
    // form, which any site can send too: this page's own Origin is what proves the form is its.
    "Referrer-Policy": "same-origin",
    "Content-Type": "text/html; charset=utf-8",
    "Content-Length": Buffer.byteLength(body),
  });
  res.end(body);
}

/** Answers GET and POST /approve (any other method: 405). */
export async function handleCodeLogin(
  req: IncomingMessage,
  res: ServerResponse,
  guard: Guard,
  codes: OneTimeCodes,
): Promise<void> {
  const method = req.method ?? "GET";
  if (method === "GET" || method === "HEAD") return sendCodePage(res, 200);
  if (method !== "POST") return sendText(res, 405, "Method not allowed.\n");
  // Only this page's form may spend a code: a foreign site's is refused before the code is looked at.
  if (!guard.originAllowed(req.headers.origin, req.headers.host))
    return sendCodePage(res, 403, `A code is typed on this page of the console only. For a new one, ${FORBIDDEN}.`);
  const form = await readForm(req);
  const used = codes.redeem(form.get("code"));
  if (!used.ok && used.why === "limited") {
    const seconds = Math.max(1, Math.ceil((used.retryAfterMs ?? 60_000) / 1000));
    return sendCodePage(res, 429, `Too many wrong codes: try again in ${seconds} s.`, {
      "Retry-After": String(seconds),
    });
  }
  if (!used.ok) return sendCodePage(res, 403, "That code does not work: it is wrong, used, or older than 5 minutes.");
  const cookie = guard.cookie(guard.createSession().id);
  res.writeHead(303, { "Set-Cookie": cookie, Location: safeNext(used.next), "Content-Length": 0 });
  res.end();
}
