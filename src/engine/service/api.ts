/**
 * The v1 interface as typed operations: the only module outside the sandbox that knows the
 * service's paths, its request headers (X-Quote-Id, X-Payment-Proof) and how path
 * parameters are encoded. Each operation is one `ServiceClient.call` with the response
 * schema of domain/wire.ts; timeouts, retries, validation and redaction stay in
 * client.ts, and every answer comes back as the same `ServiceResponse` the client
 * gives — a refusal is a value, not an exception.
 */
import { z } from "zod";
import {
  ActionDetail,
  ActionList,
  Company,
  Execution,
  Payment,
  PrepareResponse,
  Quote,
  type ExecutionRequest,
  type QuoteRequest,
} from "../../domain/wire.js";
import type { Exchange, ServiceClient, ServiceResponse } from "./client.js";

/** What `POST /agent-services/search` answers: items with at least a serviceId, other fields kept. */
export const AgentServiceSearchResult = z.looseObject({ items: z.array(z.looseObject({ serviceId: z.string() })) });
export type AgentServiceSearchResult = z.infer<typeof AgentServiceSearchResult>;

/** Options of a state-changing request. */
export interface IntentRequestOptions {
  /** One key per business intent (an intent's attempt), the same on every retry. */
  idempotencyKey: string;
  /** Sees every attempt of this request (for the call's transcript). */
  trace?: (e: Exchange) => void;
  /** The caller gave up: stop at once (PaidActionError "cancelled"), no retry. */
  signal?: AbortSignal;
}

export interface CreateExecutionOptions extends IntentRequestOptions {
  quoteId: string;
  /** Sent only when present: without it the service answers 402 with a fresh challenge. */
  paymentProof?: string | null;
}

/** What a payment proof names as the resource it pays for (x402 `resource.url`): the executions endpoint. */
export function paidResourceUrl(baseUrl: string): string {
  return `${baseUrl}/executions`;
}

/** A path parameter, encoded the one way every path here encodes it. */
const segment = (value: string): string => encodeURIComponent(value);

export type ServiceApi = ReturnType<typeof serviceApi>;

/** The v1 operations over one client. Cheap to make: it holds nothing but the client. */
export function serviceApi(client: ServiceClient) {
  return {
    /** `POST /quotes`: prices an intent under a budget ceiling. */
    quote(req: QuoteRequest, opts: IntentRequestOptions): Promise<ServiceResponse<Quote>> {
      return client.call("POST", "/quotes", {
        body: { action: req.action, input: req.input, budget: req.budget },
        idempotencyKey: opts.idempotencyKey,
        schema: Quote,
        trace: opts.trace,
        signal: opts.signal,
      });
    },

    /** `POST /payments/prepare`: a fresh x402 challenge for a quote. */
    preparePayment(quoteId: string, opts: IntentRequestOptions): Promise<ServiceResponse<PrepareResponse>> {
      return client.call("POST", "/payments/prepare", {
        body: { quoteId },
        idempotencyKey: opts.idempotencyKey,
        schema: PrepareResponse,
        trace: opts.trace,
        signal: opts.signal,
      });
    },

    /** `POST /payments/confirm`: hands a payment proof for a quote to the service (it may settle it). */
    confirmPayment(
      req: { quoteId: string; paymentProof: string },
      opts: IntentRequestOptions,
    ): Promise<ServiceResponse<Payment>> {
      return client.call("POST", "/payments/confirm", {
        body: { quoteId: req.quoteId, paymentProof: req.paymentProof },
        idempotencyKey: opts.idempotencyKey,
        schema: Payment,
        trace: opts.trace,
        signal: opts.signal,
      });
    },

    /**
     * `POST /executions` with the quote in X-Quote-Id and, when given, the proof in
     * X-Payment-Proof. Without a proof it is the preflight: an honest service answers 402.
     */
    createExecution(req: ExecutionRequest, opts: CreateExecutionOptions): Promise<ServiceResponse<Execution>> {
      return client.call("POST", "/executions", {
        body: { action: req.action, input: req.input },
        headers: { "x-quote-id": opts.quoteId, ...(opts.paymentProof ? { "x-payment-proof": opts.paymentProof } : {}) },
        idempotencyKey: opts.idempotencyKey,
        schema: Execution,
        trace: opts.trace,
        signal: opts.signal,
      });
    },

    /** `GET /executions/{executionId}`: the execution's current record. */
    getExecution(
      executionId: string,
      opts: { trace?: (e: Exchange) => void } = {},
    ): Promise<ServiceResponse<Execution>> {
      return client.call("GET", `/executions/${segment(executionId)}`, { schema: Execution, trace: opts.trace });
    },

    /** `GET /actions`: the catalog's names. */
    listActions(): Promise<ServiceResponse<ActionList>> {
      return client.call("GET", "/actions", { schema: ActionList });
    },

    /** `GET /actions/{actionName}`: one action's schema, pricing and budget hints. */
    getAction(name: string): Promise<ServiceResponse<ActionDetail>> {
      return client.call("GET", `/actions/${segment(name)}`, { schema: ActionDetail });
    },

    /** `GET /companies/{companyId}`: a formed company's record. */
    getCompany(companyId: string): Promise<ServiceResponse<Company>> {
      return client.call("GET", `/companies/${segment(companyId)}`, { schema: Company });
    },

    /** `POST /agent-services/search`: the marketplace, searched for free (no key: it changes nothing). */
    searchAgentServices(query: Record<string, unknown>): Promise<ServiceResponse<AgentServiceSearchResult>> {
      return client.call("POST", "/agent-services/search", { body: query, schema: AgentServiceSearchResult });
    },
  };
}
