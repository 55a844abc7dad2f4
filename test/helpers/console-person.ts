/**
 * A person at the console, over real HTTP: signs in as a browser would — following a one-time
 * login link, or posting the sign-in page an opener or a host was handed (a file:// URL) — with
 * the cookie it sets, reads the session's CSRF token, and approves or declines with the
 * headers a browser sends from the console's own page (Origin, X-CSRF-Token).
 */
import { postLoginPage, readLoginPage } from "./login-page.js";

export interface ConsolePerson {
  origin: string;
  cookie: string;
  csrf: string;
  get(path: string): Promise<Response>;
  post(path: string, body?: unknown): Promise<Response>;
  approve(approvalId: string, pin?: string): Promise<Response>;
  decline(approvalId: string, pin?: string): Promise<Response>;
}

export async function loginAsPerson(loginUrl: string): Promise<ConsolePerson> {
  const url = new URL(loginUrl.startsWith("file:") ? readLoginPage(loginUrl).action : loginUrl);
  const origin = url.origin;
  const login = loginUrl.startsWith("file:")
    ? await postLoginPage(readLoginPage(loginUrl))
    : await fetch(url, { redirect: "manual" });
  if (login.status >= 400) throw new Error(`the console refused the login link: ${login.status} ${await login.text()}`);
  const setCookie = login.headers.get("set-cookie") ?? "";
  const cookie = setCookie.split(";")[0]!;
  if (!cookie.startsWith(`pam_console_${url.port}=`)) throw new Error(`the login set no session cookie (${setCookie})`);
  const get = (path: string) => fetch(new URL(path, origin), { headers: { cookie } });
  const session = (await (await get("/api/session")).json()) as { csrf: string };
  const post = (path: string, body: unknown = {}) =>
    fetch(new URL(path, origin), {
      method: "POST",
      headers: { cookie, origin, "x-csrf-token": session.csrf, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  return {
    origin,
    cookie,
    csrf: session.csrf,
    get,
    post,
    approve: (id, pin) => post(`/api/approvals/${encodeURIComponent(id)}/approve`, pin === undefined ? {} : { pin }),
    decline: (id, pin) => post(`/api/approvals/${encodeURIComponent(id)}/decline`, pin === undefined ? {} : { pin }),
  };
}
