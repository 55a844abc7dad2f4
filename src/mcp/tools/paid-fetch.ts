/**
 * paid_fetch: any x402 resource bought under the same limits, approvals, journal and chain
 * truth as the catalog's actions. It is a paid tool like them (paid-tools.ts): the shared
 * arguments, the call, the person's approval, the transcript and the refusals are theirs;
 * what is its own is here — its request's arguments, the engine's payFetch, what the
 * approval question shows (the method and the URL with its query values redacted, never a
 * header value or the body), and the answer: the status, a few headers, the body (JSON
 * parsed, text up to 64 KiB; a longer or binary body kept whole as the purchase's body
 * resource) and the payment, or null when the resource asked for none.
 */
import type { Tool } from "@modelcontextprotocol/server";
import { z } from "zod";
import { paidError, shapeBody, type FetchOutcome } from "../../engine/index.js";
import type { McpContext } from "../context.js";
import { extrasFields, issuesOf, type PaidTool } from "../paid-tools.js";
import { jsonSchema, ok } from "../results.js";
import { purchaseBodyUri, purchaseUri, transcriptUri } from "../uris.js";

const NAME = "paid_fetch";

/** The request's own arguments (the shared ones are added from paid-tools.ts). */
const Request = z.strictObject({
  url: z.string().min(1).max(8192).describe("The resource's URL: https (http only for an allowed loopback origin)."),
  method: z.enum(["GET", "POST", "PUT", "PATCH", "DELETE"]).optional().describe("Default GET."),
  headers: z
    .record(z.string(), z.string())
    .optional()
    .describe("Request headers; never a payment header (PAYMENT-SIGNATURE, X-PAYMENT) or a hop-by-hop one."),
  body: z
    .union([z.string(), z.record(z.string(), z.unknown()), z.array(z.unknown())])
    .optional()
    .describe("A string, or an object sent as JSON (not with GET)."),
});

/** The tool's whole input, as listed: the request's arguments and the shared ones. */
const Schema = Request.extend(
  extrasFields({
    budget: "The most this call may pay; can only lower the human's limits.",
    intentKey: "Key of this purchase: a retry with it returns the stored answer and never pays twice.",
    approvalId: "After a person approved this payment (console or terminal), its approvalId with the same request.",
  }),
);

function describeFetch(ctx: McpContext): string {
  const limits = ctx.host.limits;
  return (
    "Sends an HTTP request to a URL; when the resource answers 402 with x402 payment requirements, pays it in USDC on Solana " +
    "and sends the request again with the payment. This tool can SPEND MONEY: only origins the human allowed " +
    "(PAID_ACTIONS_ALLOW_ORIGINS) are paid, within the human's limits" +
    (limits
      ? ` (per call ≤ ${limits.maxPerCall} USDC, per day ≤ ${limits.maxPerDay} USDC, approval needed above ${limits.approvalAbove} USDC)`
      : "") +
    ". An answer other than 402 is returned as is, nothing paid. Use search_paid_resources to find resources. " +
    "Pass an intentKey so that a retry returns the stored answer instead of paying again." +
    (ctx.sandbox ? " (sandbox)" : "")
  );
}

/** paid_fetch as a paid tool: its request checked here, paid with engine.payFetch, answered with fetchAnswer. */
export function paidFetchTool(ctx: McpContext): PaidTool {
  const title = `Fetch an x402 resource (paid${ctx.sandbox ? ", sandbox" : ""})`;
  // The JSON Schema is built on the first tools/list, not before the first answer.
  let tool: Tool | undefined;
  return {
    get tool() {
      return (tool ??= {
        name: NAME,
        title,
        description: describeFetch(ctx),
        inputSchema: jsonSchema(Schema),
        // Two identical calls without an intentKey are two purchases, by design.
        annotations: { title, readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      });
    },
    accept(own) {
      const parsed = Request.safeParse(own);
      if (!parsed.success) {
        const issues = issuesOf(parsed.error, "(arguments)");
        throw paidError("invalid_input", { problem: "arguments", tool: NAME, issues });
      }
      const request = parsed.data;
      return {
        noted: { method: request.method ?? "GET" },
        pay: async (engine, extras, opts) =>
          fetchAnswer(await engine.payFetch({ ...request, ...extras }, opts), opts.callId, ctx.sandbox),
        // The journal's public view of the request: the URL without query values, header names only.
        subject: async (pa, approvalId) => {
          const review = await pa.engine.approvalReview(approvalId);
          if (!review?.fetch) return { paidFor: NAME, input: null };
          return { paidFor: `${review.fetch.method} ${review.fetch.url} (${NAME})`, input: review.input };
        },
      };
    },
  };
}

/** Registers paid_fetch among the paid tools that are not catalog actions. */
export function registerPaidFetchTool(paid: Map<string, PaidTool>, ctx: McpContext): void {
  paid.set(NAME, paidFetchTool(ctx));
}

/** The tool result of a fetch: the body parsed, cut (the whole kept as the purchase's body resource) or left out when binary. */
export function fetchAnswer({ result, body }: FetchOutcome, callId: string, sandbox: boolean) {
  const shaped = shapeBody(result.contentType ?? undefined, body);
  const kept = result.intentId ? purchaseBodyUri(result.intentId) : undefined;
  const bodyFields =
    shaped.kind === "json"
      ? { body: shaped.value }
      : shaped.kind === "text"
        ? {
            body: shaped.text,
            ...(shaped.truncated ? { bodyTruncated: true, ...(kept ? { bodyResource: kept } : {}) } : {}),
          }
        : shaped.kind === "binary"
          ? { body: null, ...(kept ? { bodyResource: kept } : { bodyOmitted: "binary" }) }
          : { body: null };
  const structured = {
    ...result,
    ...bodyFields,
    ...(result.intentId ? { purchase: purchaseUri(result.intentId) } : {}),
    transcript: transcriptUri(callId),
    ...(sandbox ? { sandbox: true } : {}),
  };
  const paid = result.payment
    ? `paid ${result.payment.amount} USDC to ${result.payment.payTo}${result.payment.transaction ? ` (${result.payment.transaction})` : ""}`
    : "nothing paid";
  return ok(structured, `HTTP ${result.status}; ${paid}.${result.attention ? ` Attention: ${result.attention}` : ""}`);
}
