/**
 * One paid tool per catalog action: the service's input schema merged with the extras
 * (budget, intentKey, approvalId), a description that says it spends money and within
 * which limits, argument parsing, and the call itself — with its approval, cancellation
 * signal and progress — plain or task-augmented.
 */
import { InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js";
import { ErrorCode, McpError, type CallToolResult, type CreateTaskResult, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { newId } from "../domain/ids.js";
import { FINAL_STATUSES, type ExecutionStatus } from "../domain/wire.js";
import { PaidActionError } from "../engine/errors.js";
import type { PaidCall } from "../engine/types.js";
import { approverFor } from "./approvals.js";
import { inputSchemaOf, inputValidator, TOOL_NAME, toolNameFor, type CatalogEntry } from "./catalog.js";
import type { Extra, McpContext } from "./context.js";
import { failure, jsonSchema, PAID_OUTPUT_SCHEMA, paidResult } from "./results.js";
import type { Updates } from "./updates.js";

const EXTRAS = ["budget", "intentKey", "approvalId"] as const;

export const Budget = z.strictObject({
  amount: z.string().max(40).describe('Decimal USDC amount, e.g. "2.50"'),
  currency: z.literal("USDC"),
});
const Extras = z.object({
  budget: Budget.optional(),
  intentKey: z.string().min(8).max(100).regex(/^[A-Za-z0-9_.:-]+$/).optional(),
  approvalId: z.string().min(1).max(100).optional(),
});

export interface PaidTool {
  entry: CatalogEntry;
  tool: Tool;
  /** Built on the tool's first call: converting 500 schemas would slow the start. */
  validator?: z.ZodType<Record<string, unknown>>;
}

function describePaid(ctx: McpContext, entry: CatalogEntry, limits: ReturnType<McpContext["engine"]["limitsView"]>): string {
  const d = entry.detail;
  const pricing = d.pricing as Record<string, unknown> | undefined;
  const parts = [
    `${d.description ?? entry.name} (service action ${entry.name}).`,
    pricing ? `Pricing: ${String(pricing.formula ?? pricing.model)}${pricing.unit ? ` (per ${String(pricing.unit)})` : ""}, in USDC.` : "",
    d.budgetHints ? `Budget hints: typically ${d.budgetHints.typical ?? "?"} USDC, at most ${d.budgetHints.max ?? "?"} USDC.` : "",
    `This tool SPENDS MONEY: it quotes the price, checks it against the human's limits` +
      (limits ? ` (per call ≤ ${limits.maxPerCall} USDC, per day ≤ ${limits.maxPerDay} USDC, approval needed above ${limits.approvalAbove} USDC)` : "") +
      `, pays with x402 and starts the execution. Call quote_action first to see the price. Optional: budget {amount, currency: "USDC"} lowers the ceiling for this call; intentKey makes a retry land on the same purchase (without it, every call is a new purchase); approvalId continues after a human approved.`,
    ctx.sandboxNote.trim(),
  ];
  return parts.filter(Boolean).join(" ");
}

/**
 * The paid tools for a catalog, by tool name. An action is skipped (and logged) when it has
 * no valid tool name, when its name is `taken` or already used, or when its input already
 * names one of the extras.
 */
export function buildPaidTools(ctx: McpContext, entries: CatalogEntry[], taken: (name: string) => boolean): Map<string, PaidTool> {
  const map = new Map<string, PaidTool>();
  const limits = ctx.engine.limitsView();
  for (const entry of entries) {
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
    const title = `${entry.name.replace(/[.-]/g, " ")} (paid${ctx.sandbox ? ", sandbox" : ""})`;
    const tool: Tool = {
      name,
      title,
      description: describePaid(ctx, entry, limits),
      inputSchema: {
        ...input,
        type: "object",
        properties: {
          ...props,
          budget: { ...(jsonSchema(Budget) as object), description: "Optional price ceiling for this call; can only lower the human's limits." },
          intentKey: { type: "string", minLength: 8, maxLength: 100, pattern: "^[A-Za-z0-9_.:-]+$", description: "Optional key of this purchase: a retry with the same key never pays twice." },
          approvalId: { type: "string", description: "After a human approved (paid-actions-mcp approve <id>), pass the approvalId with the same input." },
        },
      } as Tool["inputSchema"],
      outputSchema: PAID_OUTPUT_SCHEMA as unknown as Tool["outputSchema"],
      // Not idempotent: two identical calls without an intentKey are two purchases, by design.
      annotations: { title, readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      execution: { taskSupport: "optional" },
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
    throw new PaidActionError("invalid_input", `${i.path.join(".")}: ${i.message}`, { issues: extras.error.issues.slice(0, 10).map((x) => ({ path: x.path.join("."), message: x.message })) });
  }
  // Own properties, whatever their names: assigning a "__proto__" key would set the object's
  // prototype instead, hiding the key from the schema and lending its fields to the input.
  const rawInput: Record<string, unknown> = Object.fromEntries(Object.entries(all).filter(([k]) => !(EXTRAS as readonly string[]).includes(k)));
  tool.validator ??= inputValidator(tool.entry.detail);
  const input = tool.validator.safeParse(rawInput);
  if (!input.success) {
    const issues = input.error.issues.slice(0, 10).map((x) => ({ path: x.path.join(".") || "(input)", message: x.message.slice(0, 200) }));
    throw new PaidActionError("invalid_input", `the input does not match ${tool.entry.name}'s schema: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`, { issues });
  }
  return { input: input.data, ...extras.data };
}

/** Progress notifications for a call that carries a progress token (none otherwise). */
function progressReporter(extra: Extra | undefined): ((message: string) => void) | undefined {
  const token = extra?._meta?.progressToken;
  if (token === undefined || !extra) return undefined;
  let progress = 0;
  return (message) => {
    progress += 1;
    void extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, message } }).catch(() => undefined);
  };
}

/**
 * A task store whose cancellation aborts the task's paid call (effective until anything is
 * signed); `cancels` holds the controller of each task whose call can still be cancelled.
 */
export function cancellableTaskStore(): { store: InMemoryTaskStore; cancels: Map<string, AbortController> } {
  const cancels = new Map<string, AbortController>();
  const store = new (class extends InMemoryTaskStore {
    override async updateTaskStatus(...args: Parameters<InMemoryTaskStore["updateTaskStatus"]>): Promise<void> {
      if (args[1] === "cancelled") cancels.get(args[0])?.abort();
      return super.updateTaskStatus(...args);
    }
  })();
  return { store, cancels };
}

export interface PaidCalls {
  /** A plain paid call: returns as soon as the execution has started (or the call was refused). */
  call(tool: PaidTool, args: unknown, extra: Extra): Promise<CallToolResult>;
  /** A task-augmented paid call: the task ends when the execution reaches a final status. */
  startTask(tool: PaidTool, args: unknown, ttl: number | undefined, extra: Extra): Promise<CreateTaskResult>;
}

export interface PaidCallDeps {
  nextUpdate: Updates["nextUpdate"];
  /** From cancellableTaskStore: a task's controller, while its call can still be cancelled. */
  taskCancels: Map<string, AbortController>;
  /** How long an approval question waits for the human. */
  approvalTimeoutMs: number;
}

export function createPaidCalls(ctx: McpContext, deps: PaidCallDeps): PaidCalls {
  const { engine, now, sandbox, scrub } = ctx;

  async function callPaid(tool: PaidTool, args: unknown, signal: AbortSignal | undefined, extra?: Extra): Promise<{ paid?: PaidCall; result: CallToolResult }> {
    const callId = newId("call");
    try {
      const { input, budget, intentKey, approvalId } = parsePaidArgs(tool, args);
      const paid = await engine.pay(
        { action: tool.entry.name, input, budget, intentKey, approvalId },
        { callId, approve: approverFor(ctx, deps.approvalTimeoutMs), signal, onProgress: progressReporter(extra) },
      );
      return { paid, result: paidResult(paid, undefined, sandbox) };
    } catch (e) {
      ctx.pa.transcripts.append(callId, "tool_error", { tool: tool.tool.name, error: e instanceof PaidActionError ? e.toJSON() : String(e) });
      return { result: failure(e, sandbox, scrub) };
    }
  }

  async function startTask(tool: PaidTool, args: unknown, ttl: number | undefined, extra: Extra): Promise<CreateTaskResult> {
    const store = extra.taskStore;
    if (!store) throw new McpError(ErrorCode.InternalError, "task store unavailable");
    const task = await store.createTask({ ttl: ttl ?? 3_600_000, pollInterval: 1_000 });
    const cancel = new AbortController();
    deps.taskCancels.set(task.taskId, cancel);
    void (async () => {
      const { paid, result } = await callPaid(tool, args, cancel.signal).finally(() => deps.taskCancels.delete(task.taskId));
      if (cancel.signal.aborted && !paid) return; // cancelled before anything was signed: the task is already cancelled
      if (!paid) {
        await store.storeTaskResult(task.taskId, "failed", result).catch(() => undefined);
        return;
      }
      await store.updateTaskStatus(task.taskId, "working", `execution ${paid.executionId} is ${paid.status}`).catch(() => undefined);
      let view = await engine.getExecution(paid.executionId, false);
      const deadline = now() + (ttl ?? 3_600_000);
      while (view && !FINAL_STATUSES.has(view.status as ExecutionStatus) && now() < deadline && !ctx.isClosed()) {
        await deps.nextUpdate(paid.executionId, 2_000);
        view = await engine.getExecution(paid.executionId, true);
        if (view) await store.updateTaskStatus(task.taskId, "working", `execution ${paid.executionId} is ${view.status}`).catch(() => undefined);
      }
      if (ctx.isClosed()) return;
      const final = view !== undefined && FINAL_STATUSES.has(view.status as ExecutionStatus);
      // A task ends when its execution does; one that outlives its TTL ends failed, saying so
      // (the purchase itself goes on: get_execution follows it).
      const outcome = final
        ? paidResult(paid, view, sandbox)
        : failure(new PaidActionError("outcome_unknown", `execution ${paid.executionId} was still ${view?.status ?? "unknown"} when the task's time ran out; it was paid once and is still followed — use get_execution`, { executionId: paid.executionId }, true), sandbox, scrub);
      await store.storeTaskResult(task.taskId, final ? "completed" : "failed", outcome).catch(() => undefined);
    })();
    return { task };
  }

  return {
    call: async (tool, args, extra) => (await callPaid(tool, args, extra.signal, extra)).result,
    startTask,
  };
}
