/**
 * The sandbox's paid resources over HTTP, through the stock server side of x402:
 * `x402ResourceServer` (the exact SVM server scheme, the Bazaar extension) and
 * `x402HTTPResourceServer`, behind a plain Node handler in place of a framework middleware.
 * The input is checked first (400, nothing asked for); then the 402 challenge, or the
 * payment verified, the answer computed, the payment settled through the sandbox's own
 * facilitator and only then the answer sent with `PAYMENT-RESPONSE`. Throttled per client
 * address; bodies read bounded.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  FacilitatorResponseError,
  withPrivateCacheControl,
  x402HTTPResourceServer,
  x402ResourceServer,
  type FacilitatorClient,
  type HTTPAdapter,
  type HTTPRequestContext,
  type HTTPResponseInstructions,
  type RoutesConfig,
} from "@x402/core/server";
import type { Network, PaymentRequired } from "@x402/core/types";
import { ExactSvmScheme } from "@x402/svm/exact/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { EVM_NETWORK, EVM_USDC, EVM_USDC_DOMAIN } from "../evm/ledger.js";
import { ApiError } from "../http/errors.js";
import { errorReply, readJsonBody, send } from "../http/io.js";
import { createRateLimiter, type RateLimit } from "../http/rate-limit.js";
import { bazaarResourceServerExtension, declareDiscoveryExtension } from "./bazaar.js";
import { PAID_RESOURCES, type PaidResource } from "./catalog.js";
import { OFFER_RECEIPT_DECLARATION, offerReceiptExtension, type SellerSigner } from "./offer-receipt.js";

export interface PaidResourcesOptions {
  /** The sandbox's facilitator (in process). */
  facilitator: FacilitatorClient;
  network: string;
  /** The USDC mint. */
  asset: string;
  /** The sandbox's seller wallet. */
  payTo: string;
  /** The seller's address on the EVM ledger, when it is on: each resource then accepts both (Solana first). */
  evmPayTo?: string;
  /** `http://127.0.0.1:<port>`, once the server listens. */
  origin: () => string;
  /** The sandbox's own signing key: each 402 carries signed offers, each paid answer a signed receipt (offer-receipt.ts). */
  signer?: SellerSigner;
  /** Per client address. */
  rateLimit: RateLimit;
  now: () => number;
  log: (line: string) => void;
}

/** The request as `x402HTTPResourceServer` reads it; its URL is the sandbox's own, whatever Host says. */
class NodeAdapter implements HTTPAdapter {
  constructor(
    private readonly req: Pick<IncomingMessage, "headers" | "method">,
    private readonly url: URL,
    private readonly origin: string,
    private readonly body: unknown,
  ) {}
  getHeader(name: string): string | undefined {
    const value = this.req.headers[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  }
  getMethod(): string {
    return this.req.method ?? "GET";
  }
  getPath(): string {
    return this.url.pathname;
  }
  getUrl(): string {
    return `${this.origin}${this.url.pathname}${this.url.search}`;
  }
  getAcceptHeader(): string {
    return this.getHeader("accept") ?? "";
  }
  getUserAgent(): string {
    return this.getHeader("user-agent") ?? "";
  }
  getQueryParams(): Record<string, string | string[]> {
    const params: Record<string, string | string[]> = {};
    for (const key of new Set(this.url.searchParams.keys())) {
      const values = this.url.searchParams.getAll(key);
      params[key] = values.length === 1 ? values[0]! : values;
    }
    return params;
  }
  getQueryParam(name: string): string | string[] | undefined {
    return this.getQueryParams()[name];
  }
  getBody(): unknown {
    return this.body;
  }
}

function routesOf(o: PaidResourcesOptions): RoutesConfig {
  const origin = o.origin();
  return Object.fromEntries(
    PAID_RESOURCES.map((r) => [
      `${r.method} ${r.path}`,
      {
        accepts: [
          {
            scheme: "exact",
            network: o.network as Network,
            payTo: o.payTo,
            price: { amount: r.price.toString(), asset: o.asset },
            maxTimeoutSeconds: 60,
          },
          ...(o.evmPayTo
            ? [
                {
                  scheme: "exact",
                  network: EVM_NETWORK as Network,
                  payTo: o.evmPayTo,
                  price: { amount: r.price.toString(), asset: EVM_USDC, extra: { ...EVM_USDC_DOMAIN } },
                  maxTimeoutSeconds: 60,
                },
              ]
            : []),
        ],
        resource: `${origin}${r.path}`,
        description: r.description,
        mimeType: "application/json",
        extensions: { ...declareDiscoveryExtension(r.discovery), ...(o.signer ? OFFER_RECEIPT_DECLARATION : {}) },
        unpaidResponseBody: () => ({
          contentType: "application/json",
          body: { error: { code: "payment_required", message: `${r.method} ${r.path} is paid: see PAYMENT-REQUIRED` } },
        }),
      },
    ]),
  );
}

async function build(o: PaidResourcesOptions): Promise<x402HTTPResourceServer> {
  const server = new x402ResourceServer(o.facilitator)
    .register(o.network as Network, new ExactSvmScheme())
    .registerExtension(bazaarResourceServerExtension);
  if (o.evmPayTo) server.register(EVM_NETWORK as Network, new ExactEvmScheme());
  if (o.signer) server.registerExtension(offerReceiptExtension(o.signer, o.now));
  const http = new x402HTTPResourceServer(server, routesOf(o));
  await http.initialize();
  return http;
}

/** Writes what x402HTTPResourceServer decided (a 402, a failed settlement). */
function write(res: ServerResponse, r: HTTPResponseInstructions, requestId: string): void {
  const text = r.isHtml ? String(r.body) : JSON.stringify(r.body ?? {});
  res.statusCode = r.status;
  for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
  res.setHeader("X-Request-Id", requestId);
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(text);
}

/** The checked input of a request for `resource`, or the error to answer. */
async function readInput(resource: PaidResource, req: IncomingMessage, url: URL) {
  const { body } = await readJsonBody(req, resource.method);
  return { body, input: resource.parse(url.searchParams, body) };
}

/** Verified, answered, settled: the answer goes out only with its settlement. */
async function serveVerified(
  http: x402HTTPResourceServer,
  verified: Extract<Awaited<ReturnType<x402HTTPResourceServer["processHTTPRequest"]>>, { type: "payment-verified" }>,
  context: HTTPRequestContext,
  answer: string,
  res: ServerResponse,
  requestId: string,
): Promise<void> {
  const settled = await http.processSettlement(
    verified.paymentPayload,
    verified.paymentRequirements,
    verified.declaredExtensions,
    { request: context, responseBody: Buffer.from(answer), responseHeaders: { "content-type": "application/json" } },
    undefined,
    verified.beforeHandlerSettlement,
  );
  if (!settled.success) return write(res, settled.response, requestId);
  res.statusCode = 200;
  for (const [k, v] of Object.entries(settled.headers)) res.setHeader(k, v);
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Cache-Control", withPrivateCacheControl(null));
  res.setHeader("X-Request-Id", requestId);
  res.setHeader("Content-Length", Buffer.byteLength(answer));
  res.end(answer);
}

/**
 * The 402 a buyer gets for `resource` (its PAYMENT-REQUIRED, decoded), asked of the resource
 * server as a request without payment, so that it is the very challenge a buyer echoes.
 */
async function challengeOf(
  http: x402HTTPResourceServer,
  resource: PaidResource,
  origin: string,
): Promise<PaymentRequired> {
  const url = new URL(`${origin}${resource.path}`);
  const request = { headers: { accept: "application/json" }, method: resource.method };
  const result = await http.processHTTPRequest({
    adapter: new NodeAdapter(request, url, origin, undefined),
    path: resource.path,
    method: resource.method,
  });
  const header = result.type === "payment-error" ? result.response.headers["PAYMENT-REQUIRED"] : undefined;
  if (typeof header !== "string") throw new Error(`${resource.method} ${resource.path} asked for no payment`);
  return JSON.parse(Buffer.from(header, "base64").toString("utf8")) as PaymentRequired;
}

/** What `createPaidResources` returns: the handler of every path under /x402, and the 402s its resources give. */
export type PaidResourcesHandler = ((
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  requestId: string,
) => Promise<void>) & {
  /** The challenge of each paid resource, as a buyer without payment gets it. */
  challenges(): Promise<PaymentRequired[]>;
};

/** The handler of every path under /x402. */
export function createPaidResources(o: PaidResourcesOptions): PaidResourcesHandler {
  const takeToken = createRateLimiter(o.rateLimit, o.now);
  let ready: Promise<x402HTTPResourceServer> | undefined;
  const server = () =>
    (ready ??= build(o).catch((e: unknown) => {
      ready = undefined;
      throw e;
    }));
  const challenges = async () => {
    const http = await server();
    return Promise.all(PAID_RESOURCES.map((r) => challengeOf(http, r, o.origin())));
  };
  return Object.assign(handlePaidResource, { challenges });

  async function handlePaidResource(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    requestId: string,
  ): Promise<void> {
    try {
      const wait = takeToken(`x402:${req.socket.remoteAddress ?? "?"}`);
      if (wait > 0) {
        req.resume();
        throw new ApiError(
          429,
          "rate_limited",
          `too many requests; retry after ${wait} s`,
          { retryAfter: wait },
          {
            "Retry-After": String(wait),
          },
        );
      }
      const resource = PAID_RESOURCES.find((r) => r.path === url.pathname && r.method === req.method);
      if (!resource) {
        req.resume();
        const paths = PAID_RESOURCES.map((r) => `${r.method} ${r.path}`).join(", ");
        throw new ApiError(404, "not_found", `no paid resource ${req.method} ${url.pathname}; there are ${paths}`);
      }
      const { body, input } = await readInput(resource, req, url);
      const http = await server();
      const context: HTTPRequestContext = {
        adapter: new NodeAdapter(req, url, o.origin(), body),
        path: url.pathname,
        method: resource.method,
        paymentHeader: firstHeader(req, "payment-signature") ?? firstHeader(req, "x-payment"),
      };
      const result = await http.processHTTPRequest(context);
      if (result.type === "payment-error") return write(res, result.response, requestId);
      const answer = JSON.stringify(resource.run(input));
      if (result.type === "no-payment-required") return send(res, { status: 200, body: JSON.parse(answer) }, requestId);
      return await serveVerified(http, result, context, answer, res, requestId);
    } catch (e) {
      if (e instanceof FacilitatorResponseError) {
        return send(res, { status: 502, body: { error: { code: "unavailable", message: e.message } } }, requestId);
      }
      return send(res, errorReply(e, requestId, o.log), requestId);
    }
  }
}

function firstHeader(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
