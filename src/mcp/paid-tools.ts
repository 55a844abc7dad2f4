/**
 * One paid tool per catalog action: the service's input schema merged with the extras
 * (budget, intentKey, approvalId), a title and a description that say it spends money and
 * within which limits, argument parsing, and the call itself — with its cancellation
 * signal, its progress, and the human's approval (approvals.ts) when the amount needs one.
 */
import type { CallToolResult, InputRequiredResult, ProtocolEra, Server, Tool } from "@modelcontextprotocol/server";
import { z } from "zod";
import { newId } from "../domain/ids.js";
import { isCode, PaidActionError } from "../engine/index.js";
import {
  approvalAnswer,
  approvalStates,
  askApproval,
  askApprovalAtUrl,
  canElicit,
  canElicitUrl,
  stateFor,
  waitForDecision,
  type ApprovalState,
} from "./approvals.js";
import { inputSchemaOf, inputValidator, TOOL_NAME, toolNameFor, toolTitleFor, type CatalogEntry } from "./catalog.js";
import type { LimitsView, McpContext, McpPaidActions, RequestCtx } from "./context.js";
import { failure, jsonSchema, PAID_OUTPUT_SCHEMA, paidResult } from "./results.js";

const EXTRAS = ["budget", "intentKey", "approvalId"] as const;

export const Budget = z.strictObject({
  amount: z.string().max(40).describe('Decimal USDC amount, e.g. "2.50"'),
  currency: z.literal("USDC"),
});
const Extras = z.object({
  budget: Budget.optional(),
  intentKey: z
    .string()
    .min(8)
    .max(100)
    .regex(/^[A-Za-z0-9_.:-]+$/)
    .optional(),
  approvalId: z.string().min(1).max(100).optional(),
});

let budgetJson: object | undefined;
/** Budget's JSON Schema, built once for every paid tool. */
const budgetSchema = () => (budgetJson ??= jsonSchema(Budget) as object);

export interface PaidTool {
  entry: CatalogEntry;
  tool: Tool;
  /** Built on the tool's first call: converting 500 schemas would slow the start. */
  validator?: z.ZodType<Record<string, unknown>>;
}

function describePaid(ctx: McpContext, entry: CatalogEntry, limits: LimitsView): string {
  const d = entry.detail;
  const pricing = d.pricing as Record<string, unknown> | undefined;
  const parts = [
    `${d.description ?? entry.name} (service action ${entry.name}).`,
    pricing
      ? `Pricing: ${String(pricing.formula ?? pricing.model)}${pricing.unit ? ` (per ${String(pricing.unit)})` : ""}, in USDC.`
      : "",
    d.budgetHints
      ? `Budget hints: typically ${d.budgetHints.typical ?? "?"} USDC, at most ${d.budgetHints.max ?? "?"} USDC.`
      : "",
    `This tool SPENDS MONEY: it quotes the price, checks it against the human's limits` +
      (limits
        ? ` (per call ≤ ${limits.maxPerCall} USDC, per day ≤ ${limits.maxPerDay} USDC, approval needed above ${limits.approvalAbove} USDC)`
        : "") +
      `, pays with x402 and starts the execution. Call quote_action first to see the price. Optional: budget {amount, currency: "USDC"} lowers the ceiling for this call; intentKey makes a retry land on the same purchase (without it, every call is a new purchase); approvalId continues a payment a person has approved (in the host's prompt, the paid-actions console or a terminal).`,
    ctx.sandboxNote.trim(),
  ];
  return parts.filter(Boolean).join(" ");
}

/**
 * The paid tools for a catalog, by tool name. An action is skipped (and logged) when it has
 * no valid tool name, when its name is `taken` or already used, or when its input already
 * names one of the extras.
 */
export function buildPaidTools(
  ctx: McpContext,
  entries: CatalogEntry[],
  taken: (name: string) => boolean,
): Map<string, PaidTool> {
  const map = new Map<string, PaidTool>();
  const limits = ctx.host.limits;
  // Sorted by tool name: the same catalog always lists in the same order.
  const sorted = [...entries].sort((a, b) =>
    toolNameFor(a.name) < toolNameFor(b.name) ? -1 : toolNameFor(a.name) > toolNameFor(b.name) ? 1 : 0,
  );
  for (const entry of sorted) {
    const name = toolNameFor(entry.name);
    if (!TOOL_NAME.test(name)) {
      ctx.log(`catalog: action ${JSON.stringify(entry.name).slice(0, 80)} has no valid tool name; skipped`);
      continue;
    }
    if (taken(name) || map.has(name)) {
      ctx.log(`catalog: tool name ${name} for action ${entry.name} is already taken; skipped`);
      continue;
    }
    const input = inputSchemaOf(entry.detail);
    const props = (input.properties ?? {}) as Record<string, unknown>;
    if (EXTRAS.some((k) => k in props)) {
      ctx.log(`catalog: action ${entry.name} has an input named budget, intentKey or approvalId; skipped`);
      continue;
    }
    const title = `${toolTitleFor(entry)} (paid${ctx.sandbox ? ", sandbox" : ""})`;
    const tool: Tool = {
      name,
      title,
      description: describePaid(ctx, entry, limits),
      inputSchema: {
        ...input,
        type: "object",
        properties: {
          ...props,
          budget: {
            ...budgetSchema(),
            description: "Optional price ceiling for this call; can only lower the human's limits.",
          },
          intentKey: {
            type: "string",
            minLength: 8,
            maxLength: 100,
            pattern: "^[A-Za-z0-9_.:-]+$",
            description: "Optional key of this purchase: a retry with the same key never pays twice.",
          },
          approvalId: {
            type: "string",
            description:
              "After a person approved this payment (in the paid-actions console or terminal), pass its approvalId with the same input.",
          },
        },
      } as Tool["inputSchema"],
      outputSchema: PAID_OUTPUT_SCHEMA as unknown as Tool["outputSchema"],
      // Not idempotent: two identical calls without an intentKey are two purchases, by design.
      annotations: { title, readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    };
    delete (tool.inputSchema as Record<string, unknown>).$schema;
    map.set(name, { entry, tool });
  }
  return map;
}

/** Validates a paid tool's arguments; returns the action input and the extras. */
function parsePaidArgs(tool: PaidTool, args: unknown) {
  if (!args || typeof args !== "object" || Array.isArray(args)) {
    throw new PaidActionError("invalid_input", "arguments must be an object");
  }
  const all = args as Record<string, unknown>;
  const extras = Extras.safeParse({ budget: all.budget, intentKey: all.intentKey, approvalId: all.approvalId });
  if (!extras.success) {
    const i = extras.error.issues[0]!;
    throw new PaidActionError("invalid_input", `${i.path.join(".")}: ${i.message}`, {
      issues: extras.error.issues.slice(0, 10).map((x) => ({ path: x.path.join("."), message: x.message })),
    });
  }
  // Own properties, whatever their names: assigning a "__proto__" key would set the object's
  // prototype instead, hiding the key from the schema and lending its fields to the input.
  const rawInput: Record<string, unknown> = Object.fromEntries(
    Object.entries(all).filter(([k]) => !(EXTRAS as readonly string[]).includes(k)),
  );
  tool.validator ??= inputValidator(tool.entry.detail);
  const input = tool.validator.safeParse(rawInput);
  if (!input.success) {
    const issues = input.error.issues
      .slice(0, 10)
      .map((x) => ({ path: x.path.join(".") || "(input)", message: x.message.slice(0, 200) }));
    throw new PaidActionError(
      "invalid_input",
      `the input does not match ${tool.entry.name}'s schema: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`,
      { issues },
    );
  }
  return { input: input.data, ...extras.data };
}

/** Progress notifications for a call that carries a progress token (none otherwise). */
function progressReporter(rctx: RequestCtx): ((message: string) => void) | undefined {
  const token = rctx.mcpReq._meta?.progressToken;
  if (token === undefined) return undefined;
  let progress = 0;
  return (message) => {
    progress += 1;
    void rctx.mcpReq
      .notify({ method: "notifications/progress", params: { progressToken: token, progress, message } })
      .catch(() => undefined);
  };
}

export type PaidCallResult = CallToolResult | InputRequiredResult;

export interface PaidCalls {
  /**
   * A paid call: returns as soon as the execution has started, or the call was refused, or
   * (when the amount needs a human's approval and the client can ask its user) with the
   * input_required question; the same handler takes the answer when the call comes back.
   */
  call(
    tool: PaidTool,
    args: unknown,
    rctx: RequestCtx,
    on: { server: Server; era: ProtocolEra },
  ): Promise<PaidCallResult>;
  /** The `requestState.verify` hook of every connection's server. */
  verifyState: ReturnType<typeof approvalStates>["verify"];
}

export function createPaidCalls(ctx: McpContext): PaidCalls {
  const { sandbox, scrub } = ctx;
  const states = approvalStates(() => ctx.host.stateKey());

  /** The approval a call came back with, given (or refused) as the human answered. */
  async function answered(
    pa: McpPaidActions,
    state: ApprovalState,
    tool: PaidTool,
    args: unknown,
    rctx: RequestCtx,
  ): Promise<PaidCallResult | undefined> {
    const approvalId = state.approvalId;
    const answer = approvalAnswer(rctx);
    if (state.via === "url") return answeredAtUrl(pa, state, answer, tool, args, rctx);
    if (answer.kind === "approved") {
      await pa.engine.approve(approvalId, "host"); // single use: a replayed answer finds it used and is refused
      return undefined;
    }
    if (answer.kind === "refused") {
      await pa.engine.decline(approvalId, "host");
      throw new PaidActionError(
        "approval_declined",
        `the human did not approve this payment (${answer.how}); nothing was paid`,
        { approvalId, answer: answer.how },
      );
    }
    // No answer came back with the state: ask again, for the same pending approval.
    return askApproval(states, rctx, tool.tool.name, args, await pendingQuestion(pa, approvalId), sandbox);
  }

  /**
   * The person was sent to the console's page: going there is all the answer says. The call
   * waits for the decision made on that page (or in a terminal), read from the journal.
   */
  async function answeredAtUrl(
    pa: McpPaidActions,
    state: ApprovalState,
    answer: ReturnType<typeof approvalAnswer>,
    tool: PaidTool,
    args: unknown,
    rctx: RequestCtx,
  ): Promise<PaidCallResult | undefined> {
    const approvalId = state.approvalId;
    if (answer.kind === "missing") {
      const q = await pendingQuestion(pa, approvalId);
      const url = await ctx.host.approvalPage?.(approvalId);
      if (url) return askApprovalAtUrl(states, rctx, tool.tool.name, args, q, url, sandbox);
    } else if (answer.kind === "refused" && answer.how === "decline") {
      await pa.engine.decline(approvalId, "host");
      throw new PaidActionError("approval_declined", `the person declined this payment; nothing was paid`, {
        approvalId,
        answer: "decline",
      });
    } else if (answer.kind === "approved" || answer.how === "not checked") {
      // An accepted URL question carries no content: the person went to the page.
      const progress = progressReporter(rctx);
      let told = -1;
      const decision = await waitForDecision(async (id) => pa.engine.approval(id), approvalId, {
        now: ctx.now,
        deadline: ctx.now() + ctx.approvalWaitMs,
        signal: rctx.mcpReq.signal,
        onWait: (ms) => {
          if (Math.floor(ms / 5_000) === told) return;
          told = Math.floor(ms / 5_000);
          progress?.(
            `waiting for a person to approve approval ${approvalId} in the paid-actions console (${Math.round(ms / 1000)} s)`,
          );
        },
      });
      if (decision === "approved") return undefined;
      if (decision === "declined")
        throw new PaidActionError(
          "approval_declined",
          `a person declined this payment in the console; nothing was paid`,
          { approvalId },
        );
      if (decision === "gone")
        throw new PaidActionError(
          "approval_invalid",
          `approval ${approvalId} expired or is gone; call again without it for a new quote. Nothing was paid`,
          { approvalId },
        );
    }
    // Dismissed, or no decision in time: the approval stays waiting for a person, and the
    // engine answers the call with it (approval_required and its approvalId, to call again).
    return undefined;
  }

  /** The question to ask again about a pending approval (as a person reviews it: payee from the challenge too). */
  async function pendingQuestion(pa: McpPaidActions, approvalId: string) {
    const r = await pa.engine.approvalReview(approvalId);
    if (!r || r.status !== "pending")
      throw new PaidActionError(
        "approval_invalid",
        `approval ${approvalId} is ${r?.status ?? "unknown"}; call again without it for a new quote. Nothing was paid`,
        { approvalId },
      );
    return question(r.approvalId, r.action, r.amount, r.payee, r.expiresAt, r.input);
  }

  function question(
    approvalId: string,
    action: string,
    amount: string,
    payee: string | null | undefined,
    expiresAt: string,
    input: unknown,
  ) {
    return {
      approvalId,
      action,
      amount,
      currency: "USDC",
      payee: payee ?? "(named in the payment challenge)",
      expiresAt,
      input,
    };
  }

  /**
   * Asks a person about a payment that needs approval, through the host: the console's page
   * when the client opens URLs, else the host's own form; undefined when it can do neither.
   */
  async function ask(
    e: PaidActionError<"approval_required">,
    tool: PaidTool,
    args: unknown,
    rctx: RequestCtx,
    on: { server: Server; era: ProtocolEra },
  ): Promise<InputRequiredResult | undefined> {
    const c = e.context;
    const input = (args as Record<string, unknown>) ?? {};
    const inputOnly = Object.fromEntries(
      Object.entries(input).filter(([k]) => !(EXTRAS as readonly string[]).includes(k)),
    );
    const q = question(c.approvalId, c.action, c.amount, c.payee ?? null, c.expiresAt, inputOnly);
    if (canElicitUrl(on.era, on.server, rctx)) {
      const url = await ctx.host.approvalPage?.(q.approvalId).catch((err: unknown) => {
        ctx.log(`console: cannot offer the approval page (${(err as Error).message}); asking in the host instead`);
        return undefined;
      });
      if (url) return askApprovalAtUrl(states, rctx, tool.tool.name, args, q, url, sandbox);
    }
    if (canElicit(on.era, on.server, rctx)) return askApproval(states, rctx, tool.tool.name, args, q, sandbox);
    return undefined;
  }

  async function call(
    tool: PaidTool,
    args: unknown,
    rctx: RequestCtx,
    on: { server: Server; era: ProtocolEra },
  ): Promise<PaidCallResult> {
    const callId = newId("call");
    let pa: McpPaidActions | undefined;
    let retried = false;
    try {
      pa = await ctx.runtime();
      const state = stateFor(rctx, tool.tool.name, args);
      const { input, budget, intentKey, approvalId } = parsePaidArgs(tool, args);
      retried = state !== undefined;
      if (state) {
        const again = await answered(pa, state, tool, args, rctx);
        if (again) return again;
      }
      const paid = await pa.engine.pay(
        { action: tool.entry.name, input, budget, intentKey, approvalId: state?.approvalId ?? approvalId },
        { callId, signal: rctx.mcpReq.signal, onProgress: progressReporter(rctx) },
      );
      return paidResult(paid, undefined, sandbox);
    } catch (e) {
      if (pa && !retried && isCode(e, "approval_required")) {
        const asked = await ask(e, tool, args, rctx, on).catch(() => undefined);
        if (asked) return asked;
      }
      pa?.transcripts.append(callId, "tool_error", {
        tool: tool.tool.name,
        error: e instanceof PaidActionError ? e.toJSON() : String(e),
      });
      return failure(e, sandbox, scrub);
    }
  }

  return { call, verifyState: states.verify };
}
