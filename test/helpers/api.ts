/**
 * Shared pieces for the sandbox's HTTP tests: valid inputs for every action, the shapes of
 * wire values, the error body check of decisions.md, a paid execution in one call, and a
 * webhook receiver.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "vitest";
import type { ApiResponse, Call, TestSandbox } from "./sandbox.js";
import { SERVER_INPUT } from "./sandbox.js";
import { waitFor } from "./wait.js";

export const ACTION_NAMES = [
  "companies.create",
  "servers.provision",
  "servers.renew",
  "domains.register",
  "storage.purchase",
  "agent-services.purchase",
] as const;

export const COMPANY_INPUT = {
  jurisdiction: "US-WY",
  companyType: "llc",
  name: "Acme Agents LLC",
  owners: [{ type: "individual", fullName: "Ada Lovelace", country: "GB" }],
  registeredAgent: false,
};
export const STORAGE_INPUT = { tier: "archive", sizeGb: 10, durationMonths: 2, region: "eu-west-1" };
export const AGENT_PURCHASE_INPUT = {
  serviceId: "svc_summarize01",
  task: "Summarize the v1 spec in five bullets",
  deliveryMode: "json",
};
export { SERVER_INPUT };

/** servers.provision on SERVER_INPUT: the body of POST /executions. */
export const SERVER = { action: "servers.provision", input: SERVER_INPUT };
/** The same intent as a POST /quotes body, with a budget it fits (0.288 USDC). */
export const QUOTE_BODY = { ...SERVER, budget: { amount: "5", currency: "USDC" } };

/** Shapes of the wire's values: an ISO 8601 UTC time, a decimal amount, a base58 key or signature. */
export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
export const DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
export const BASE58 = /^[1-9A-HJ-NP-Za-km-z]{32,88}$/;

/** A domain nobody registered yet (domains are unique across the whole sandbox). */
export function freshDomain(tld = "xyz"): string {
  return `pam-${randomBytes(6).toString("hex")}.${tld}`;
}

export function freshKey(prefix = "k"): string {
  return `${prefix}-${randomBytes(8).toString("hex")}`;
}

/**
 * Asserts decisions.md's error envelope `{error: {code, message, requestId, ...details}}`,
 * the status, and that requestId is the response's X-Request-Id (`req_...`).
 * Returns the error object for further checks of its details.
 */
export function expectError(res: ApiResponse, status: number, code: string): any {
  expect({ status: res.status, code: res.body?.error?.code }, res.text).toEqual({ status, code });
  const error = res.body.error;
  expect(typeof error.message).toBe("string");
  expect(error.message.length).toBeGreaterThan(0);
  expect(res.headers["x-request-id"]).toMatch(/^req_[A-Za-z0-9]+$/);
  expect(error.requestId).toBe(res.headers["x-request-id"]);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  return error;
}

export interface Paid {
  quote: any;
  proof: string;
}

/** Quotes an intent (under `call`'s API key, by default the sandbox's first) and signs a proof for it; nothing is settled yet. */
export async function quoteAndSign(
  t: TestSandbox,
  action: string,
  input: Record<string, unknown>,
  call: Call = t.call,
): Promise<Paid> {
  const res = await call("POST", "/quotes", { body: { action, input, budget: { amount: "1000", currency: "USDC" } } });
  expect(res.status, res.text).toBe(201);
  const quote = res.body;
  const proof = await t.proof(quote.paymentRequirement.accepts[0]);
  return { quote, proof };
}

/** The headers that pay for a quote on POST /executions and the dedicated endpoints. */
export function payHeaders(p: Paid, idempotencyKey = freshKey("exec")): Record<string, string> {
  return { "idempotency-key": idempotencyKey, "x-quote-id": p.quote.quoteId, "x-payment-proof": p.proof };
}

/** Quote, sign, POST /executions; expects 201 and returns the response and what paid it. */
export async function paidExecution(
  t: TestSandbox,
  action: string,
  input: Record<string, unknown>,
  opts: { call?: Call; key?: string; headers?: Record<string, string> } = {},
): Promise<Paid & { res: ApiResponse; key: string }> {
  const call = opts.call ?? t.call;
  const paid = await quoteAndSign(t, action, input, call);
  const key = opts.key ?? freshKey("exec");
  const res = await call("POST", "/executions", {
    body: { action, input },
    headers: { ...payHeaders(paid, key), ...opts.headers },
  });
  expect(res.status, res.text).toBe(201);
  return { ...paid, res, key };
}

export function decodeBase64Json(value: string | undefined): any {
  expect(value, "a base64 JSON header").toBeTypeOf("string");
  return JSON.parse(Buffer.from(value!, "base64").toString("utf8"));
}

// ---- Webhook receiver -----------------------------------------------------------

export interface Delivery {
  at: number;
  method: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  body: any;
  /** The status this receiver answered. */
  answered: number;
}

export interface Receiver {
  url: string;
  deliveries: Delivery[];
  /** Waits until `pred(deliveries)` holds. */
  waitFor(pred: (d: Delivery[]) => boolean, timeoutMs?: number): Promise<Delivery[]>;
  close(): Promise<void>;
}

/** A webhook receiver on 127.0.0.1:0; `answer` picks the status of each delivery (default 204). */
export async function startReceiver(
  answer: (d: Omit<Delivery, "answered">, index: number) => number = () => 204,
): Promise<Receiver> {
  const deliveries: Delivery[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const rawBody = Buffer.concat(chunks).toString("utf8");
      let body: unknown;
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = undefined;
      }
      const d = { at: Date.now(), method: req.method ?? "", headers: req.headers, rawBody, body };
      const status = answer(d, deliveries.length);
      deliveries.push({ ...d, answered: status });
      res.statusCode = status;
      res.end();
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", () => ok()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    deliveries,
    waitFor: (pred, timeoutMs = 10_000) =>
      waitFor(() => pred(deliveries) && deliveries, {
        timeoutMs,
        intervalMs: 20,
        what: () => `webhook deliveries; those that arrived: ${JSON.stringify(deliveries.map((d) => d.body))}`,
      }),
    close: () =>
      new Promise<void>((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      }),
  };
}

/**
 * Verifies `Webhook-Signature: t=<unix>,v1=<hex>` as a receiver would: HMAC-SHA256 with
 * the secret over `${t}.${rawBody}`, compared in constant time.
 */
export function verifyWebhookSignature(secret: string, header: string | undefined, rawBody: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? "");
  if (!m) return false;
  const expected = createHmac("sha256", secret).update(`${m[1]}.${rawBody}`).digest();
  return timingSafeEqual(expected, Buffer.from(m[2]!, "hex"));
}
