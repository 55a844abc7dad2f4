/**
 * One paid tool per catalog action, as the agent sees it: the service's input schema merged
 * with the extras (budget, intentKey, approvalId), a title and a description that say it
 * spends money and within which limits, and the parsing of a call's arguments. The call
 * itself is paid-calls.ts; the human's approval, when the amount needs one, paid-approvals.ts.
 */
import type { Tool } from "@modelcontextprotocol/server";
import { z } from "zod";
import { PaidActionError } from "../engine/index.js";
import { inputSchemaOf, inputValidator, TOOL_NAME, toolNameFor, toolTitleFor, type CatalogEntry } from "./catalog.js";
import type { LimitsView, McpContext } from "./context.js";
import { jsonSchema, PAID_OUTPUT_SCHEMA } from "./results.js";

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

/**
 * A call's arguments without the extras: the action's own input. Own properties, whatever
 * their names: assigning a "__proto__" key would set the object's prototype instead, hiding
 * the key from the schema and lending its fields to the input.
 */
export function withoutExtras(args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(args).filter(([k]) => !(EXTRAS as readonly string[]).includes(k)));
}

/** Validates a paid tool's arguments; returns the action input and the extras. */
export function parsePaidArgs(tool: PaidTool, args: unknown) {
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
  const rawInput = withoutExtras(all);
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
