/**
 * The console's guard: who may talk to it and how. A one-time login token (in the link the
 * console prints, or in the sign-in page it writes for an opener) becomes a session cookie
 * (HttpOnly, SameSite=Strict); every request must name the console by its loopback Host
 * (against DNS rebinding); every write must come from the console's own Origin and carry the
 * session's CSRF token. Tokens and session ids are kept only as SHA-256 digests, so a lookup's
 * timing says nothing about a stored secret; the CSRF token is compared with timingSafeEqual.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * The session cookie's name, per port: browsers keep cookies per host, not per port, so two
 * consoles at once (the command's, and one an MCP server started for an approval) would
 * otherwise overwrite each other's session.
 */
export const cookieName = (port: number) => `pam_console_${port}`;
/** How long a login token (and the sign-in page that carries it) lives. */
export const LOGIN_TTL_MS = 10 * 60_000;
/** A session unused this long ends (the person opens a fresh link). */
const SESSION_IDLE_MS = 12 * 3_600_000;
/** Bounds on what an unauthenticated caller can make the console hold. */
const MAX_TOKENS = 1_000;
const MAX_SESSIONS = 200;

/** Sent with every response. No CORS header is ever sent. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy":
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-store",
  "X-Frame-Options": "DENY",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
};

export interface Session {
  csrf: string;
  createdAt: number;
  lastSeen: number;
}

/** How tokens and session ids are kept and looked up (a lookup's timing says nothing about the secret). */
export const digest = (secret: string) => createHash("sha256").update(secret).digest("base64url");
const secret = () => randomBytes(32).toString("base64url");

/** The `next` of a login link, when it is a path of this console ("/…", not "//…" nor "/\…"); else "/". */
export function safeNext(next: string | null | undefined): string {
  if (!next || next.length > 512) return "/";
  return /^\/(?![/\\])[\x21-\x7e]*$/.test(next) ? next : "/";
}

/** The values of one cookie in a Cookie header (a browser may send several of one name). */
export function cookieValues(header: string | undefined, name: string): string[] {
  if (!header) return [];
  const out: string[] = [];
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) out.push(part.slice(eq + 1).trim());
  }
  return out;
}

export class Guard {
  /** digest(token) -> expiry */
  private readonly tokens = new Map<string, number>();
  /** digest(session id) -> session */
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly port: () => number,
    private readonly now: () => number,
  ) {}

  /** The Host values that name this console: its loopback address or localhost, with its port. */
  hostAllowed(host: string | undefined): boolean {
    const port = this.port();
    return host === `127.0.0.1:${port}` || host === `localhost:${port}`;
  }

  /** A write's Origin must be this console's, under the same name the Host used. */
  originAllowed(origin: string | undefined, host: string | undefined): boolean {
    return origin !== undefined && this.hostAllowed(host) && origin === `http://${host}`;
  }

  /** Mints a one-time login token: 32 random bytes, single use, for 10 minutes. */
  mintToken(): string {
    this.prune();
    if (this.tokens.size >= MAX_TOKENS) this.tokens.delete(this.tokens.keys().next().value!);
    const token = secret();
    this.tokens.set(digest(token), this.now() + LOGIN_TTL_MS);
    return token;
  }

  /** Uses a login token up: true once, for a token minted here and not yet expired. */
  redeem(token: string | null | undefined): boolean {
    if (!token || token.length > 200) return false;
    const key = digest(token);
    const expires = this.tokens.get(key);
    if (expires === undefined) return false;
    this.tokens.delete(key);
    return expires > this.now();
  }

  /** A new session: its id goes into the cookie, its CSRF token to the page (GET /api/session). */
  createSession(): { id: string; session: Session } {
    this.prune();
    if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    const id = secret();
    const now = this.now();
    const session: Session = { csrf: secret(), createdAt: now, lastSeen: now };
    this.sessions.set(digest(id), session);
    return { id, session };
  }

  /** The session a request's cookie names, if it is live (and marks it used). */
  session(cookieHeader: string | undefined): Session | undefined {
    const now = this.now();
    for (const value of cookieValues(cookieHeader, cookieName(this.port()))) {
      if (value.length > 200) continue;
      const s = this.sessions.get(digest(value));
      if (s && now - s.lastSeen < SESSION_IDLE_MS) {
        s.lastSeen = now;
        return s;
      }
    }
    return undefined;
  }

  /** Whether a write's X-CSRF-Token is its session's (constant time). */
  csrfValid(session: Session, header: string | string[] | undefined): boolean {
    if (typeof header !== "string" || header.length === 0 || header.length > 200) return false;
    return timingSafeEqual(Buffer.from(digest(header)), Buffer.from(digest(session.csrf)));
  }

  cookie(id: string): string {
    return `${cookieName(this.port())}=${id}; HttpOnly; SameSite=Strict; Path=/`;
  }

  private prune(): void {
    const now = this.now();
    for (const [k, expires] of this.tokens) if (expires <= now) this.tokens.delete(k);
    for (const [k, s] of this.sessions) if (now - s.lastSeen >= SESSION_IDLE_MS) this.sessions.delete(k);
  }
}
