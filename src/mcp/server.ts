/**
 * The MCP surface: one tool per catalog action (paid), read-only mirror tools, executions
 * as resources with subscriptions, approvals by elicitation, and task-augmented paid calls.
 *
 * Built on the SDK's low-level `Server` so that each paid tool publishes exactly the JSON
 * Schema the service gives, and every refusal — bad input included — is a tool result
 * with `isError: true` and its code in `structuredContent`.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js";
import {
  type CallToolRequest,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ErrorCode,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { z } from "zod";
import { Company, FINAL_STATUSES, type ExecutionStatus } from "../domain/wire.js";
import type { Config } from "../engine/config.js";
import type { Engine } from "../engine/engine.js";
import { PaidActionError } from "../engine/errors.js";
import type { Journal } from "../engine/journal/sqlite.js";
import type { ServiceClient } from "../engine/service-client.js";
import type { Transcripts } from "../engine/transcripts.js";
import type { ApprovalAnswer, ApprovalAsk, ExecutionEvent, ExecutionView, PaidCall } from "../engine/types.js";
import { newId } from "../domain/ids.js";
import { cachedCatalog, inputSchemaOf, inputValidator, loadCatalog, TOOL_NAME, toolNameFor, type Catalog, type CatalogEntry } from "./catalog.js";
import { hintFor } from "./hints.js";

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** What the MCP surface is built on (assembled by the app layer). */
export interface McpPaidActions {
  engine: Engine;
  journal: Journal;
  transcripts: Transcripts;
  client?: ServiceClient;
  config?: Config;
}

export interface McpServerOptions {
  pa: McpPaidActions;
  version: string;
  log: (line: string) => void;
  now?: () => number;
  /** How long an approval question waits for the human (default 120 s). */
  approvalTimeoutMs?: number;
}

/**
 * tools/call as the protocol layer parses it: loosely. The SDK's Server checks every
 * tools/call against CallToolRequestSchema before the handler runs and answers a malformed
 * one (arguments that are not an object, a name that is not a string) with InvalidParams;
 * registered with the strict schema, the protocol layer's own parse would throw first and
 * the client would get InternalError, as if the server had failed.
 */
const ToolsCallRequest = z.object({ method: z.literal("tools/call"), params: z.looseObject({}) });

const EXTRAS = ["budget", "intentKey", "approvalId"] as const;
const MAX_WAIT_SECONDS = 100;

const Budget = z.strictObject({
  amount: z.string().max(40).describe('Decimal USDC amount, e.g. "2.50"'),
  currency: z.literal("USDC"),
});
const Extras = z.object({
  budget: Budget.optional(),
  intentKey: z.string().min(8).max(100).regex(/^[A-Za-z0-9_.:-]+$/).optional(),
  approvalId: z.string().min(1).max(100).optional(),
});

const PAID_OUTPUT_SCHEMA = {
  type: "object",
  properties: {
    executionId: { type: "string" },
    status: { type: "string", enum: ["pending", "processing", "completed", "failed", "refunded"] },
    action: { type: "string" },
    quote: {
      type: "object",
      properties: { quoteId: { type: "string" }, amount: { type: "string" }, currency: { type: "string" } },
      required: ["quoteId", "amount", "currency"],
    },
    payment: {
      type: "object",
      properties: { transaction: { anyOf: [{ type: "string" }, { type: "null" }] }, amount: { type: "string" } },
      required: ["transaction", "amount"],
    },
    resourceUri: { type: "string" },
    next: { type: "string" },
    error: {
      type: "object",
      description: "Present instead of the fields above when the call was refused (isError: true).",
      properties: { code: { type: "string" }, message: { type: "string" }, whatToDo: { type: "string" }, retryable: { type: "boolean" } },
      required: ["code", "message"],
    },
  },
  // A paid call's result carries either the execution's facts or an error; hosts validate
  // structuredContent of refusals too, so neither half is required.
} as const;

interface MirrorTool {
  tool: Tool;
  schema: z.ZodType;
  run: (args: any, extra: Extra) => Promise<CallToolResult>;
}

/** `{}` as a schema constrains nothing; hosts read `true` more portably. */
function portable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(portable);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    out[k] = k === "additionalProperties" && v && typeof v === "object" && Object.keys(v).length === 0 ? true : portable(v);
  }
  return out;
}

function jsonSchema(schema: z.ZodType): Tool["inputSchema"] {
  const out = portable(z.toJSONSchema(schema, { io: "input", target: "draft-2020-12" })) as Record<string, unknown>;
  delete out.$schema;
  return out as Tool["inputSchema"];
}

export const executionUri = (executionId: string) => `paid-actions://executions/${executionId}`;

/** A tool result that carries its facts twice: structured for the model, text for humans. */
function ok(structured: Record<string, unknown>, summary: string): CallToolResult {
  return {
    structuredContent: structured,
    content: [{ type: "text", text: `${summary}\n\n${JSON.stringify(structured, null, 2)}` }],
  };
}

function failure(e: unknown, sandbox: boolean, scrub: (s: string) => string): CallToolResult {
  const err = e instanceof PaidActionError ? e : new PaidActionError("service_error", `unexpected failure: ${(e as Error)?.message ?? String(e)}`);
  const hint = hintFor(err);
  const error = JSON.parse(scrub(JSON.stringify({ ...err.toJSON(), whatToDo: hint }))) as Record<string, unknown>;
  const structured = { error, ...(sandbox ? { sandbox: true } : {}) };
  return {
    isError: true,
    structuredContent: structured,
    content: [{ type: "text", text: `${scrub(`Refused (${err.code}): ${err.message}`)}\nWhat to do: ${hint}${sandbox ? "\n(sandbox)" : ""}` }],
  };
}

export interface PaidActionsMcp {
  server: Server;
  catalog: Catalog;
  /** Re-reads the catalog from the service; announces a changed tool list. */
  refreshCatalog(): Promise<void>;
  close(): Promise<void>;
}

export async function createMcpServer(o: McpServerOptions): Promise<PaidActionsMcp> {
  const { pa } = o;
  const now = o.now ?? Date.now;
  const engine = pa.engine;
  const sandbox = pa.config?.mode === "sandbox";
  const scrub = (s: string) => pa.transcripts.scrub(s);
  const sandboxNote = sandbox
    ? " SANDBOX: this server runs against the embedded reference service; payments settle on an emulated Solana devnet ledger with demo USDC — no real money moves."
    : "";

  // A cached catalog answers tools/list at once; the service's copy replaces it in the
  // background (tools/list_changed when it differs). Without a cache, fetch it now.
  const cached = cachedCatalog(pa.journal, engine.service);
  let catalog = cached.entries.length > 0 ? cached : await loadCatalog(pa.client, pa.journal, engine.service, now());
  if (catalog.problem) o.log(`catalog: the service did not answer (${catalog.problem}); using ${catalog.source === "cache" ? "the cached catalog" : "no paid tools yet"}`);

  /** Tasks whose paid call can still be cancelled (before anything is signed). */
  const taskCancels = new Map<string, AbortController>();
  const taskStore = new (class extends InMemoryTaskStore {
    override async updateTaskStatus(...args: Parameters<InMemoryTaskStore["updateTaskStatus"]>): Promise<void> {
      if (args[1] === "cancelled") taskCancels.get(args[0])?.abort();
      return super.updateTaskStatus(...args);
    }
  })();
  const server = new Server(
    { name: "paid-actions-mcp", version: o.version, title: sandbox ? "Paid actions (sandbox)" : "Paid actions" },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      },
      taskStore,
      instructions:
        "Buy real-world actions (servers, companies, domains, storage, agent services) from a payment-gated service. " +
        "Each paid tool quotes, checks the human's limits, pays in USDC (x402 on Solana) and returns an execution id at once; " +
        "follow it with get_execution, wait_for_execution or the resource paid-actions://executions/{executionId}. " +
        "Use quote_action first to see a price without paying. Limits are set by the human and cannot be raised by the agent." +
        sandboxNote,
    },
  );

  // ---- Paid tools -----------------------------------------------------------------

  interface PaidTool {
    entry: CatalogEntry;
    tool: Tool;
    /** Built on the tool's first call: converting 500 schemas would slow the start. */
    validator?: z.ZodType<Record<string, unknown>>;
  }
  let paidTools = new Map<string, PaidTool>();

  function describePaid(entry: CatalogEntry, limits: ReturnType<typeof engine.limitsView>): string {
    const d = entry.detail;
    const pricing = d.pricing as Record<string, unknown> | undefined;
    const parts = [
      `${d.description ?? entry.name} (service action ${entry.name}).`,
      pricing ? `Pricing: ${String(pricing.formula ?? pricing.model)}${pricing.unit ? ` (per ${String(pricing.unit)})` : ""}, in USDC.` : "",
      d.budgetHints ? `Budget hints: typically ${d.budgetHints.typical ?? "?"} USDC, at most ${d.budgetHints.max ?? "?"} USDC.` : "",
      `This tool SPENDS MONEY: it quotes the price, checks it against the human's limits` +
        (limits ? ` (per call ≤ ${limits.maxPerCall} USDC, per day ≤ ${limits.maxPerDay} USDC, approval needed above ${limits.approvalAbove} USDC)` : "") +
        `, pays with x402 and starts the execution. Call quote_action first to see the price. Optional: budget {amount, currency: "USDC"} lowers the ceiling for this call; intentKey makes a retry land on the same purchase (without it, every call is a new purchase); approvalId continues after a human approved.`,
      sandboxNote.trim(),
    ];
    return parts.filter(Boolean).join(" ");
  }

  function buildPaidTools(entries: CatalogEntry[]): Map<string, PaidTool> {
    const map = new Map<string, PaidTool>();
    const limits = engine.limitsView();
    for (const entry of entries) {
      const name = toolNameFor(entry.name);
      if (!TOOL_NAME.test(name)) {
        o.log(`catalog: action ${JSON.stringify(entry.name).slice(0, 80)} has no valid tool name; skipped`);
        continue;
      }
      if (mirror.has(name) || map.has(name)) {
        o.log(`catalog: tool name ${name} for action ${entry.name} is already taken; skipped`);
        continue;
      }
      const input = inputSchemaOf(entry.detail);
      const props = (input.properties ?? {}) as Record<string, unknown>;
      if (EXTRAS.some((k) => k in props)) {
        o.log(`catalog: action ${entry.name} has an input named budget, intentKey or approvalId; skipped`);
        continue;
      }
      const title = `${entry.name.replace(/[.-]/g, " ")} (paid${sandbox ? ", sandbox" : ""})`;
      const tool: Tool = {
        name,
        title,
        description: describePaid(entry, limits),
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

  async function elicitApproval(ask: ApprovalAsk): Promise<ApprovalAnswer> {
    const result = await server.elicitInput(
      {
        mode: "form",
        message:
          `Approve a payment${sandbox ? " (SANDBOX, demo USDC)" : ""}: ${ask.amount} ${ask.currency} for ${ask.action} to ${ask.payee}. ` +
          `Quote ${ask.quoteId} expires at ${ask.expiresAt}. Input: ${JSON.stringify(ask.input).slice(0, 500)}`,
        requestedSchema: {
          type: "object",
          properties: {
            approve: { type: "boolean", title: `Pay ${ask.amount} ${ask.currency}`, description: "Check to approve this one payment." },
          },
          required: ["approve"],
        },
      },
      { timeout: o.approvalTimeoutMs ?? 120_000 },
    );
    if (result.action !== "accept") return result.action;
    return result.content?.approve === true ? "accept" : "decline";
  }

  function paidResult(paid: PaidCall, view?: ExecutionView): CallToolResult {
    const status = view?.status ?? paid.status;
    const structured = {
      executionId: paid.executionId,
      status,
      action: paid.action,
      quote: { quoteId: paid.quote.quoteId, amount: paid.quote.amount, currency: paid.quote.currency },
      payment: { transaction: paid.payment.transaction, amount: paid.payment.amount },
      resourceUri: executionUri(paid.executionId),
      next: FINAL_STATUSES.has(status as ExecutionStatus)
        ? `The execution is ${status}; read it with get_execution {"executionId": "${paid.executionId}"}.`
        : `Paid; the execution runs at the provider. Follow it with wait_for_execution {"executionId": "${paid.executionId}", "timeoutSeconds": 60} or get_execution, or read/subscribe ${executionUri(paid.executionId)}. Do not call this tool again for the same purchase.`,
      intentKey: paid.intentKey,
      ...(view?.output !== undefined ? { output: view.output } : {}),
      ...(paid.callId ? { callId: paid.callId, transcriptUri: `paid-actions://transcripts/${paid.callId}` } : {}),
      ...(sandbox ? { sandbox: true } : {}),
    };
    return ok(structured, `Paid ${paid.quote.amount} USDC for ${paid.action}${sandbox ? " (sandbox)" : ""}. Execution ${paid.executionId} is ${status}.`);
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

  async function callPaid(tool: PaidTool, args: unknown, signal: AbortSignal | undefined, extra?: Extra): Promise<{ paid?: PaidCall; result: CallToolResult }> {
    const callId = newId("call");
    try {
      const { input, budget, intentKey, approvalId } = parsePaidArgs(tool, args);
      const canElicit = Boolean(server.getClientCapabilities()?.elicitation);
      const paid = await engine.pay(
        { action: tool.entry.name, input, budget, intentKey, approvalId },
        { callId, approve: canElicit ? elicitApproval : undefined, signal, onProgress: progressReporter(extra) },
      );
      return { paid, result: paidResult(paid) };
    } catch (e) {
      pa.transcripts.append(callId, "tool_error", { tool: tool.tool.name, error: e instanceof PaidActionError ? e.toJSON() : String(e) });
      return { result: failure(e, sandbox, scrub) };
    }
  }

  // ---- Mirror tools -----------------------------------------------------------------

  const mirror = new Map<string, MirrorTool>();
  const addMirror = (name: string, title: string, description: string, schema: z.ZodType, run: MirrorTool["run"], readOnly = true) => {
    mirror.set(name, {
      schema,
      run,
      tool: {
        name,
        title,
        description: description + (sandbox ? " (sandbox)" : ""),
        inputSchema: jsonSchema(schema),
        annotations: { title, readOnlyHint: readOnly, destructiveHint: false, idempotentHint: true, openWorldHint: !readOnly || name === "search_agent_services" },
      },
    });
  };

  addMirror(
    "quote_action",
    "Quote an action (free)",
    "Prices an intent without paying: the service's quote, and whether the human's limits allow paying it now (or need an approval). Pays nothing.",
    z.strictObject({ action: z.string().min(1).max(100).describe("Service action, e.g. servers.provision"), input: z.record(z.string(), z.unknown()), budget: Budget.optional() }),
    async (args: { action: string; input: Record<string, unknown>; budget?: { amount: string; currency: string } }) => {
      const q = await engine.quote(args);
      return ok({ ...q, tool: toolNameFor(args.action), ...(sandbox ? { sandbox: true } : {}) }, `${args.action} costs ${q.amount} USDC (quote ${q.quoteId}, expires ${q.expiresAt}). ${q.payable ? (q.needsApproval ? "Within limits, but a human must approve it." : "Within limits.") : `Not payable: ${q.refusal?.message}`}`);
    },
  );
  addMirror(
    "get_execution",
    "Get an execution",
    "An execution this server paid for, from its journal, refreshed from the service: status, output, refund.",
    z.strictObject({ executionId: z.string().min(1).max(128) }),
    async (args: { executionId: string }) => {
      const view = await engine.getExecution(args.executionId, true);
      if (!view) throw new PaidActionError("not_found", `no execution ${args.executionId} in this server's journal`, { executionId: args.executionId });
      return ok({ ...view, resourceUri: executionUri(args.executionId), ...(sandbox ? { sandbox: true } : {}) }, `Execution ${args.executionId} (${view.action}) is ${view.status}.`);
    },
  );
  addMirror(
    "list_executions",
    "List executions",
    "Executions this server paid for, newest first, from its journal. Filter by status or action; page with cursor.",
    z.strictObject({
      status: z.enum(["pending", "processing", "completed", "failed", "refunded"]).optional(),
      action: z.string().max(100).optional(),
      limit: z.int().min(1).max(100).optional(),
      cursor: z.string().max(200).optional(),
    }),
    async (args: { status?: string; action?: string; limit?: number; cursor?: string }) => {
      const page = engine.listExecutions(args);
      return ok({ ...page, ...(sandbox ? { sandbox: true } : {}) }, `${page.items.length} execution(s)${page.nextCursor ? "; more with nextCursor" : ""}.`);
    },
  );
  addMirror(
    "wait_for_execution",
    "Wait for an execution",
    `Waits (at most ${MAX_WAIT_SECONDS} s) until an execution reaches a final status, sending progress notifications, and returns its record.`,
    z.strictObject({ executionId: z.string().min(1).max(128), timeoutSeconds: z.number().min(0).max(MAX_WAIT_SECONDS).default(60) }),
    async (args: { executionId: string; timeoutSeconds: number }, extra: Extra) => {
      const view = await waitFor(args.executionId, args.timeoutSeconds * 1000, extra);
      const final = FINAL_STATUSES.has(view.status as ExecutionStatus);
      return ok(
        { ...view, final, timedOut: !final, resourceUri: executionUri(args.executionId), ...(sandbox ? { sandbox: true } : {}) },
        final ? `Execution ${args.executionId} is ${view.status}.` : `Execution ${args.executionId} is still ${view.status} after ${args.timeoutSeconds} s; wait again or subscribe to ${executionUri(args.executionId)}.`,
      );
    },
  );
  addMirror(
    "get_spending",
    "Get spending and limits",
    "The human's limits, what was spent and reserved in the rolling 24 h window and in total, and what remains.",
    z.strictObject({}),
    async () => {
      const s = engine.spending();
      return ok({ ...s, ...(sandbox ? { sandbox: true } : {}) }, `Spent ${s.spentLast24h} USDC in the last 24 h (${s.reserved} reserved); ${s.remainingToday ?? "?"} USDC left today.`);
    },
  );
  addMirror(
    "search_agent_services",
    "Search agent services",
    "Searches the service's marketplace of agent services by task type, price band and guarantees (free). Hire one with agent_services_purchase.",
    z.strictObject({
      taskType: z.string().max(64).optional(),
      query: z.string().max(200).optional(),
      priceBand: z.strictObject({ min: z.string().max(40).optional(), max: z.string().max(40).optional() }).optional(),
      guarantees: z.strictObject({ refundOnFailure: z.boolean().optional(), maxDeliverySeconds: z.int().min(1).optional() }).optional(),
      limit: z.int().min(1).max(50).optional(),
    }),
    async (args: Record<string, unknown>) => {
      const client = requireClient();
      const res = await client.call("POST", "/agent-services/search", { body: args, schema: z.looseObject({ items: z.array(z.looseObject({ serviceId: z.string() })) }) });
      if (!res.ok) throw new PaidActionError(res.status === 400 ? "invalid_input" : "service_error", `search refused (HTTP ${res.status} ${res.error.code}): ${res.error.message}`);
      return ok({ ...res.body, ...(sandbox ? { sandbox: true } : {}) }, `${res.body.items.length} agent service(s) found.`);
    },
  );
  addMirror(
    "get_company",
    "Get a company",
    "The company record (formation status, provider references, documents) of a company formed with companies_create.",
    z.strictObject({ companyId: z.string().min(1).max(128).regex(/^[A-Za-z0-9_-]+$/) }),
    async (args: { companyId: string }) => {
      const client = requireClient();
      const res = await client.call("GET", `/companies/${encodeURIComponent(args.companyId)}`, { schema: Company });
      if (!res.ok) {
        throw new PaidActionError(res.status === 404 ? "not_found" : "service_error", `company ${args.companyId}: HTTP ${res.status} ${res.error.code}: ${res.error.message}`);
      }
      return ok({ ...res.body, ...(sandbox ? { sandbox: true } : {}) }, `Company ${res.body.name} is ${res.body.formationStatus}.`);
    },
  );

  function requireClient() {
    if (!pa.client) throw new PaidActionError("config_invalid", "the configuration is invalid; see get_spending's configIssues", {});
    return pa.client;
  }

  paidTools = buildPaidTools(catalog.entries);
  engine.useCatalog(catalog.entries.map((e) => e.name));

  // ---- Waiting and notifications ------------------------------------------------------

  const waiters = new Set<(e: ExecutionEvent) => void>();
  const subscriptions = new Set<string>();
  const onExecution = (e: ExecutionEvent) => {
    for (const w of waiters) w(e);
    const uri = executionUri(e.executionId);
    if (subscriptions.has(uri)) void server.sendResourceUpdated({ uri }).catch(() => undefined);
    if (subscriptions.has("paid-actions://executions")) void server.sendResourceUpdated({ uri: "paid-actions://executions" }).catch(() => undefined);
    if (subscriptions.has("paid-actions://spending")) void server.sendResourceUpdated({ uri: "paid-actions://spending" }).catch(() => undefined);
  };
  engine.on("execution", onExecution);

  /** Resolves on the execution's next status change, after `maxMs`, or when `signal` aborts. */
  function nextUpdate(executionId: string, maxMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiters.delete(listener);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const listener = (e: ExecutionEvent) => {
        if (e.executionId === executionId) done();
      };
      const timer = setTimeout(done, maxMs);
      waiters.add(listener);
      signal?.addEventListener("abort", done);
    });
  }

  async function waitFor(executionId: string, timeoutMs: number, extra: Extra): Promise<ExecutionView> {
    let view = await engine.getExecution(executionId, true);
    if (!view) throw new PaidActionError("not_found", `no execution ${executionId} in this server's journal`, { executionId });
    const token = extra._meta?.progressToken;
    const started = now();
    let progress = 0;
    const report = async (status: string) => {
      if (token === undefined) return;
      progress += 1;
      await extra
        .sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress, message: `${executionId} is ${status} (${Math.round((now() - started) / 1000)} s)` },
        })
        .catch(() => undefined);
    };
    await report(view.status);
    while (!FINAL_STATUSES.has(view.status as ExecutionStatus) && now() - started < timeoutMs && !extra.signal.aborted) {
      await nextUpdate(executionId, Math.min(1_000, timeoutMs - (now() - started)), extra.signal);
      const next = await engine.getExecution(executionId, true);
      if (next) view = next;
      await report(view.status);
    }
    return view;
  }

  // ---- Handlers -----------------------------------------------------------------------

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    if (revalidate) setImmediate(() => revalidate?.());
    return { tools: [...[...paidTools.values()].map((t) => t.tool), ...[...mirror.values()].map((m) => m.tool)] };
  });

  server.setRequestHandler(ToolsCallRequest, async (loose, extra) => {
    // The SDK's Server has validated it against CallToolRequestSchema before this runs.
    const request = loose as unknown as CallToolRequest;
    const name = request.params.name;
    const paid = paidTools.get(name);
    if (paid) {
      if (request.params.task) return startPaidTask(paid, request.params.arguments, request.params.task.ttl, extra);
      return (await callPaid(paid, request.params.arguments, extra.signal, extra)).result;
    }
    const m = mirror.get(name);
    if (!m) {
      if (catalog.source === "none" && pa.client) void refreshCatalog();
      throw new McpError(ErrorCode.InvalidParams, `unknown tool ${name.slice(0, 80)}`);
    }
    const parsed = m.schema.safeParse(request.params.arguments ?? {});
    if (!parsed.success) {
      const issues = parsed.error.issues.slice(0, 10).map((x) => ({ path: x.path.join(".") || "(arguments)", message: x.message.slice(0, 200) }));
      return failure(new PaidActionError("invalid_input", `invalid arguments for ${name}: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`, { issues }), sandbox, scrub);
    }
    try {
      return await m.run(parsed.data, extra);
    } catch (e) {
      return failure(e, sandbox, scrub);
    }
  });

  /** A task-augmented paid call: the task ends when the execution reaches a final status. */
  async function startPaidTask(tool: PaidTool, args: unknown, ttl: number | undefined, extra: Extra) {
    const store = extra.taskStore;
    if (!store) throw new McpError(ErrorCode.InternalError, "task store unavailable");
    const task = await store.createTask({ ttl: ttl ?? 3_600_000, pollInterval: 1_000 });
    const cancel = new AbortController();
    taskCancels.set(task.taskId, cancel);
    void (async () => {
      const { paid, result } = await callPaid(tool, args, cancel.signal).finally(() => taskCancels.delete(task.taskId));
      if (cancel.signal.aborted && !paid) return; // cancelled before anything was signed: the task is already cancelled
      if (!paid) {
        await store.storeTaskResult(task.taskId, "failed", result).catch(() => undefined);
        return;
      }
      await store.updateTaskStatus(task.taskId, "working", `execution ${paid.executionId} is ${paid.status}`).catch(() => undefined);
      let view = await engine.getExecution(paid.executionId, false);
      const deadline = now() + (ttl ?? 3_600_000);
      while (view && !FINAL_STATUSES.has(view.status as ExecutionStatus) && now() < deadline && !closed) {
        await nextUpdate(paid.executionId, 2_000);
        view = await engine.getExecution(paid.executionId, true);
        if (view) await store.updateTaskStatus(task.taskId, "working", `execution ${paid.executionId} is ${view.status}`).catch(() => undefined);
      }
      if (closed) return;
      const final = view !== undefined && FINAL_STATUSES.has(view.status as ExecutionStatus);
      // A task ends when its execution does; one that outlives its TTL ends failed, saying so
      // (the purchase itself goes on: get_execution follows it).
      const outcome = final
        ? paidResult(paid, view)
        : failure(new PaidActionError("outcome_unknown", `execution ${paid.executionId} was still ${view?.status ?? "unknown"} when the task's time ran out; it was paid once and is still followed — use get_execution`, { executionId: paid.executionId }, true), sandbox, scrub);
      await store.storeTaskResult(task.taskId, final ? "completed" : "failed", outcome).catch(() => undefined);
    })();
    return { task };
  }

  // ---- Resources ------------------------------------------------------------------------

  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    const recent = engine.listExecutions({ limit: 50 });
    return {
      resources: [
        { uri: "paid-actions://executions", name: "executions", title: "Recent executions", mimeType: "application/json", description: "The 50 most recent executions this server paid for." },
        { uri: "paid-actions://spending", name: "spending", title: "Spending and limits", mimeType: "application/json" },
        ...recent.items
          .filter((i) => i.executionId)
          .map((i) => ({ uri: executionUri(i.executionId!), name: i.executionId!, title: `${i.action} — ${i.status}`, mimeType: "application/json" })),
        ...pa.transcripts.list(20).map((t) => ({ uri: `paid-actions://transcripts/${t.callId}`, name: t.callId, title: `Transcript ${t.callId}`, mimeType: "application/json" })),
      ],
    };
  });

  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      { uriTemplate: "paid-actions://executions/{executionId}", name: "execution", title: "An execution", mimeType: "application/json", description: "Status, output and refund of one execution; subscribe for updates." },
      { uriTemplate: "paid-actions://transcripts/{callId}", name: "transcript", title: "A tool call's transcript", mimeType: "application/json", description: "The redacted record of each step of one tool call." },
    ],
  }));

  const json = (uri: string, value: unknown) => ({ contents: [{ uri, mimeType: "application/json", text: JSON.stringify(value, null, 2) }] });

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    if (uri === "paid-actions://executions") return json(uri, { ...engine.listExecutions({ limit: 50 }), ...(sandbox ? { sandbox: true } : {}) });
    if (uri === "paid-actions://spending") return json(uri, { ...engine.spending(), ...(sandbox ? { sandbox: true } : {}) });
    let m = /^paid-actions:\/\/executions\/([A-Za-z0-9_-]{1,128})$/.exec(uri);
    if (m) {
      const view = await engine.getExecution(m[1]!, true);
      if (!view) throw new McpError(ErrorCode.InvalidParams, `no execution ${m[1]} in this server's journal`);
      return json(uri, { ...view, ...(sandbox ? { sandbox: true } : {}) });
    }
    m = /^paid-actions:\/\/transcripts\/(call_[A-Za-z0-9]{1,40})$/.exec(uri);
    if (m) {
      const entries = pa.transcripts.read(m[1]!);
      if (!entries) throw new McpError(ErrorCode.InvalidParams, `no transcript ${m[1]}`);
      return json(uri, { callId: m[1], path: pa.transcripts.pathOf(m[1]!), entries });
    }
    throw new McpError(ErrorCode.InvalidParams, `unknown resource ${uri.slice(0, 200)}`);
  });

  const SUBSCRIBABLE = /^paid-actions:\/\/(executions(\/[A-Za-z0-9_-]{1,128})?|spending)$/;
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    if (!SUBSCRIBABLE.test(request.params.uri)) throw new McpError(ErrorCode.InvalidParams, `cannot subscribe to ${request.params.uri.slice(0, 200)}`);
    subscriptions.add(request.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });

  // ---- Catalog refresh -----------------------------------------------------------------

  let refreshing: Promise<void> | undefined;
  function refreshCatalog(): Promise<void> {
    refreshing ??= (async () => {
      const fresh = await loadCatalog(pa.client, pa.journal, engine.service, now());
      if (fresh.source !== "service") return;
      const before = JSON.stringify([...paidTools.values()].map((t) => t.tool));
      catalog = fresh;
      paidTools = buildPaidTools(fresh.entries);
      engine.useCatalog(fresh.entries.map((e) => e.name));
      if (JSON.stringify([...paidTools.values()].map((t) => t.tool)) !== before) await server.sendToolListChanged().catch(() => undefined);
    })().finally(() => {
      refreshing = undefined;
    });
    return refreshing;
  }
  // Revalidate a cached catalog once the host has its tool list (or after 2 s at most).
  let revalidate: (() => void) | undefined;
  if (catalog.source === "cache" && pa.client) {
    const timer = setTimeout(() => revalidate?.(), 2_000);
    timer.unref();
    revalidate = () => {
      revalidate = undefined;
      clearTimeout(timer);
      setImmediate(() => void refreshCatalog().catch(() => undefined));
    };
  }
  let retryTimer: NodeJS.Timeout | undefined;
  if (catalog.source !== "service" && pa.client) {
    retryTimer = setInterval(() => {
      if (catalog.source === "service") {
        clearInterval(retryTimer);
        return;
      }
      void refreshCatalog();
    }, 15_000);
    retryTimer.unref();
  }

  let closed = false;
  return {
    server,
    get catalog() {
      return catalog;
    },
    refreshCatalog,
    async close() {
      closed = true;
      if (retryTimer) clearInterval(retryTimer);
      engine.off("execution", onExecution);
      taskStore.cleanup();
      await server.close().catch(() => undefined);
    },
  };
}
