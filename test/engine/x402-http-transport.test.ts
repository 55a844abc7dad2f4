/**
 * The guarded transport of paid_fetch (src/engine/x402-http/http.ts) against real servers
 * on 127.0.0.1 and 127.0.0.2, started here: a listed origin is reached, and pinned to the
 * address checked; an origin only `*` allows is refused at loopback however it is spelled,
 * before any connection (the servers count theirs); names resolve through a seam that
 * answers private addresses without anything being sent; redirects stay within the origin;
 * time and size are bounded; TLS verifies the host name. No traffic leaves loopback.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ResolvedAddress } from "../../src/domain/addresses.js";
import { isCode, PaidActionError } from "../../src/engine/errors.js";
import { guardedFetch, type GuardedFetchOptions } from "../../src/engine/x402-http/http.js";
import { readFetchInput, type FetchInput, type OutboundRequest } from "../../src/engine/x402-http/request.js";
import { waitFor } from "../helpers/wait.js";

/**
 * A throwaway self-signed certificate for `shop.localhost` (and nothing else), made for this
 * test with openssl; its key guards nothing.
 */
const SHOP_CERT = `-----BEGIN CERTIFICATE-----
MIIBpTCCAUqgAwIBAgIUbxq5v7bDmoSdnX2b6htxP7Uhy6QwCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOc2hvcC5sb2NhbGhvc3QwIBcNMjYxMTI2MTI0OTU2WhgPMjEy
NjExMDIxMjQ5NTZaMBkxFzAVBgNVBAMMDnNob3AubG9jYWxob3N0MFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAEUx92ayHY+I4lYpCpPAGUDg2+UDwxJ60zFtg0RfgH
1RyyODeeR8qUo25u5m+RjQ9yV28MgTH5UESHe2iUR861waNuMGwwHQYDVR0OBBYE
FOrV4dEy2A6HPEudYD4BRWgsdJLnMB8GA1UdIwQYMBaAFOrV4dEy2A6HPEudYD4B
RWgsdJLnMA8GA1UdEwEB/wQFMAMBAf8wGQYDVR0RBBIwEIIOc2hvcC5sb2NhbGhv
c3QwCgYIKoZIzj0EAwIDSQAwRgIhANcAWwJFazNfK6GkZjqPco2wbyAxPIRPTCn3
uSI4sVSCAiEAvpEjCuJQzEV9SUxt0ofqEBmGRlujqxhcRKMJAImW5Lc=
-----END CERTIFICATE-----
`;
const SHOP_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg5QqZuIF1N7AhOYHL
Y6Ru+tMjT5mWoziQSIPwkjd5oA6hRANCAARTH3ZrIdj4jiVikKk8AZQODb5QPDEn
rTMW2DRF+AfVHLI4N55HypSjbm7mb5GND3JXbwyBMflQRId7aJRHzrXB
-----END PRIVATE KEY-----
`;

const SECRET = "c2VjcmV0LXBheW1lbnQtcHJvb2Y";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

interface TestServer {
  port: number;
  /** Connections accepted so far (TCP, before any TLS). */
  connections: number;
  seen: Seen[];
  close(): Promise<void>;
}

/** The routes every test server answers. */
function route(req: IncomingMessage, res: ServerResponse, seen: Seen) {
  const path = req.url ?? "/";
  const redirect = (status: number, location: string, extra: Record<string, string> = {}) =>
    res.writeHead(status, { location, ...extra }).end();
  if (path === "/echo") return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(seen));
  if (path === "/same") return redirect(302, "/echo");
  if (path === "/absolute-same") return redirect(301, `http://${req.headers.host}/echo`);
  if (path === "/see-other") return redirect(303, "/echo");
  if (path === "/temporary") return redirect(307, "/echo");
  if (path === "/cross") return redirect(302, "https://elsewhere.example/landing?token=abc");
  if (path === "/loop") return redirect(302, "/loop");
  if (path === "/settled-redirect") return redirect(302, "/echo", { "payment-response": "e30=" });
  if (path === "/big") return res.writeHead(200, { "content-length": String(4096) }).end("x".repeat(4096));
  if (path === "/big-chunked") {
    res.writeHead(200, { "content-type": "text/plain" });
    for (let i = 0; i < 8; i++) res.write("y".repeat(1024));
    return res.end();
  }
  if (path === "/slow-body") return res.writeHead(200, { "content-type": "text/plain" }).write("partial");
  if (path === "/no-answer") return undefined;
  return res.writeHead(404).end();
}

async function startServer(host: string, tls = false): Promise<TestServer> {
  const state = { connections: 0, seen: [] as Seen[] };
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const seen = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: "" };
      seen.body = Buffer.concat(chunks).toString("utf8");
      state.seen.push(seen);
      route(req, res, seen);
    });
  };
  const server: Server = tls ? createTlsServer({ cert: SHOP_CERT, key: SHOP_KEY }, handler) : createServer(handler);
  server.on("connection", () => state.connections++);
  server.listen(0, host);
  await once(server, "listening");
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return state.connections;
    },
    seen: state.seen,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}

const request = (input: FetchInput): OutboundRequest => {
  const r = readFetchInput(input);
  if (!r.ok) throw new Error(`refused ${r.field}: ${r.message}`);
  return r.request;
};

/** A resolver that knows a few names and never asks DNS; every question it gets is kept. */
function resolverOf(names: Record<string, string[]>) {
  const asked: string[] = [];
  const resolve = async (host: string): Promise<ResolvedAddress[]> => {
    asked.push(host);
    const addresses = names[host];
    if (!addresses) throw Object.assign(new Error(`no such host ${host}`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return { resolve, asked };
}

/** The PaidActionError a call throws; fails when it resolves. */
async function refusal(p: Promise<unknown>): Promise<PaidActionError> {
  const e: unknown = await p.then(
    () => new Error("expected a refusal"),
    (err: unknown) => err,
  );
  if (!(e instanceof PaidActionError)) throw e;
  return e;
}

const text = (body: Uint8Array) => new TextDecoder().decode(body);

let a: TestServer; // http on 127.0.0.1
let b: TestServer; // http on 127.0.0.2
let shop: TestServer; // https on 127.0.0.1, a certificate for shop.localhost
beforeAll(async () => {
  [a, b, shop] = await Promise.all([
    startServer("127.0.0.1"),
    startServer("127.0.0.2"),
    startServer("127.0.0.1", true),
  ]);
});
afterAll(() => Promise.all([a.close(), b.close(), shop.close()]));

const exact: GuardedFetchOptions = { standing: "exact", resolve: resolverOf({}).resolve };

describe("a listed origin (standing exact)", () => {
  it("is reached at loopback, with the agent's method, headers and body, and the extra headers", async () => {
    const req = request({
      url: `http://127.0.0.1:${a.port}/echo`,
      method: "POST",
      headers: { "X-Agent": "1" },
      body: { q: "weather" },
    });
    const res = await guardedFetch(req, { ...exact, extraHeaders: { "payment-signature": SECRET } });
    expect(res.status).toBe(200);
    expect(res.url).toBe(`http://127.0.0.1:${a.port}/echo`);
    expect(res.headers["content-type"]).toBe("application/json");
    const seen = JSON.parse(text(res.body)) as Seen;
    expect(seen).toMatchObject({ method: "POST", body: '{"q":"weather"}' });
    expect(seen.headers).toMatchObject({
      "x-agent": "1",
      "content-type": "application/json",
      "payment-signature": SECRET,
      "accept-encoding": "identity",
      host: `127.0.0.1:${a.port}`,
    });
  });

  it("connects to the address its name resolved to, once, and sends the name as Host", async () => {
    const { resolve, asked } = resolverOf({ "shop.localhost": ["127.0.0.2"] });
    const before = b.connections;
    const res = await guardedFetch(request({ url: `http://shop.localhost:${b.port}/echo` }), {
      standing: "exact",
      resolve,
    });
    expect(res.status).toBe(200);
    expect(asked).toEqual(["shop.localhost"]);
    expect(b.connections).toBe(before + 1);
    expect(b.seen.at(-1)?.headers.host).toBe(`shop.localhost:${b.port}`);
  });

  it("keeps plain http and localhost names on loopback: a name resolving elsewhere is refused unsent", async () => {
    const { resolve } = resolverOf({ "shop.localhost": ["10.0.0.1"] });
    const e = await refusal(
      guardedFetch(request({ url: `http://shop.localhost:${a.port}/echo` }), { standing: "exact", resolve }),
    );
    expect(e.code).toBe("origin_not_allowed");
    expect(e.message).toMatch(/10\.0\.0\.1, not this machine's loopback; nothing was sent/);
  });

  it("answers a name that does not resolve with fetch_failed, nothing sent", async () => {
    const e = await refusal(guardedFetch(request({ url: `http://nowhere.localhost:${a.port}/` }), exact));
    expect(e.code).toBe("fetch_failed");
    expect(e.context).toMatchObject({ reason: "network", sent: false });
    expect(e.message).toMatch(/does not resolve \(ENOTFOUND\)/);
  });

  it("answers a refused connection with fetch_failed, sent false", async () => {
    const gone = await startServer("127.0.0.1");
    await gone.close();
    const e = await refusal(guardedFetch(request({ url: `http://127.0.0.1:${gone.port}/` }), exact));
    expect(e.code).toBe("fetch_failed");
    expect(e.context).toEqual({ origin: `http://127.0.0.1:${gone.port}`, reason: "network", sent: false });
    expect(e.message).toMatch(/ECONNREFUSED/);
  });
});

describe("an origin only `*` allows (standing public)", () => {
  const { resolve } = resolverOf({
    localhost: ["127.0.0.1", "::1"],
    "api.example.test": ["10.0.0.1"],
    "mixed.example.test": ["93.184.216.34", "127.0.0.1"],
    "metadata.example.test": ["169.254.169.254"],
    "mapped.example.test": ["::ffff:127.0.0.1"],
  });
  const publicOnly: GuardedFetchOptions = { standing: "public", resolve };

  it.each([
    ["https://127.0.0.1:A/", /127\.0\.0\.1, a loopback address/],
    ["https://127.0.0.2:B/", /127\.0\.0\.2, a loopback address/],
    ["https://localhost:A/", /localhost resolves to 127\.0\.0\.1, a loopback address/],
    ["https://0x7f.1:A/", /127\.0\.0\.1, a loopback address/],
    ["https://2130706433:A/", /127\.0\.0\.1, a loopback address/],
    ["https://0177.0.0.1:A/", /127\.0\.0\.1, a loopback address/],
    ["https://[::ffff:127.0.0.1]:A/", /::ffff:7f00:1, a loopback \(IPv4 127\.0\.0\.1 mapped into IPv6\) address/],
    ["https://[::ffff:7f00:2]:B/", /loopback \(IPv4 127\.0\.0\.2 mapped into IPv6\)/],
    ["https://[::1]:A/", /::1, a loopback address/],
    ["https://mapped.example.test:A/", /loopback/],
    ["https://mixed.example.test:A/", /127\.0\.0\.1, a loopback address/],
  ])("refuses %s before any connection", async (spelled, reason) => {
    const url = spelled.replace(":A/", `:${a.port}/`).replace(":B/", `:${b.port}/`);
    const before = [a.connections, b.connections];
    const e = await refusal(guardedFetch(request({ url, headers: { authorization: SECRET } }), publicOnly));
    expect(e.code).toBe("origin_not_allowed");
    expect(e.message).toMatch(reason);
    expect(e.message).toMatch(/listing the exact origin .* in allowOrigins allows it/);
    expect(e.context).toMatchObject({ origin: new URL(url).origin });
    expect([a.connections, b.connections]).toEqual(before);
  });

  it.each([
    ["api.example.test", /10\.0\.0\.1, a private address/],
    ["metadata.example.test", /169\.254\.169\.254, a cloud metadata endpoint/],
  ])("refuses %s, which resolves to a private address, without connecting", async (host, reason) => {
    const e = await refusal(guardedFetch(request({ url: `https://${host}/data` }), publicOnly));
    if (!isCode(e, "origin_not_allowed")) throw e;
    expect(e.message).toMatch(reason);
    expect(e.context.reason).toMatch(reason);
  });
});

describe("redirects", () => {
  it("follows a same-origin redirect, relative or absolute", async () => {
    for (const path of ["/same", "/absolute-same"]) {
      const res = await guardedFetch(request({ url: `http://127.0.0.1:${a.port}${path}` }), exact);
      expect(res.status).toBe(200);
      expect(res.url).toBe(`http://127.0.0.1:${a.port}/echo`);
      expect(res.redirectRefused).toBeUndefined();
    }
  });

  it("returns a cross-origin redirect as it is, not followed", async () => {
    const res = await guardedFetch(request({ url: `http://127.0.0.1:${a.port}/cross` }), exact);
    expect(res.status).toBe(302);
    expect(res.redirectRefused).toBe("https://elsewhere.example/landing?token=abc");
    expect(res.url).toBe(`http://127.0.0.1:${a.port}/cross`);
  });

  it("turns a POST into a GET on 303 and keeps it on 307", async () => {
    const post = (path: string) =>
      guardedFetch(
        request({
          url: `http://127.0.0.1:${a.port}${path}`,
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "b=1",
        }),
        exact,
      );
    const seeOther = JSON.parse(text((await post("/see-other")).body)) as Seen;
    expect(seeOther).toMatchObject({ method: "GET", body: "" });
    expect(seeOther.headers["content-type"]).toBeUndefined();
    const temporary = JSON.parse(text((await post("/temporary")).body)) as Seen;
    expect(temporary).toMatchObject({ method: "POST", body: "b=1" });
    expect(temporary.headers["content-type"]).toBe("application/x-www-form-urlencoded");
  });

  it("returns a redirect that reports a settlement, so that its PAYMENT-RESPONSE is not lost", async () => {
    const res = await guardedFetch(request({ url: `http://127.0.0.1:${a.port}/settled-redirect` }), exact);
    expect(res.status).toBe(302);
    expect(res.headers["payment-response"]).toBe("e30=");
  });

  it("stops after maxRedirects with fetch_failed (reason redirects)", async () => {
    const e = await refusal(
      guardedFetch(request({ url: `http://127.0.0.1:${a.port}/loop` }), { ...exact, maxRedirects: 3 }),
    );
    expect(e.code).toBe("fetch_failed");
    expect(e.context).toMatchObject({ reason: "redirects", sent: true, status: 302 });
  });
});

describe("time and size bounds", () => {
  it("cuts a body that trickles past timeoutMs, never quoting a header value", async () => {
    const started = Date.now();
    const e = await refusal(
      guardedFetch(request({ url: `http://127.0.0.1:${a.port}/slow-body` }), {
        ...exact,
        timeoutMs: 300,
        extraHeaders: { "payment-signature": SECRET },
      }),
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(e.code).toBe("fetch_failed");
    expect(e.context).toMatchObject({ reason: "timeout", sent: true });
    expect(JSON.stringify(e.toJSON())).not.toContain(SECRET);
  });

  it("cuts a server that never answers at timeoutMs", async () => {
    const e = await refusal(
      guardedFetch(request({ url: `http://127.0.0.1:${a.port}/no-answer` }), { ...exact, timeoutMs: 300 }),
    );
    expect(e.context).toMatchObject({ reason: "timeout", sent: true });
  });

  it("refuses a body past maxBytes, declared or streamed", async () => {
    for (const path of ["/big", "/big-chunked"]) {
      const e = await refusal(
        guardedFetch(request({ url: `http://127.0.0.1:${a.port}${path}` }), { ...exact, maxBytes: 2048 }),
      );
      expect(e.code).toBe("fetch_failed");
      expect(e.context).toMatchObject({ reason: "too_large", sent: true, status: 200 });
    }
    const res = await guardedFetch(request({ url: `http://127.0.0.1:${a.port}/big` }), { ...exact, maxBytes: 4096 });
    expect(res.body).toHaveLength(4096);
  });

  it("stops when the caller cancels (reason cancelled)", async () => {
    const controller = new AbortController();
    const arrived = a.seen.length;
    const fetching = refusal(
      guardedFetch(request({ url: `http://127.0.0.1:${a.port}/no-answer` }), { ...exact, signal: controller.signal }),
    );
    // Cancelled once the request has reached the server (so it was sent), not after a while.
    await waitFor(() => a.seen.length > arrived, { what: "the request at the server" });
    controller.abort();
    const e = await fetching;
    expect(e.context).toMatchObject({ reason: "cancelled", sent: true });
  });
});

describe("TLS to the pinned address", () => {
  const { resolve } = resolverOf({ "shop.localhost": ["127.0.0.1"] });

  it("verifies the certificate against the host name while connecting to the address checked", async () => {
    const res = await guardedFetch(request({ url: `https://shop.localhost:${shop.port}/echo` }), {
      standing: "exact",
      resolve,
      ca: SHOP_CERT,
    });
    expect(res.status).toBe(200);
    expect(shop.seen.at(-1)?.headers.host).toBe(`shop.localhost:${shop.port}`);
  });

  it("refuses the same server by its address, which the certificate does not name: nothing sent", async () => {
    const e = await refusal(
      guardedFetch(request({ url: `https://127.0.0.1:${shop.port}/echo` }), { ...exact, ca: SHOP_CERT }),
    );
    expect(e.code).toBe("fetch_failed");
    expect(e.context).toMatchObject({ reason: "network", sent: false });
    expect(e.message).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID/);
  });

  it("refuses a certificate no trusted authority signed", async () => {
    const e = await refusal(
      guardedFetch(request({ url: `https://shop.localhost:${shop.port}/echo` }), { standing: "exact", resolve }),
    );
    expect(e.code).toBe("fetch_failed");
    expect(e.context).toMatchObject({ reason: "network", sent: false });
  });
});
