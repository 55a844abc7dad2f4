// A stock x402 seller in its own process, for tests (started by sellers.ts): @x402/express's or
// @x402/hono's paymentMiddleware over `new x402ResourceServer(new HTTPFacilitatorClient({url}))`
// with @x402/svm's exact server scheme (@x402/evm's on an eip155 network), and — when asked — the Bazaar and payment-identifier
// extensions. Nothing here is ours but the route handlers and the optional lying proxy.
//
//   node seller.mjs <config.json>      (cwd: a temp dir of its own)
//
// Prints one line on stdout once it listens on 127.0.0.1: {"port": N}. Exits when its stdin
// closes (the test process went away) or on SIGTERM.
//
// Every request to the public face is logged (GET /__seller/requests answers the log, and is not
// logged itself): method, path, whether it carried a payment header, the payment-identifier id
// if any, and the status answered.
//
// With `lie`, a proxy is the public face: it forwards to the stock seller and, when a paid
// request was settled (the answer carries PAYMENT-RESPONSE), answers a lie instead, without the
// receipt: "500-after-settle" a 500, "402-after-settle" a fresh 402 challenge.
import { readFileSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import { x402ResourceServer, HTTPFacilitatorClient } from "@x402/core/server";
import { ExactSvmScheme } from "@x402/svm/exact/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { bazaarResourceServerExtension, declareDiscoveryExtension } from "@x402/extensions/bazaar";
import { declarePaymentIdentifierExtension, extractPaymentIdentifier } from "@x402/extensions/payment-identifier";
import {
  createEIP712OfferReceiptIssuer,
  createJWSOfferReceiptIssuer,
  createOfferReceiptExtension,
  declareOfferReceiptExtension,
} from "@x402/extensions/offer-receipt";
import { generateKeyPairSync, sign } from "node:crypto";
import { privateKeyToAccount } from "viem/accounts";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const BODY_METHODS = new Set(["POST", "PUT", "PATCH"]);
const LOG_PATH = "/__seller/requests";

// ---- What the routes answer ----------------------------------------------------------------

/** The answer of a route: {status, headers, body (Buffer), contentType}. */
function answer(route, requestBody) {
  const r = route.respond ?? {};
  const status = r.status ?? 200;
  const headers = r.headers ?? {};
  if (r.text !== undefined)
    return { status, headers, contentType: r.contentType ?? "text/plain", body: Buffer.from(r.text) };
  if (r.bytes !== undefined) {
    const bytes = Buffer.alloc(r.bytes);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + 7) & 0xff;
    return { status, headers, contentType: r.contentType ?? "application/octet-stream", body: bytes };
  }
  const echo = r.echo ?? (r.json === undefined && BODY_METHODS.has(route.method));
  const json = echo
    ? (requestBody ?? null)
    : (r.json ?? { data: { route: `${route.method} ${route.path}`, answer: 42 } });
  return { status, headers, contentType: "application/json", body: Buffer.from(JSON.stringify(json)) };
}

// ---- x402: the stock resource server and its route table -----------------------------------

function discoveryOf(route) {
  if (BODY_METHODS.has(route.method)) {
    return declareDiscoveryExtension({
      bodyType: "json",
      input: { message: "hello" },
      inputSchema: { properties: { message: { type: "string" } } },
      output: { example: { message: "hello" } },
    });
  }
  return declareDiscoveryExtension({
    input: {},
    inputSchema: { properties: {} },
    output: { example: answer(route).contentType === "application/json" ? { data: "…" } : undefined },
  });
}

function x402Routes() {
  const routes = {};
  for (const route of config.routes) {
    if (route.price === undefined) continue;
    const extensions = {
      ...((route.bazaar ?? config.bazaar) ? discoveryOf(route) : {}),
      ...(config.paymentIdentifier ? { "payment-identifier": declarePaymentIdentifierExtension(false) } : {}),
      ...(config.offerReceipt ? declareOfferReceiptExtension({ includeTxHash: true }) : {}),
    };
    routes[`${route.method} ${route.path}`] = {
      accepts: { scheme: "exact", network: config.network, payTo: config.payTo, price: route.price },
      description: route.description ?? `${route.method} ${route.path} (a stock test seller)`,
      mimeType: "application/json",
      ...(Object.keys(extensions).length > 0 ? { extensions } : {}),
    };
  }
  return routes;
}

function resourceServer() {
  const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: config.facilitatorUrl }));
  server.register(config.network, config.network.startsWith("eip155:") ? new ExactEvmScheme() : new ExactSvmScheme());
  if (config.bazaar || config.routes.some((r) => r.bazaar)) server.registerExtension(bazaarResourceServerExtension);
  if (config.offerReceipt) server.registerExtension(createOfferReceiptExtension(offerReceiptIssuer()));
  return server;
}

/**
 * The seller's signing key for offer-receipt: a fresh P-256 key (ES256), named by a did:jwk
 * so that a buyer resolves it offline; the package's own JWS issuer over it. Or, given
 * `{eip712: key}`, the package's own EIP-712 issuer signing with that EVM key.
 */
function offerReceiptIssuer() {
  if (typeof config.offerReceipt === "object" && config.offerReceipt.eip712) {
    const account = privateKeyToAccount(config.offerReceipt.eip712);
    return createEIP712OfferReceiptIssuer(`did:pkh:eip155:1:${account.address}`, (typed) =>
      account.signTypedData(typed),
    );
  }
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const { kty, crv, x, y } = publicKey.export({ format: "jwk" });
  const kid = `did:jwk:${Buffer.from(JSON.stringify({ kty, crv, x, y })).toString("base64url")}`;
  return createJWSOfferReceiptIssuer(kid, {
    kid,
    format: "jws",
    algorithm: "ES256",
    sign: async (bytes) => sign("sha256", bytes, { key: privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url"),
  });
}

// ---- The request log -------------------------------------------------------------------------

const seen = [];
/** Behind a lying proxy, the proxy is the public face and keeps the log. */
const appLogs = !config.lie;

function header(headers, name) {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function record(method, path, headers) {
  const proof = header(headers, "payment-signature") ?? header(headers, "x-payment");
  let paymentIdentifier;
  if (proof) {
    try {
      paymentIdentifier = extractPaymentIdentifier(JSON.parse(Buffer.from(proof, "base64").toString("utf8")), false);
    } catch {
      paymentIdentifier = undefined;
    }
  }
  const entry = { method, path, paid: proof !== undefined, paymentIdentifier: paymentIdentifier ?? null, status: 0 };
  seen.push(entry);
  return entry;
}

// ---- The two frameworks ----------------------------------------------------------------------

async function expressApp() {
  const { default: express } = await import("express");
  const { paymentMiddleware } = await import("@x402/express");
  const app = express();
  app.use((req, res, next) => {
    if (req.path === LOG_PATH) return res.json(seen);
    if (appLogs) {
      const entry = record(req.method, req.originalUrl, req.headers);
      res.on("finish", () => (entry.status = res.statusCode));
    }
    next();
  });
  app.use(express.json());
  app.use(paymentMiddleware(x402Routes(), resourceServer()));
  for (const route of config.routes) {
    app[route.method.toLowerCase()](route.path, (req, res) => {
      const a = answer(route, req.body);
      res
        .status(a.status)
        .set({ ...a.headers, "Content-Type": a.contentType })
        .send(a.body);
    });
  }
  return (port, host, ready) => {
    const server = app.listen(port, host, () => ready(server));
    return server;
  };
}

async function honoApp() {
  const { Hono } = await import("hono");
  const { serve } = await import("@hono/node-server");
  const { paymentMiddleware } = await import("@x402/hono");
  const app = new Hono();
  app.use(async (c, next) => {
    if (c.req.path === LOG_PATH) return c.json(seen);
    if (!appLogs) return next();
    const url = new URL(c.req.url);
    const entry = record(c.req.method, url.pathname + url.search, Object.fromEntries(c.req.raw.headers));
    await next();
    entry.status = c.res.status;
  });
  app.use(paymentMiddleware(x402Routes(), resourceServer()));
  for (const route of config.routes) {
    app.on(route.method, route.path, async (c) => {
      let body;
      if (BODY_METHODS.has(route.method)) body = await c.req.json().catch(() => undefined);
      const a = answer(route, body);
      return new Response(a.body, { status: a.status, headers: { ...a.headers, "Content-Type": a.contentType } });
    });
  }
  return (port, hostname, ready) => {
    const server = serve({ fetch: app.fetch, port, hostname }, () => ready(server));
    return server;
  };
}

// ---- The lying proxy -------------------------------------------------------------------------

function forward(innerPort, req, body, dropPayment) {
  const headers = { ...req.headers };
  if (dropPayment) {
    delete headers["payment-signature"];
    delete headers["x-payment"];
  }
  return new Promise((resolve, reject) => {
    const out = httpRequest(
      { host: "127.0.0.1", port: innerPort, method: req.method, path: req.url, headers },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      },
    );
    out.on("error", reject);
    out.end(body);
  });
}

function lyingProxy(innerPort) {
  return createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    if (req.url === LOG_PATH) {
      res.setHeader("Content-Type", "application/json");
      return res.end(JSON.stringify(seen));
    }
    const entry = record(req.method, req.url, req.headers);
    let reply = await forward(innerPort, req, body, false);
    if (config.lie === "tamper-offer") {
      if (reply.headers["payment-required"])
        reply.headers["payment-required"] = tamperOffers(reply.headers["payment-required"]);
    } else if (reply.status < 400 && reply.headers["payment-response"]) {
      if (config.lie === "402-after-settle") reply = await forward(innerPort, req, body, true);
      else
        reply = {
          status: 500,
          headers: { "content-type": "application/json" },
          body: Buffer.from('{"error":"internal"}'),
        };
      delete reply.headers["payment-response"];
    }
    delete reply.headers["transfer-encoding"];
    delete reply.headers["content-length"];
    delete reply.headers.connection;
    entry.status = reply.status;
    res.writeHead(reply.status, reply.headers);
    res.end(reply.body);
  });
}

/** A 402's signed offers with their payload's amount lowered and their signatures kept: a tampered offer. */
function tamperOffers(header) {
  const challenge = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
  for (const offer of challenge.extensions?.["offer-receipt"]?.info?.offers ?? []) {
    const [h, p, sig] = offer.signature.split(".");
    const payload = JSON.parse(Buffer.from(p, "base64url").toString("utf8"));
    payload.payTo = "11111111111111111111111111111111";
    offer.signature = `${h}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.${sig}`;
  }
  return Buffer.from(JSON.stringify(challenge)).toString("base64");
}

// ---- Start ----------------------------------------------------------------------------------

const listen = config.framework === "hono" ? await honoApp() : await expressApp();
const inner = await new Promise((ok) => listen(0, "127.0.0.1", ok));
let port = inner.address().port;
if (config.lie) {
  const proxy = lyingProxy(port);
  await new Promise((ok) => proxy.listen(0, "127.0.0.1", ok));
  port = proxy.address().port;
}
process.stdout.write(`${JSON.stringify({ port })}\n`);
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
process.on("SIGTERM", () => process.exit(0));
