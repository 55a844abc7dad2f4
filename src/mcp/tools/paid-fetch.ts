/**
 * paid_fetch: any x402 resource bought under the same limits, approvals, journal and chain
 * truth as the catalog's actions (the engine's payFetch). The answer: the status, a few
 * headers, the body (JSON parsed, text up to 64 KiB; a longer or binary body kept whole as
 * the purchase's body resource) and the payment, or null when the resource asked for none.
 */
import { z } from "zod";
import { newId } from "../../domain/ids.js";
import { PaidActionError, shapeBody, type FetchOutcome } from "../../engine/index.js";
import type { McpContext } from "../context.js";
import { Budget } from "../paid-tools.js";
import { progressReporter } from "../progress.js";
import { failure, ok } from "../results.js";
import { purchaseBodyUri, purchaseUri, transcriptUri } from "../uris.js";
import { addMirrorTool, type MirrorTools } from "./mirror.js";

const Schema = z.strictObject({
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
  budget: Budget.optional().describe("The most this call may pay; can only lower the human's limits."),
  intentKey: z
    .string()
    .min(8)
    .max(100)
    .regex(/^[A-Za-z0-9_.:-]+$/)
    .optional()
    .describe("Key of this purchase: a retry with it returns the stored answer and never pays twice."),
  approvalId: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .describe("After a person approved this payment (console or terminal), its approvalId with the same request."),
});

export function registerPaidFetchTool(tools: MirrorTools, ctx: McpContext): void {
  const { sandbox, scrub } = ctx;
  const limits = ctx.host.limits;
  addMirrorTool(tools, ctx, {
    name: "paid_fetch",
    title: `Fetch an x402 resource (paid${sandbox ? ", sandbox" : ""})`,
    description:
      "Sends an HTTP request to a URL; when the resource answers 402 with x402 payment requirements, pays it in USDC on Solana " +
      "and sends the request again with the payment. This tool can SPEND MONEY: only origins the human allowed " +
      "(PAID_ACTIONS_ALLOW_ORIGINS) are paid, within the human's limits" +
      (limits
        ? ` (per call ≤ ${limits.maxPerCall} USDC, per day ≤ ${limits.maxPerDay} USDC, approval needed above ${limits.approvalAbove} USDC)`
        : "") +
      ". An answer other than 402 is returned as is, nothing paid. Use search_paid_resources to find resources. " +
      "Pass an intentKey so that a retry returns the stored answer instead of paying again.",
    schema: Schema,
    readOnly: false,
    openWorld: true,
    // Two identical calls without an intentKey are two purchases, by design.
    idempotent: false,
    run: async (args, { pa, rctx }) => {
      const callId = newId("call");
      pa.transcripts.append(callId, "tool", { tool: "paid_fetch", method: args.method ?? "GET" });
      try {
        const out = await pa.engine.payFetch(args, {
          callId,
          signal: rctx.mcpReq.signal,
          onProgress: progressReporter(rctx),
        });
        return fetchAnswer(out, callId, sandbox);
      } catch (e) {
        pa.transcripts.append(callId, "tool_error", {
          tool: "paid_fetch",
          error: e instanceof PaidActionError ? e.toJSON() : String(e),
        });
        return failure(e, sandbox, scrub);
      }
    },
  });
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
