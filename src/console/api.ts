/**
 * The console's JSON API: approvals (read, approve, decline — with the PIN when one is set, and
 * refused when it cannot be checked),
 * executions with their timelines, x402 purchases (paid_fetch) with theirs — never their
 * requests' header values, bodies or query values — spending by action, by origin and by day,
 * transcripts, the audit, a purchase's receipt (receipts-api.ts),
 * whether payments are frozen (read only: freezing and lifting are the terminal's), and the
 * event stream. Reads go to the journal the MCP servers share; a decision goes
 * through the engine exactly as the terminal's `approve` gives it. Money is decimal strings.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { ExecutionStatus } from "../domain/wire.js";
import {
  approvalReview,
  freezeView,
  httpStatusOf,
  PaidActionError,
  pendingReviews,
  pinGate,
  purchaseView,
  recentCalls,
  spendingBreakdown,
  verifyPin,
  view,
} from "../engine/index.js";
import type { ConsoleDeps, ConsoleLogin } from "./deps.js";
import type { EventHub } from "./events.js";
import { assertionOf, originOf, PASSKEY_GET, PASSKEY_POST, passkeyCount } from "./passkeys-api.js";
import { RECEIPT_GET } from "./receipts-api.js";
import { ApiError, readJsonBody, sendJson } from "./respond.js";
import type { Session } from "./security.js";
import { timelineOf } from "./timeline.js";

/** A wrong PIN costs this long, and PINs are checked one at a time: guessing stays slow. */
const PIN_DELAY_MS = 1_000;
const ID = "([A-Za-z0-9_-]{1,100})";

export interface ApiContext {
  d: Required<Pick<ConsoleDeps, "now" | "log">> & ConsoleDeps;
  events: EventHub;
  version: string;
  /** PIN checks run one after another, on this chain. */
  pinTurn: Promise<unknown>;
  /** The audit running now: a second request while it runs gets the same answer. */
  auditRun?: Promise<unknown>;
  /** Mints a one-time login (the hop to the console's localhost name for a passkey: passkeys-api.ts). */
  login?: (next?: string) => ConsoleLogin;
}

export type Handler = (
  c: ApiContext,
  m: RegExpExecArray,
  req: IncomingMessage,
  res: ServerResponse,
  session: Session,
  url: URL,
) => Promise<void>;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function intParam(url: URL, name: string, min: number, max: number, fallback: number): number {
  const v = url.searchParams.get(name);
  if (v === null || v === "") return fallback;
  if (!/^\d{1,6}$/.test(v) || Number(v) < min || Number(v) > max)
    throw new ApiError(400, "invalid_input", `${name} must be an integer from ${min} to ${max}`);
  return Number(v);
}

/** What the purchases are bought from, for a person: the configured service, or the embedded sandbox. */
function serviceName(c: ApiContext): string {
  const service = c.d.engine.service;
  return service === "unconfigured" && c.d.config?.mode === "sandbox" ? "the embedded sandbox" : service;
}

/** Why a decision is refused when the PIN cannot be checked (the console's words for pinGate's refusal). */
const PIN_UNREADABLE = {
  damaged:
    "the approval PIN's file in the home dir (approval-pin) cannot be read, so no PIN is accepted: delete that file and set the PIN again at a terminal",
  missing:
    "an approval PIN was set, but the home dir has no PIN file (approval-pin) any more, so no PIN can be checked and nothing is decided: a person sets the PIN again at a terminal",
} as const;

/** The PIN check: fails closed when the PIN cannot be checked; one at a time, and slow when wrong. */
async function requirePin(c: ApiContext, body: Record<string, unknown>): Promise<void> {
  const gate = pinGate(c.d.home, await c.d.journal.pinRecords());
  if (gate.kind === "none") return;
  if (gate.kind === "refuse") throw new ApiError(500, "pin_unreadable", PIN_UNREADABLE[gate.cause]);
  const pin = typeof body.pin === "string" && body.pin.length > 0 ? body.pin : undefined;
  if (pin === undefined)
    throw new ApiError(403, "pin_invalid", "an approval PIN is set: enter it to approve or decline");
  const check = c.pinTurn.then(async () => {
    const ok = await verifyPin(c.d.home, pin, { required: true }).catch(() => {
      throw new ApiError(500, "pin_unreadable", PIN_UNREADABLE.damaged);
    });
    if (!ok) await sleep(PIN_DELAY_MS);
    return ok;
  });
  c.pinTurn = check.catch(() => undefined);
  if (!(await check)) {
    throw new ApiError(403, "pin_invalid", "that is not the approval PIN; nothing was decided");
  }
}

async function decide(c: ApiContext, m: RegExpExecArray, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const [, id, what] = m as unknown as [string, string, "approve" | "decline"];
  const body = await readJsonBody(req);
  if (!(await c.d.journal.approval(id))) throw new ApiError(404, "not_found", `no approval ${id}`);
  await requirePin(c, body);
  // With a passkey registered the engine approves only with its assertion over the terms (passkeys-api.ts).
  const passkey =
    what === "approve" && body.assertion !== undefined
      ? { assertion: assertionOf(body.assertion), origin: originOf(req) }
      : undefined;
  try {
    if (what === "approve") await c.d.engine.approve(id, "console", passkey);
    else await c.d.engine.decline(id, "console");
  } catch (e) {
    if (e instanceof PaidActionError && e.code === "approval_invalid")
      throw new ApiError(409, "approval_invalid", e.message);
    throw e;
  }
  c.d.log(`console: approval ${id} ${what === "approve" ? "approved" : "declined"} by a person`);
  // Asked only once the decision is written: a call that stops waiting after this still reads it.
  const waiting = c.d.agentWaiting?.(id);
  const agentCall = waiting === undefined ? "unknown" : waiting ? "waiting" : "none";
  sendJson(res, 200, {
    approval: await approvalReview(c.d.journal, c.d.config, id, c.d.now()),
    agentCall,
    next: AFTER_DECISION[what][agentCall],
  });
}

/** What happens next, told to the person who decided: a call waiting for it takes it now, or the agent's next call. */
const AFTER_DECISION = {
  approve: {
    waiting: "The agent's call is waiting for it and pays now, once.",
    none: "No call is waiting for it right now: the agent will use it when it calls again (it pays once).",
    unknown:
      "A call of the agent waiting for it pays now; if none is waiting, the agent will use it when it calls again (it pays once).",
  },
  decline: {
    waiting: "The agent's waiting call is refused now. Nothing is paid.",
    none: "No call is waiting for it right now: the agent is told when it calls again. Nothing is paid.",
    unknown: "Nothing is paid; a waiting call is refused now, or the agent is told when it calls again.",
  },
} as const satisfies Record<"approve" | "decline", Record<"waiting" | "none" | "unknown", string>>;

const GET: Array<[RegExp, Handler]> = [
  [
    /^\/api\/session$/,
    async (c, _m, _req, res, session) =>
      sendJson(res, 200, {
        csrf: session.csrf,
        // Asked for whenever a decision needs one: also when its file is gone, which the decision then says.
        pinRequired: pinGate(c.d.home, await c.d.journal.pinRecords()).kind !== "none",
        // Approving needs the person's passkey when one is registered (the page runs the ceremony).
        passkeys: await passkeyCount(c),
        home: c.d.home,
        journal: c.d.journal.location,
        version: c.version,
        service: serviceName(c),
      }),
  ],
  [
    /^\/api\/approvals$/,
    async (c, _m, _req, res) => sendJson(res, 200, { items: await pendingReviews(c.d.journal, c.d.config, c.d.now()) }),
  ],
  [
    /^\/api\/freeze$/,
    async (c, _m, _req, res) => sendJson(res, 200, { freeze: freezeView(await c.d.journal.frozen()) }),
  ],
  [
    new RegExp(`^/api/approvals/${ID}$`),
    async (c, m, _req, res) => {
      const approval = await approvalReview(c.d.journal, c.d.config, m[1]!, c.d.now());
      if (!approval) throw new ApiError(404, "not_found", `no approval ${m[1]}`);
      sendJson(res, 200, { approval });
    },
  ],
  [
    /^\/api\/executions$/,
    async (c, _m, _req, res, _s, url) => {
      // What a person should look at (as `executions --attention`): also purchases with no execution yet.
      if (url.searchParams.get("attention") === "true")
        return sendJson(res, 200, { items: await c.d.engine.needsAttention() });
      const status = url.searchParams.get("status") || undefined;
      if (status !== undefined && !ExecutionStatus.safeParse(status).success)
        throw new ApiError(400, "invalid_input", `status must be one of ${ExecutionStatus.options.join(", ")}`);
      const action = url.searchParams.get("action") || undefined;
      const page = await c.d.engine.listExecutions({
        status,
        action,
        limit: intParam(url, "limit", 1, 100, 20),
        cursor: url.searchParams.get("cursor") || undefined,
      });
      sendJson(res, 200, { items: page.items, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) });
    },
  ],
  [
    new RegExp(`^/api/executions/${ID}$`),
    async (c, m, _req, res) => {
      const id = m[1]!;
      const intent =
        (await c.d.journal.intentByExecution(id)) ?? (id.startsWith("int_") ? await c.d.journal.intent(id) : undefined);
      if (!intent) throw new ApiError(404, "not_found", `no execution or purchase ${id} in the journal`);
      const { timeline, transcripts } = await timelineOf(c.d.journal, c.d.transcripts, intent);
      sendJson(res, 200, { execution: view(intent), timeline, transcripts });
    },
  ],
  [
    /^\/api\/purchases$/,
    async (c, _m, _req, res, _s, url) => {
      const origin = url.searchParams.get("origin") || undefined;
      const page = await c.d.engine.listPurchases({
        ...(origin !== undefined ? { origin } : {}),
        limit: intParam(url, "limit", 1, 100, 20),
        cursor: url.searchParams.get("cursor") || undefined,
      });
      sendJson(res, 200, { items: page.items, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) });
    },
  ],
  [
    new RegExp(`^/api/purchases/${ID}$`),
    async (c, m, _req, res) => {
      const intent = await c.d.journal.intent(m[1]!);
      if (!intent || intent.kind !== "fetch")
        throw new ApiError(404, "not_found", `no purchase ${m[1]} in the journal`);
      const { timeline, transcripts } = await timelineOf(c.d.journal, c.d.transcripts, intent);
      sendJson(res, 200, { purchase: purchaseView(intent), timeline, transcripts });
    },
  ],
  [
    /^\/api\/spending$/,
    async (c, _m, _req, res) => {
      const [spending, breakdown] = await Promise.all([
        c.d.engine.spending(),
        spendingBreakdown(c.d.journal, c.d.config, c.d.now()),
      ]);
      sendJson(res, 200, { ...spending, ...breakdown });
    },
  ],
  [
    /^\/api\/transcripts$/,
    async (c, _m, _req, res, _s, url) => {
      const calls = await recentCalls(c.d.journal, c.d.transcripts, intParam(url, "limit", 1, 1000, 50));
      sendJson(res, 200, {
        items: calls.map((r) => ({ callId: r.callId, at: r.at, host: r.host, path: r.path ?? null })),
      });
    },
  ],
  [
    new RegExp(`^/api/transcripts/${ID}$`),
    async (c, m, _req, res) => {
      const entries = c.d.transcripts.read(m[1]!);
      if (!entries)
        throw new ApiError(
          404,
          "not_found",
          `no transcript ${m[1]} in ${c.d.transcripts.dir} (a call made on another host keeps its transcript there)`,
        );
      // Redacted when written; masked again in case this process knows more secrets now.
      sendJson(res, 200, { callId: m[1], entries: c.d.transcripts.redact(entries) });
    },
  ],
  [
    /^\/api\/audit$/,
    async (c, _m, _req, res) => {
      const run = (c.auditRun ??= c.d.audit().finally(() => (c.auditRun = undefined)));
      try {
        sendJson(res, 200, { report: await run });
      } catch (e) {
        throw new ApiError(
          503,
          "audit_unavailable",
          `the audit cannot tell whether the journal and the chain agree: ${c.d.transcripts.scrub((e as Error).message)}`,
        );
      }
    },
  ],
  [/^\/api\/events$/, async (c, _m, req, res) => c.events.open(req, res)],
  ...PASSKEY_GET,
  ...RECEIPT_GET,
];

const POST: Array<[RegExp, Handler]> = [
  [new RegExp(`^/api/approvals/${ID}/(approve|decline)$`), (c, m, req, res) => decide(c, m, req, res)],
  ...PASSKEY_POST,
];

/** Answers one authenticated /api request (the server has checked Host, cookie and, for writes, Origin and CSRF). */
export async function handleApi(
  c: ApiContext,
  req: IncomingMessage,
  res: ServerResponse,
  session: Session,
  url: URL,
): Promise<void> {
  // No HEAD here: it would open an event stream, or run an audit, for nothing.
  const method = req.method;
  const table = method === "GET" ? GET : method === "POST" ? POST : undefined;
  for (const [pattern, handler] of table ?? []) {
    const m = pattern.exec(url.pathname);
    if (m) return handler(c, m, req, res, session, url);
  }
  const other = (method === "GET" ? POST : GET).some(([p]) => p.test(url.pathname));
  if (other || !table) throw new ApiError(405, "method_not_allowed", `${req.method} is not allowed on ${url.pathname}`);
  throw new ApiError(404, "not_found", `no API route ${url.pathname}`);
}

/** An error as the API answers it: ApiError as is, PaidActionError by its code, anything else 500 without detail beyond its message. */
export function apiErrorOf(e: unknown, scrub: (text: string) => string): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof PaidActionError) return new ApiError(httpStatusOf(e.code), e.code, scrub(e.message));
  return new ApiError(500, "internal", `the console could not answer: ${scrub((e as Error)?.message ?? String(e))}`);
}
