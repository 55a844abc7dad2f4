/**
 * One way to register a paid tool, whatever it buys: the arguments every paid tool shares
 * (budget, intentKey, approvalId), declared once here as zod and turned into each tool's
 * JSON Schema from that one definition; what a paid tool is (`PaidTool`: the tool as
 * listed, and how its own arguments become a `Purchase`); and the catalog's actions as paid
 * tools (the service's input schema merged with the extras, a title and a description that
 * say it spends money and within which limits). paid_fetch is the other kind
 * (tools/paid-fetch.ts). The call itself, its approval, transcript and refusals are the same
 * for every kind: paid-calls.ts.
 */
import type { CallToolResult, Tool } from "@modelcontextprotocol/server";
import { z } from "zod";
import { paidError, type Engine, type PayOptions } from "../engine/index.js";
import { inputSchemaOf, inputValidator, TOOL_NAME, toolNameFor, toolTitleFor, type CatalogEntry } from "./catalog.js";
import type { LimitsView, McpContext, McpPaidActions } from "./context.js";
import { jsonSchema, paidResult, PAID_OUTPUT_SCHEMA } from "./results.js";

export const Budget = z.strictObject({
  amount: z.string().max(40).describe('Decimal USDC amount, e.g. "2.50"'),
  currency: z.literal("USDC"),
});
/** The arguments every paid tool shares; the intentKey rule is the engine's too (checked again there, as its own defence). */
const EXTRA_FIELDS = {
  budget: Budget.optional(),
  intentKey: z
    .string()
    .min(8)
    .max(100)
    .regex(/^[A-Za-z0-9_.:-]+$/)
    .optional(),
  approvalId: z.string().min(1).max(100).optional(),
};
const Extras = z.object(EXTRA_FIELDS);
/** The shared arguments of a paid call, as checked. */
export type Extras = z.infer<typeof Extras>;
const EXTRAS = Object.keys(EXTRA_FIELDS);

/** What each paid tool tells the agent about the shared arguments: the rules are one, the words fit the tool. */
export type ExtrasWording = Record<keyof typeof EXTRA_FIELDS, string>;

/** The shared arguments as zod fields, worded for one tool: the source of every paid tool's JSON Schema for them. */
export function extrasFields(words: ExtrasWording) {
  return {
    budget: EXTRA_FIELDS.budget.describe(words.budget),
    intentKey: EXTRA_FIELDS.intentKey.describe(words.intentKey),
    approvalId: EXTRA_FIELDS.approvalId.describe(words.approvalId),
  };
}

/** What a person is shown of what a payment buys, in the approval question: never a secret. */
export interface ApprovalSubject {
  /** What is paid for, in a few words: the action's name, or a fetch's method and redacted URL. */
  paidFor: string;
  /** Its details: the action's input, or what the journal shows of a fetch's request. */
  input: unknown;
}

/** A paid call whose own arguments were checked: what it buys, and how it pays. */
export interface Purchase {
  /** What the call's `tool` transcript entry says besides the tool's name (never a secret). */
  noted: Record<string, unknown>;
  /** Pays through the engine with the shared arguments, and shapes the tool result. */
  pay(engine: Engine, extras: Extras, opts: PayOptions & { callId: string }): Promise<CallToolResult>;
  /** What the approval question shows of this purchase, once the engine asked for approval `approvalId`. */
  subject(pa: McpPaidActions, approvalId: string): Promise<ApprovalSubject>;
}

/** A tool that spends money: one catalog action, or paid_fetch. */
export interface PaidTool {
  /** The tool as tools/list shows it. */
  readonly tool: Tool;
  /** Checks the tool's own arguments (the extras taken out): the purchase, or invalid_input. */
  accept(own: Record<string, unknown>): Purchase;
}

/**
 * A call's arguments without the extras: the tool's own. Own properties, whatever their
 * names: assigning a "__proto__" key would set the object's prototype instead, hiding the
 * key from the schema and lending its fields to the input.
 */
export function withoutExtras(args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(args).filter(([k]) => !EXTRAS.includes(k)));
}

/** Validates a paid tool's arguments, for every kind alike: the purchase they ask for and the extras. */
export function parsePaidArgs(tool: PaidTool, args: unknown): { purchase: Purchase; extras: Extras } {
  if (!args || typeof args !== "object" || Array.isArray(args)) {
    throw paidError("invalid_input", { problem: "arguments_object" });
  }
  const all = args as Record<string, unknown>;
  const extras = Extras.safeParse({ budget: all.budget, intentKey: all.intentKey, approvalId: all.approvalId });
  if (!extras.success) {
    throw paidError("invalid_input", {
      problem: "extras",
      issues: extras.error.issues.slice(0, 10).map((x) => ({ path: x.path.join("."), message: x.message })),
    });
  }
  return { purchase: tool.accept(withoutExtras(all)), extras: extras.data };
}

/** The issues of a failed parse, as a refusal's context carries them (at most 10, bounded). */
export function issuesOf(error: z.ZodError, root: string) {
  return error.issues.slice(0, 10).map((x) => ({ path: x.path.join(".") || root, message: x.message.slice(0, 200) }));
}

// ---- The catalog's actions -------------------------------------------------------------

const ACTION_WORDS: ExtrasWording = {
  budget: "Optional price ceiling for this call; can only lower the human's limits.",
  intentKey: "Optional key of this purchase: a retry with the same key never pays twice.",
  approvalId:
    "After a person approved this payment (in the paid-actions console or terminal), pass its approvalId with the same input.",
};

let extrasJson: Record<string, unknown> | undefined;
/** The extras' JSON Schema properties for an action's tool, built once for every action. */
const actionExtrasJson = () =>
  (extrasJson ??= jsonSchema(z.object(extrasFields(ACTION_WORDS))).properties as Record<string, unknown>);

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

/** One catalog action as a paid tool: its input checked against the service's schema, paid with engine.pay. */
function actionTool(ctx: McpContext, entry: CatalogEntry, tool: Tool): PaidTool {
  /** Built on the tool's first call: converting 500 schemas would slow the start. */
  let validator: z.ZodType<Record<string, unknown>> | undefined;
  return {
    tool,
    accept(own) {
      validator ??= inputValidator(entry.detail);
      const parsed = validator.safeParse(own);
      if (!parsed.success) {
        const issues = issuesOf(parsed.error, "(input)");
        throw paidError("invalid_input", { problem: "schema", tool: entry.name, issues });
      }
      const input = parsed.data;
      return {
        noted: { action: entry.name },
        pay: async (engine, extras, opts) =>
          paidResult(await engine.pay({ action: entry.name, input, ...extras }, opts), undefined, ctx.sandbox),
        subject: async () => ({ paidFor: entry.name, input }),
      };
    },
  };
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
        properties: { ...props, ...actionExtrasJson() },
      } as Tool["inputSchema"],
      outputSchema: PAID_OUTPUT_SCHEMA as unknown as Tool["outputSchema"],
      // Not idempotent: two identical calls without an intentKey are two purchases, by design.
      annotations: { title, readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    };
    delete (tool.inputSchema as Record<string, unknown>).$schema;
    map.set(name, actionTool(ctx, entry, tool));
  }
  return map;
}
