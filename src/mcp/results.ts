/**
 * The shapes an agent reads back: a result that carries its facts twice (structured and as
 * text), a refusal with its code and what to do, a paid call's result and its output schema,
 * and the JSON Schema of a zod input as hosts read it most portably.
 */
import type { CallToolResult, Tool } from "@modelcontextprotocol/server";
import { z } from "zod";
import { ExecutionStatus, FINAL_STATUSES } from "../domain/wire.js";
import { paidError, PaidActionError, type ExecutionView, type PaidCall } from "../engine/index.js";
import { hintFor } from "./hints.js";
import { executionUri, transcriptUri } from "./uris.js";

export { executionUri } from "./uris.js";

export const PAID_OUTPUT_SCHEMA = {
  type: "object",
  properties: {
    executionId: { type: "string" },
    status: { type: "string", enum: ExecutionStatus.options },
    action: { type: "string" },
    quote: {
      type: "object",
      properties: { quoteId: { type: "string" }, amount: { type: "string" }, currency: { type: "string" } },
      required: ["quoteId", "amount", "currency"],
    },
    payment: {
      type: "object",
      properties: {
        transaction: { anyOf: [{ type: "string" }, { type: "null" }] },
        amount: { type: "string" },
        seller: {
          type: "object",
          description:
            "Present when the service signed its word (x402 offer-receipt): signed is true when both its offer and its receipt verify and match what was paid.",
          properties: {
            signed: { type: "boolean" },
            offer: { type: "string" },
            receipt: { type: "string" },
            signer: { anyOf: [{ type: "string" }, { type: "null" }] },
          },
          required: ["signed", "offer", "receipt"],
        },
      },
      required: ["transaction", "amount"],
    },
    resourceUri: { type: "string" },
    next: { type: "string" },
    error: {
      type: "object",
      description: "Present instead of the fields above when the call was refused (isError: true).",
      properties: {
        code: { type: "string" },
        message: { type: "string" },
        whatToDo: { type: "string" },
        retryable: { type: "boolean" },
      },
      required: ["code", "message"],
    },
  },
  // A paid call's result carries either the execution's facts or an error; hosts validate
  // structuredContent of refusals too, so neither half is required.
} as const;

/** `{}` as a schema constrains nothing; hosts read `true` more portably. */
function portable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(portable);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    out[k] =
      k === "additionalProperties" && v && typeof v === "object" && Object.keys(v).length === 0 ? true : portable(v);
  }
  return out;
}

/** A zod schema's input side as a tool's JSON Schema (draft 2020-12, without `$schema`). */
export function jsonSchema(schema: z.ZodType): Tool["inputSchema"] {
  const out = portable(z.toJSONSchema(schema, { io: "input", target: "draft-2020-12" })) as Record<string, unknown>;
  delete out.$schema;
  return out as Tool["inputSchema"];
}

/** A tool result that carries its facts twice: structured for the model, text for humans. */
export function ok(structured: Record<string, unknown>, summary: string): CallToolResult {
  return {
    structuredContent: structured,
    content: [{ type: "text", text: `${summary}\n\n${JSON.stringify(structured, null, 2)}` }],
  };
}

/** A refusal as a tool result: `isError`, the code and what to do, scrubbed of secrets. */
export function failure(e: unknown, sandbox: boolean, scrub: (s: string) => string): CallToolResult {
  const err =
    e instanceof PaidActionError
      ? e
      : paidError("service_error", { problem: "unexpected", detail: (e as Error)?.message ?? String(e) });
  const hint = hintFor(err);
  const error = JSON.parse(scrub(JSON.stringify({ ...err.toJSON(), whatToDo: hint }))) as Record<string, unknown>;
  const structured = { error, ...(sandbox ? { sandbox: true } : {}) };
  return {
    isError: true,
    structuredContent: structured,
    content: [
      {
        type: "text",
        text: `${scrub(`Refused (${err.code}): ${err.message}`)}\nWhat to do: ${hint}${sandbox ? "\n(sandbox)" : ""}`,
      },
    ],
  };
}

/** A paid call's result (PAID_OUTPUT_SCHEMA): the execution's facts and what to do next. */
export function paidResult(paid: PaidCall, view: ExecutionView | undefined, sandbox: boolean): CallToolResult {
  const status = view?.status ?? paid.status;
  const structured = {
    executionId: paid.executionId,
    status,
    action: paid.action,
    quote: { quoteId: paid.quote.quoteId, amount: paid.quote.amount, currency: paid.quote.currency },
    payment: {
      transaction: paid.payment.transaction,
      amount: paid.payment.amount,
      ...(paid.payment.seller ? { seller: paid.payment.seller } : {}),
    },
    resourceUri: executionUri(paid.executionId),
    next: FINAL_STATUSES.has(status as ExecutionStatus)
      ? `The execution is ${status}; read it with get_execution {"executionId": "${paid.executionId}"}.`
      : `Paid; the execution runs at the provider. Follow it with wait_for_execution {"executionId": "${paid.executionId}", "timeoutSeconds": 60} or get_execution, or read/subscribe ${executionUri(paid.executionId)}. Do not call this tool again for the same purchase.`,
    intentKey: paid.intentKey,
    ...(view?.output !== undefined ? { output: view.output } : {}),
    ...(paid.callId ? { callId: paid.callId, transcriptUri: transcriptUri(paid.callId) } : {}),
    ...(sandbox ? { sandbox: true } : {}),
  };
  return ok(
    structured,
    `Paid ${paid.quote.amount} USDC for ${paid.action}${sandbox ? " (sandbox)" : ""}. Execution ${paid.executionId} is ${status}.`,
  );
}
