/**
 * The console's sign-in page as a browser meets it: the file an opener or a host was handed
 * (by its file:// URL or path), its form read back, and the form posted as a browser posts it
 * from a file:// page (Origin: null, application/x-www-form-urlencoded, no cookie).
 */
import { readFileSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

export interface LoginPageForm {
  path: string;
  html: string;
  /** The form's action: http://127.0.0.1:<port>/login */
  action: string;
  token: string;
  next: string;
  /** The file's and its folder's permission bits. */
  mode: number;
  dirMode: number;
}

const unescape = (s: string) => s.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)));

function attr(html: string, re: RegExp, what: string): string {
  const m = re.exec(html);
  if (!m) throw new Error(`the sign-in page has no ${what}`);
  return unescape(m[1]!);
}

/** Reads the page at a file:// URL or a path. */
export function readLoginPage(urlOrPath: string): LoginPageForm {
  const path = urlOrPath.startsWith("file:") ? fileURLToPath(urlOrPath) : urlOrPath;
  const html = readFileSync(path, "utf8");
  return {
    path,
    html,
    action: attr(html, /<form method="post" action="([^"]*)">/, "form"),
    token: attr(html, /<input type="hidden" name="token" value="([^"]*)">/, "token field"),
    next: attr(html, /<input type="hidden" name="next" value="([^"]*)">/, "next field"),
    mode: statSync(path).mode & 0o777,
    dirMode: statSync(dirname(path)).mode & 0o777,
  };
}

/** Posts the form as Chromium does from the file:// page (or with other headers, to test refusals). */
export function postLoginPage(
  form: Pick<LoginPageForm, "action" | "token" | "next">,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(form.action, {
    method: "POST",
    redirect: "manual",
    headers: { origin: "null", "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams({ token: form.token, next: form.next }).toString(),
  });
}

/** The path a form login's answer moves on to (its <meta http-equiv="refresh">). */
export function hopTarget(html: string): string | undefined {
  const m = /<meta http-equiv="refresh" content="0; url=([^"]*)">/.exec(html);
  return m ? unescape(m[1]!) : undefined;
}
