/**
 * The v1 API's routes: each endpoint's path, whether it changes state (and so goes through
 * idempotency), and its handler — a thin shell over the service.
 */
import type { IncomingMessage } from "node:http";
import type { IdempotentRequest } from "./idempotency.js";
import { z } from "zod";
import { ExecutionRequest, ExecutionStatus, QuoteRequest } from "../../domain/wire.js";
import { AgentServicesSearch, searchAgentServices } from "../providers/agent-services.js";
import { ApiError, invalidRequest, zodIssues } from "./errors.js";
import type { Reply } from "./io.js";
import type { Outcome } from "../service/records.js";
import type { SandboxService } from "../service/service.js";
import type { Webhooks } from "../service/webhooks.js";

/** A request as a route sees it: what idempotency needs, and the raw body. */
export interface Ctx extends IdempotentRequest {
  rawBody: string;
}

type Handler = (ctx: Ctx, params: string[]) => Reply | Promise<Reply>;

export interface Route {
  method: string;
  pattern: RegExp;
  handler: Handler;
  /** State-changing: goes through idempotency. */
  mutating: boolean;
}

const ID = "([A-Za-z0-9_.-]{1,128})";

function parse<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const result = schema.safeParse(body ?? {});
  if (!result.success) throw invalidRequest(`invalid ${what}`, zodIssues(result.error.issues));
  return result.data;
}

const JsonObject = z.record(z.string(), z.unknown());

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function sandboxControls(req: IncomingMessage): { outcome: Outcome; delayMs?: number } {
  const outcomeHeader = header(req, "x-sandbox-outcome");
  if (outcomeHeader !== undefined && outcomeHeader !== "fail" && outcomeHeader !== "succeed") {
    throw invalidRequest("X-Sandbox-Outcome must be 'fail' or 'succeed'", [
      { path: "header.X-Sandbox-Outcome", message: "fail or succeed" },
    ]);
  }
  const delayHeader = header(req, "x-sandbox-delay-ms");
  let delayMs: number | undefined;
  if (delayHeader !== undefined) {
    delayMs = Number(delayHeader);
    if (!/^\d{1,7}$/.test(delayHeader) || delayMs > 3_600_000) {
      throw invalidRequest("X-Sandbox-Delay-Ms must be an integer 0-3600000", [
        { path: "header.X-Sandbox-Delay-Ms", message: "0-3600000" },
      ]);
    }
  }
  return { outcome: outcomeHeader === "fail" ? "fail" : "succeed", delayMs };
}

/** POST /executions and the paid dedicated endpoints share this: settle, execute, answer 201 with PAYMENT-RESPONSE. */
async function execute(
  service: SandboxService,
  ctx: Ctx,
  action: string,
  input: Record<string, unknown>,
): Promise<Reply> {
  const proof =
    header(ctx.req, "x-payment-proof") ?? header(ctx.req, "payment-signature") ?? header(ctx.req, "x-payment");
  const { execution, payment } = await service.createExecution(ctx.tenant, {
    action,
    input,
    quoteId: header(ctx.req, "x-quote-id"),
    proof,
    ...sandboxControls(ctx.req),
  });
  // x402's SettleResponse, with the service's signed receipt (offer-receipt) in its extensions.
  const settle = service.payments.challenges.settleResponse(payment);
  return {
    status: 201,
    body: execution,
    headers: {
      "PAYMENT-RESPONSE": Buffer.from(JSON.stringify(settle)).toString("base64"),
      Location: `/v1/executions/${String(execution.executionId)}`,
    },
  };
}

const r = (method: string, path: string, handler: Handler, mutating = method !== "GET"): Route => ({
  method,
  pattern: new RegExp(`^${path.replace(/:id/g, ID)}$`),
  handler,
  mutating,
});

/** The catalog, quotes, and paying a quote. */
function quoteRoutes(service: SandboxService): Route[] {
  return [
    r("GET", "/actions", () => ({ status: 200, body: service.listActions() })),
    r("GET", "/actions/:id", (_ctx, [name]) => ({ status: 200, body: service.getAction(name!) })),
    r("POST", "/quotes", (ctx) => {
      const body = ctx.body as { budget?: { currency?: unknown } } | undefined;
      if (body?.budget && typeof body.budget.currency === "string" && body.budget.currency !== "USDC") {
        throw new ApiError(
          400,
          "unsupported_currency",
          `budget.currency ${JSON.stringify(body.budget.currency)} is not supported; use USDC`,
        );
      }
      const q = parse(QuoteRequest, ctx.body, "quote request");
      return { status: 201, body: service.createQuote(ctx.tenant, q.action, q.input, q.budget).view };
    }),
    r("GET", "/quotes/:id", (ctx, [id]) => ({ status: 200, body: service.getQuote(ctx.tenant, id!) })),
    r("POST", "/payments/prepare", (ctx) => {
      const { quoteId } = parse(z.object({ quoteId: z.string().min(1).max(128) }), ctx.body, "prepare request");
      return { status: 200, body: service.prepare(ctx.tenant, quoteId) };
    }),
    r("POST", "/payments/confirm", async (ctx) => {
      const { quoteId, paymentProof } = parse(
        z.object({ quoteId: z.string().min(1).max(128), paymentProof: z.string().min(1).max(16_384) }),
        ctx.body,
        "confirm request",
      );
      return { status: 200, body: await service.confirm(ctx.tenant, quoteId, paymentProof) };
    }),
  ];
}

/** Executions, the paid dedicated endpoints, and the records they create. */
function executionRoutes(service: SandboxService): Route[] {
  const dedicated = (actionName: string) => async (ctx: Ctx) => {
    const input = parse(JsonObject, ctx.body, `${actionName} body`);
    return execute(service, ctx, actionName, input);
  };

  return [
    r("POST", "/executions", (ctx) => {
      const e = parse(ExecutionRequest, ctx.body, "execution request");
      return execute(service, ctx, e.action, e.input);
    }),
    r("GET", "/executions", (ctx) => {
      const url = new URL(ctx.req.url ?? "/", "http://x");
      const q = parse(
        z.object({
          status: ExecutionStatus.optional(),
          limit: z.coerce.number().int().min(1).max(100).default(20),
          cursor: z.string().max(200).optional(),
        }),
        Object.fromEntries(url.searchParams),
        "query",
      );
      return { status: 200, body: service.listExecutions(ctx.tenant, q) };
    }),
    r("GET", "/executions/:id", (ctx, [id]) => ({ status: 200, body: service.getExecution(ctx.tenant, id!) })),
    r("POST", "/companies", dedicated("companies.create")),
    r("GET", "/companies/:id", (ctx, [id]) => ({ status: 200, body: service.getCompany(ctx.tenant, id!) })),
    r("POST", "/servers/provision", dedicated("servers.provision")),
    r("GET", "/servers/:id", (ctx, [id]) => ({ status: 200, body: service.getServer(ctx.tenant, id!) })),
    r("POST", "/servers/:id/renew", async (ctx, [serverId]) => {
      const body = parse(JsonObject, ctx.body, "renew body");
      return execute(service, ctx, "servers.renew", { ...body, serverId: serverId! });
    }),
    r("POST", "/domains/register", dedicated("domains.register")),
    r("POST", "/storage/purchase", dedicated("storage.purchase")),
    r(
      "POST",
      "/agent-services/search",
      (ctx) => ({
        status: 200,
        body: searchAgentServices(parse(AgentServicesSearch, ctx.body, "search request")),
      }),
      false,
    ),
    r("POST", "/agent-services/purchase", dedicated("agent-services.purchase")),
  ];
}

function webhookRoutes(webhooks: Webhooks): Route[] {
  return [
    r("POST", "/webhooks", async (ctx) => ({ status: 201, body: await webhooks.create(ctx.tenant, ctx.body) })),
    r("GET", "/webhooks", (ctx) => ({ status: 200, body: webhooks.list(ctx.tenant) })),
    r("DELETE", "/webhooks/:id", (ctx, [id]) => ({ status: 200, body: webhooks.delete(ctx.tenant, id!) })),
  ];
}

export function buildRoutes(service: SandboxService, webhooks: Webhooks): Route[] {
  return [...quoteRoutes(service), ...executionRoutes(service), ...webhookRoutes(webhooks)];
}

/** The first route whose method and path match (path below /v1), with its decoded :id parameters; 404 otherwise. */
export function matchRoute(routes: Route[], method: string, path: string): { route: Route; params: string[] } {
  for (const route of routes) {
    const m = route.pattern.exec(path);
    if (m && route.method === method) return { route, params: m.slice(1).map((p) => decodeURIComponent(p)) };
  }
  throw new ApiError(404, "not_found", `no endpoint ${method} /v1${path}`);
}
