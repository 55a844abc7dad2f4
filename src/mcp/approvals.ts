/**
 * The questions that ask a person to approve one payment above the approval threshold — the
 * host's own form, or a link to the console's page for it (URL mode) — and the answers they
 * come back with, for both protocol eras: a 2026-07-28 client gets an `input_required`
 * result carrying the question and a sealed `requestState`, asks its user and calls again
 * with the answer; on a 2025 connection the server sends the same question by elicitation
 * itself (legacy-approvals.ts). The link is a sign-in page by path, or for a host that opens
 * links inside itself (VS Code) the console's /approve page and a one-time code. A client that
 * declares no elicitation has the payment brought to the person's desktop when that is on
 * (desktop-approvals.ts, with the notification's words from here), else gets the refusal with
 * the `approvalId` (the fallback: a person approves it, the agent calls again). A dismissed
 * question (cancel) decides nothing in either mode; only a decline declines.
 *
 * The state is HMAC-sealed with a key kept in the home dir (so it survives a restart), and
 * names one pending approval record of the journal, the tool and a digest of its
 * arguments. The approval record is single-use: a replayed state finds it used and pays
 * nothing; a tampered one fails the seal and the SDK refuses it before the handler runs.
 */
import { createHash } from "node:crypto";
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  type ClientCapabilities,
  type ElicitRequestFormParams,
  type InputRequiredResult,
  type ProtocolEra,
  type RequestStateCodec,
  type Server,
} from "@modelcontextprotocol/server";
import { canonicalJson } from "../domain/wire.js";
import { paidError } from "../engine/index.js";
import type { ApprovalLink, LinkHow, RequestCtx } from "./context.js";

/** What a sealed approval state carries (the client can read it; it cannot change it). */
export interface ApprovalState {
  kind: "approval";
  approvalId: string;
  tool: string;
  /** sha256 of the call's arguments, approvalId aside. */
  args: string;
  /** "url": the person was sent to the console's page for it (the answer only says they went). */
  via?: "url";
}

/** The form question's answer key in `inputRequests` / `inputResponses`. */
export const APPROVAL_KEY = "approval";

/** How long a minted approval state is accepted (the approval itself expires with its quote). */
const STATE_TTL_SECONDS = 15 * 60;

/** The codec for approval states, created on the first approval (its key is read from the home dir then). */
export function approvalStates(key: () => Uint8Array): RequestStateCodec<ApprovalState> {
  let codec: RequestStateCodec<ApprovalState> | undefined;
  const get = () =>
    (codec ??= createRequestStateCodec<ApprovalState>({
      key: key(),
      ttlSeconds: STATE_TTL_SECONDS,
      // A state minted for tools/call is not accepted on any other method.
      bind: (rctx) => rctx.mcpReq.method,
    }));
  return {
    mint: (payload, rctx) => get().mint(payload, rctx),
    verify: (state, rctx) => get().verify(state, rctx),
  };
}

/** The elicitation capability of this request's client (per request on 2026, per connection on 2025). */
function elicitationOf(era: ProtocolEra, server: Server, rctx: RequestCtx): Record<string, unknown> | undefined {
  const caps: ClientCapabilities | undefined =
    era === "modern"
      ? ((rctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as
          ClientCapabilities | undefined)
      : server.getClientCapabilities();
  return caps?.elicitation as Record<string, unknown> | undefined;
}

/** Whether the client of this request can show a form question. */
export function canElicit(era: ProtocolEra, server: Server, rctx: RequestCtx): boolean {
  const elicitation = elicitationOf(era, server, rctx);
  if (!elicitation) return false;
  // A bare `elicitation: {}` means form support (the meaning before modes existed).
  return Object.keys(elicitation).length === 0 || elicitation.form !== undefined;
}

/** Whether the client of this request can open a URL for its user (URL-mode elicitation). */
export function canElicitUrl(era: ProtocolEra, server: Server, rctx: RequestCtx): boolean {
  return elicitationOf(era, server, rctx)?.url !== undefined;
}

/** Whether the client of this request declares elicitation at all (any mode). */
export function declaresElicitation(era: ProtocolEra, server: Server, rctx: RequestCtx): boolean {
  return elicitationOf(era, server, rctx) !== undefined;
}

/** The name the client of this request gives itself (`clientInfo.name`: per connection on 2025, per request on 2026). */
function clientName(era: ProtocolEra, server: Server, rctx: RequestCtx): string | undefined {
  const info =
    era === "modern"
      ? ((rctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_INFO_META_KEY] as
          { name?: unknown } | undefined)
      : server.getClientVersion();
  return typeof info?.name === "string" ? info.name : undefined;
}

/**
 * Hosts known to open a URL-mode link inside themselves rather than with the OS: VS Code and
 * its builds (`clientInfo.name` is the product's long name) open a `file://` link in an editor
 * tab, which would show the sign-in page's source, token included.
 */
export function opensLinksInside(name: string | undefined): boolean {
  return name !== undefined && /^(visual[ -]studio[ -]code|code - oss|vscodium)\b/i.test(name.trim());
}

/** How the person of this request's host reaches the console's page from a link: a sign-in page, or a typed code. */
export function linkHow(era: ProtocolEra, server: Server, rctx: RequestCtx): LinkHow {
  return opensLinksInside(clientName(era, server, rctx)) ? "code" : "page";
}

/** A digest of a call's arguments without approvalId: what the approval state is bound to. */
export function argsDigest(args: unknown): string {
  const rest =
    args && typeof args === "object" && !Array.isArray(args)
      ? Object.fromEntries(Object.entries(args).filter(([k]) => k !== "approvalId"))
      : args;
  let json: string;
  try {
    json = canonicalJson(rest, 64);
  } catch {
    throw paidError("invalid_input", { problem: "arguments_depth" });
  }
  return createHash("sha256").update(json).digest("hex");
}

export interface ApprovalQuestion {
  approvalId: string;
  /** What is paid for: an action's name, a fetch's method and redacted URL. */
  paidFor: string;
  amount: string;
  currency: string;
  payee: string;
  expiresAt: string;
  input: unknown;
}

/** The form question that asks the human to approve one payment (in the host's own prompt). */
export function approvalForm(q: ApprovalQuestion, sandbox: boolean): ElicitRequestFormParams {
  return {
    mode: "form",
    message:
      `Approve a payment${sandbox ? " (SANDBOX, demo USDC)" : ""}: ${q.amount} ${q.currency} for ${q.paidFor} to ${q.payee}. ` +
      `It expires with its quote at ${q.expiresAt}. Approval ${q.approvalId}. Input: ${JSON.stringify(q.input).slice(0, 500)}`,
    requestedSchema: {
      type: "object",
      properties: {
        approve: {
          type: "boolean",
          title: `Pay ${q.amount} ${q.currency}`,
          description: "Check to approve this one payment.",
        },
      },
      required: ["approve"],
    },
  };
}

/** The link that sends the person to the console's page for one payment (URL-mode elicitation). */
export function approvalLink(
  q: ApprovalQuestion,
  link: ApprovalLink,
  sandbox: boolean,
): { message: string; url: string } {
  return {
    message:
      `A payment needs your approval${sandbox ? " (SANDBOX, demo USDC)" : ""}: ${q.amount} ${q.currency} for ${q.paidFor} to ${q.payee}, ` +
      `before ${q.expiresAt}. Open the paid-actions console to see everything about it and approve or decline it (approval ${q.approvalId}).` +
      (link.code ? ` Type the one-time code ${link.code} on that page (it works once, for 5 minutes).` : ""),
    url: link.url,
  };
}

/**
 * What a desktop notification says of a waiting payment. It goes on a command line (Linux's
 * notify-send), so it names the payment and nothing secret: no input, no token, no code.
 */
export function approvalNotice(q: ApprovalQuestion, sandbox: boolean): { title: string; body: string } {
  return {
    title: `Payment waiting for your approval${sandbox ? " (sandbox)" : ""}`,
    body:
      `${q.amount} ${q.currency} for ${q.paidFor} to ${q.payee}. Its page is open in your browser: approve or decline it there ` +
      `before ${q.expiresAt} (approval ${q.approvalId}).`,
  };
}

/** The input_required result that asks the human to approve one payment (a 2026-07-28 client asks its user). */
export async function askApproval(
  states: RequestStateCodec<ApprovalState>,
  rctx: RequestCtx,
  tool: string,
  args: unknown,
  q: ApprovalQuestion,
  sandbox: boolean,
): Promise<InputRequiredResult> {
  const requestState = await states.mint(
    { kind: "approval", approvalId: q.approvalId, tool, args: argsDigest(args) },
    rctx,
  );
  return inputRequired({
    inputRequests: { [APPROVAL_KEY]: inputRequired.elicit(approvalForm(q, sandbox)) },
    requestState,
  });
}

/**
 * The input_required result that sends the person to the console's page for one payment
 * (URL-mode elicitation). Accepting only means the person went there: the approval itself
 * is given (or declined) on that page, and the retried call waits for it in the journal.
 */
export async function askApprovalAtUrl(
  states: RequestStateCodec<ApprovalState>,
  rctx: RequestCtx,
  tool: string,
  args: unknown,
  q: ApprovalQuestion,
  link: ApprovalLink,
  sandbox: boolean,
): Promise<InputRequiredResult> {
  const requestState = await states.mint(
    { kind: "approval", approvalId: q.approvalId, tool, args: argsDigest(args), via: "url" },
    rctx,
  );
  return inputRequired({
    inputRequests: { [APPROVAL_KEY]: inputRequired.elicitUrl(approvalLink(q, link, sandbox)) },
    requestState,
  });
}

/** The human's answer in a retried call: approved, not approved (and how), or not given. */
export type ApprovalAnswer = { kind: "approved" } | { kind: "refused"; how: string } | { kind: "missing" };
/** An answer that was given. */
export type Given = Exclude<ApprovalAnswer, { kind: "missing" }>;

/** The answer an elicitation result carries (a URL question's "accept" has no content: "not checked"). */
export function answerOf(result: { action: string; content?: unknown }): Given {
  if (result.action !== "accept") return { kind: "refused", how: result.action };
  const content = result.content as Record<string, unknown> | undefined;
  return content?.approve === true ? { kind: "approved" } : { kind: "refused", how: "not checked" };
}

/**
 * Whether the person dismissed the host's form (closed it: `cancel`) rather than answering
 * it. A dismissal decides nothing — the approval stays pending, in form mode as in URL mode;
 * only an explicit decline (or an accepted form without the box checked) declines.
 */
export function dismissedForm(answer: ApprovalAnswer): boolean {
  return answer.kind === "refused" && answer.how === "cancel";
}

/** Why a call whose form was dismissed returns without a decision. */
export const DISMISSED_FORM = "the person dismissed the approval question without deciding";

/** The answer a retried call came back with (2026-07-28: in its inputResponses). */
export function approvalAnswer(rctx: RequestCtx): ApprovalAnswer {
  const view = inputResponse(rctx.mcpReq.inputResponses, APPROVAL_KEY);
  return view.kind === "elicit" ? answerOf(view) : { kind: "missing" };
}

/** The sealed state of a retried call, checked against the call it comes back with. */
export function stateFor(rctx: RequestCtx, tool: string, args: unknown): ApprovalState | undefined {
  const state = rctx.mcpReq.requestState<ApprovalState>();
  if (state === undefined) return undefined;
  if (typeof state !== "object" || state === null || state.kind !== "approval") {
    throw paidError("approval_invalid", { problem: "foreign_state" });
  }
  if (state.tool !== tool || state.args !== argsDigest(args)) {
    throw paidError("approval_invalid", { approvalId: state.approvalId, problem: "other_call" });
  }
  return state;
}
