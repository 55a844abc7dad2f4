/**
 * The reference service under abuse, over real HTTP on 127.0.0.1: oversized bodies (with a
 * Content-Length and chunked), slow clients (a body or headers trickled a byte a second),
 * floods from one API key and from clients without a key. Each abuser gets 413, a timeout
 * or 429 — and, all the while, everyone else is served promptly.
 *
 * Raw sockets (node:net) where the abuse is in the framing, fetch where it is in the volume.
 */
import { describe, expect, it } from "vitest";
import { MAX_BODY_BYTES } from "../../src/sandbox/http/handler.js";
import { MAX_JSON_DEPTH } from "../../src/sandbox/http/io.js";
import { abuseFixture, bystander, expectServedPromptly, head, sleep, type RawResponse } from "../helpers/abuse.js";
import { QUOTE_BODY } from "../helpers/api.js";
import { floodFromChild, type FloodRequest } from "../helpers/flood.js";
import { apiClient, SERVER_INPUT } from "../helpers/sandbox.js";

const KEY_A = "key-flooder-0001";
const KEY_B = "key-bystander-02";

const { sandbox, raw } = abuseFixture();

// ---- 413 ------------------------------------------------------------------------------------

describe("sandbox abuse: oversized bodies get 413", () => {
  it("a Content-Length over 64 KiB is refused at once, before the body is sent", async () => {
    const t = await sandbox();
    for (const declared of [MAX_BODY_BYTES + 1, 10 * 1024 * 1024, 2 ** 40]) {
      const s = raw(t.sb.port);
      await s.connected;
      s.write(
        head("POST", "/v1/quotes", {
          authorization: `Bearer ${t.sb.apiKey}`,
          "content-type": "application/json",
          "content-length": String(declared),
        }),
      );
      s.write('{"action":"servers.provision",'); // and then nothing more
      const res = await s.response;
      expect(res.status, s.received()).toBe(413);
      expect(JSON.parse(res.body).error).toMatchObject({ code: "payload_too_large", limit: MAX_BODY_BYTES });
      // Answered without waiting for the 10 MB (or 1 TB) that will never come.
      expect(res.atMs).toBeLessThan(1_000);
      s.destroy();
    }
    // The same over fetch, with the whole oversized body sent.
    const big = await t.call("POST", "/quotes", {
      rawBody: JSON.stringify({ ...QUOTE_BODY, padding: "x".repeat(2 * 1024 * 1024) }),
      headers: { "content-type": "application/json" },
    });
    expect(big.status, big.text).toBe(413);
    expect(big.body.error.code).toBe("payload_too_large");
    expect((await t.call("POST", "/quotes", { body: QUOTE_BODY })).status).toBe(201);
  });

  it("a chunked body without Content-Length is cut off once it passes 64 KiB, not read to its end", async () => {
    const t = await sandbox();
    for (const path of ["/v1/quotes", "/solana"]) {
      const s = raw(t.sb.port);
      await s.connected;
      s.write(
        head("POST", path, {
          authorization: `Bearer ${t.sb.apiKey}`,
          "content-type": "application/json",
          "transfer-encoding": "chunked",
        }),
      );
      const chunk = `"${"x".repeat(8 * 1024)}",`;
      let sent = 0;
      let answered: RawResponse | undefined;
      void s.response.then((r) => (answered = r));
      s.write(`1\r\n[\r\n`);
      // Up to 4 MiB, 8 KiB at a time; a server that reads it all would answer only at the end.
      for (let i = 0; i < 512 && !answered && !s.socket.destroyed; i++) {
        s.write(`${Buffer.byteLength(chunk).toString(16)}\r\n${chunk}\r\n`);
        sent += Buffer.byteLength(chunk);
        await sleep(2); // the upload's pace: the answer is looked for between writes
      }
      const res = await Promise.race([s.response, sleep(5_000).then(() => undefined)]);
      expect(res, `no answer after ${sent} bytes: ${s.received().slice(0, 300)}`).toBeDefined();
      expect(res!.status).toBe(413);
      if (path === "/solana")
        expect(JSON.parse(res!.body).error).toMatchObject({ code: -32700, message: "Request too large" });
      else expect(JSON.parse(res!.body).error).toMatchObject({ code: "payload_too_large", limit: MAX_BODY_BYTES });
      expect(sent).toBeGreaterThan(MAX_BODY_BYTES);
      expect(sent, "the server read far past the limit before answering").toBeLessThan(1024 * 1024);
      s.destroy();
    }
  });

  it("twenty oversized uploads at once, both kinds: each gets 413 while another client is served promptly", async () => {
    const t = await sandbox();
    // The bystander goes on until it has been answered once more after the uploads ended, and
    // enough times to judge (the uploads can be over in a few of its requests).
    const SAMPLES = 5;
    const bystanding = { answered: 0, atUploadsEnd: Infinity };
    const until = (answered: number) => {
      bystanding.answered = answered;
      return answered > bystanding.atUploadsEnd && answered >= SAMPLES;
    };
    const others = bystander(t, t.sb.apiKey, until, { everyMs: 20 });
    const uploads = Array.from({ length: 20 }, async (_, i) => {
      const s = raw(t.sb.port);
      await s.connected;
      const chunked = i % 2 === 0;
      s.write(
        head("POST", "/v1/quotes", {
          authorization: `Bearer ${t.sb.apiKey}`,
          "content-type": "application/json",
          ...(chunked ? { "transfer-encoding": "chunked" } : { "content-length": String(5 * 1024 * 1024) }),
        }),
      );
      let answered = false;
      void s.response.then(() => (answered = true));
      const piece = "y".repeat(16 * 1024);
      for (let n = 0; n < 64 && !answered && !s.socket.destroyed; n++) {
        s.write(chunked ? `${piece.length.toString(16)}\r\n${piece}\r\n` : piece);
        await sleep(5); // the upload's pace, as above
      }
      const res = await Promise.race([s.response, sleep(5_000).then(() => undefined)]);
      s.destroy();
      return res?.status;
    });
    const statuses = await Promise.all(uploads);
    bystanding.atUploadsEnd = bystanding.answered;
    expect(statuses).toEqual(Array(20).fill(413));
    expectServedPromptly(await others, SAMPLES, 1_000);
    // And afterwards, as before.
    expect((await t.call("POST", "/quotes", { body: QUOTE_BODY })).status).toBe(201);
  });
});

// ---- Slow clients ---------------------------------------------------------------------------

describe("sandbox abuse: slow clients are cut off by a timeout", () => {
  const REQUEST_TIMEOUT_MS = 1_500;

  it("a body trickled one byte a second is cut off after the request timeout, while others are served promptly", async () => {
    const t = await sandbox({ requestTimeoutMs: REQUEST_TIMEOUT_MS });
    const s = raw(t.sb.port, 30_000);
    await s.connected;
    const body = JSON.stringify(QUOTE_BODY); // ~130 bytes: two minutes at a byte a second
    s.write(
      head("POST", "/v1/quotes", {
        authorization: `Bearer ${t.sb.apiKey}`,
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(body)),
      }),
    );
    let i = 0;
    const trickle = setInterval(() => {
      if (i < body.length) s.write(body[i++]!);
    }, 1_000);
    let cut = false;
    void s.closed.then(() => (cut = true));
    try {
      const others = await bystander(t, t.sb.apiKey, () => cut, { everyMs: 100, max: 100 });
      const closed = await s.closed;
      // Cut off: the connection is closed (with a 408), long before the body could have arrived.
      expect(closed.atMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
      expect(closed.atMs).toBeLessThan(REQUEST_TIMEOUT_MS + 2_500);
      expect(i).toBeLessThan(body.length);
      expect(s.received()).toMatch(/^HTTP\/1\.1 408 /);
      expectServedPromptly(others, 5, 1_000);
    } finally {
      clearInterval(trickle);
    }
    // Nothing was quoted for the slow client: its request never reached the handler.
    expect((await t.call("GET", "/actions")).status).toBe(200);
  });

  it("thirty slow clients at once (trickled headers and trickled bodies) are all cut off; others are served throughout", async () => {
    const t = await sandbox({ requestTimeoutMs: REQUEST_TIMEOUT_MS });
    const started = Date.now();
    const slow = await Promise.all(
      Array.from({ length: 30 }, async (_, n) => {
        const s = raw(t.sb.port, 30_000);
        await s.connected;
        const text =
          n % 2 === 0
            ? // Slowloris: headers that never end.
              `POST /v1/quotes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.sb.apiKey}\r\nX-Slow: ${"z".repeat(200)}`
            : head("POST", "/v1/quotes", {
                authorization: `Bearer ${t.sb.apiKey}`,
                "content-type": "application/json",
                "content-length": "200",
              }) + "x".repeat(200);
        let i = n % 2 === 0 ? 20 : text.length - 200;
        s.write(text.slice(0, i));
        const timer = setInterval(() => {
          if (i < text.length) s.write(text[i++]!);
        }, 1_000);
        void s.closed.then(() => clearInterval(timer));
        return s;
      }),
    );
    let allCut = false;
    const closedAll = Promise.all(slow.map((s) => s.closed)).then((c) => ((allCut = true), c));
    const others = await bystander(t, t.sb.apiKey, () => allCut || Date.now() - started > 10_000, {
      everyMs: 100,
      max: 150,
    });
    const closed = await closedAll;
    for (const c of closed) expect(c.atMs).toBeLessThan(REQUEST_TIMEOUT_MS + 3_000);
    for (const s of slow) expect(s.received()).toMatch(/^(HTTP\/1\.1 408 |$)/);
    expectServedPromptly(others, 5, 1_000);
  });
});

// ---- 400 for deep nesting ---------------------------------------------------------------

describe("sandbox abuse: deeply nested JSON is a 400, never a 500", () => {
  const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
  const inInput = (depth: number) =>
    `{"action":"servers.provision","input":{"region":"eu-west-1","plan":"small","durationHours":24,"x":${nested(depth)}},"budget":{"amount":"5","currency":"USDC"}}`;

  it("10,000 and ~32,000 nested arrays, bare or inside input, on /v1/quotes and /v1/executions, with and without Idempotency-Key", async () => {
    const t = await sandbox();
    const quote = await t.quote("servers.provision", SERVER_INPUT);
    const deepest = Math.floor((MAX_BODY_BYTES - 200) / 2); // the deepest a body under the size limit can be
    let n = 0;
    for (const path of ["/quotes", "/executions", "/payments/confirm", "/webhooks"]) {
      for (const body of [nested(10_000), inInput(10_000), nested(deepest), inInput(deepest - 100)]) {
        for (const idempotent of [false, true]) {
          const headers: Record<string, string> = { "content-type": "application/json", "x-quote-id": quote.quoteId };
          if (idempotent) headers["idempotency-key"] = `deep-${++n}`;
          const res = await t.call("POST", path, { rawBody: body, headers });
          expect(res.status, `${path} ${body.length} ${idempotent}: ${res.text.slice(0, 200)}`).toBe(400);
          expect(res.body.error).toMatchObject({ code: "invalid_request", requestId: res.headers["x-request-id"] });
          expect(res.body.error.message).toMatch(new RegExp(`deeper than ${MAX_JSON_DEPTH}`));
        }
      }
    }
    // Nesting up to the limit is read (and judged by the schema as usual); brackets inside strings do not count.
    const shallow = await t.call("POST", "/quotes", {
      rawBody: inInput(MAX_JSON_DEPTH - 3),
      headers: { "content-type": "application/json", "idempotency-key": "deep-ok" },
    });
    expect(shallow.status).toBe(400);
    expect(shallow.body.error.message).not.toMatch(/deeper than/);
    const strings = await t.call("POST", "/quotes", {
      body: { ...QUOTE_BODY, input: { ...SERVER_INPUT, image: "[".repeat(1000) } },
    });
    expect(strings.body.error?.message ?? "").not.toMatch(/deeper than/);
    // The Solana endpoint refuses it as a parse error.
    const rpc = await fetch(t.sb.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: nested(10_000),
    });
    expect(((await rpc.json()) as { error: { code: number } }).error.code).toBe(-32700);
    // And the service goes on serving.
    expect(
      (await t.call("POST", "/quotes", { body: QUOTE_BODY, headers: { "idempotency-key": "after-deep" } })).status,
    ).toBe(201);
  });
});

// ---- 429 ----------------------------------------------------------------------------------

describe("sandbox abuse: floods get 429 without starving anyone else", () => {
  const RATE = { perSecond: 10, burst: 20 };

  it("hundreds of requests at once from one API key: 429 with Retry-After past the burst; a second key keeps getting 200; the first recovers after Retry-After", async () => {
    // The sandbox's clock runs ahead of the wall clock by `skew`: Retry-After passes by moving it on.
    let skew = 0;
    const t = await sandbox({ apiKeys: [KEY_A, KEY_B], rateLimit: RATE, now: () => Date.now() + skew });
    const flooder = apiClient(t.sb.baseUrl, KEY_A);
    let flooding = true;
    const started = Date.now();
    // 500 requests: five waves of 100 at once, 400 ms apart.
    const requests = Array.from({ length: 500 }, (_, i): FloodRequest =>
      i % 4 === 3
        ? { method: "POST", path: "/quotes", key: KEY_A, body: QUOTE_BODY }
        : { method: "GET", path: "/actions", key: KEY_A },
    );
    const flood = floodFromChild(t.sb.baseUrl, requests, 100, 400).then((r) => ((flooding = false), r));
    // The bystander stays inside its own limit (10/s) at one request every 150 ms.
    const others = bystander(t, KEY_B, () => !flooding, { everyMs: 150, max: 60 });
    const results = await flood;
    const elapsedS = (Date.now() - started) / 1000;

    const ok = results.filter((r) => r.status === 200 || r.status === 201);
    const limited = results.filter((r) => r.status === 429);
    expect(
      ok.length + limited.length,
      JSON.stringify(
        results
          .filter((r) => ![200, 201, 429].includes(r.status))
          .map((r) => r.text)
          .slice(0, 3),
      ),
    ).toBe(500);
    // Served: the burst and what the bucket refilled while the flood lasted, no more.
    expect(ok.length).toBeGreaterThanOrEqual(RATE.burst);
    expect(ok.length).toBeLessThanOrEqual(RATE.burst + Math.ceil(RATE.perSecond * elapsedS) + 1);
    expect(limited.length).toBeGreaterThan(400);
    let retryAfter = 0;
    for (const r of limited) {
      expect(r.body.error.code).toBe("rate_limited");
      expect(r.headers["retry-after"]).toMatch(/^[1-9]\d*$/);
      retryAfter = Math.max(retryAfter, Number(r.headers["retry-after"]));
    }
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil(1 / RATE.perSecond));

    expectServedPromptly(await others, 5, 1_000);

    // After Retry-After, the flooded key is served again.
    skew += retryAfter * 1000;
    const again = await flooder("GET", "/actions");
    expect(again.status, again.text).toBe(200);
  });

  it("an unauthenticated flood (no key, and guessed keys) is throttled with 429 and does not starve authenticated keys", async () => {
    const t = await sandbox({ apiKeys: [KEY_A, KEY_B], rateLimit: RATE });
    let flooding = true;
    const started = Date.now();
    const requests = Array.from({ length: 500 }, (_, i): FloodRequest =>
      i % 2 === 0
        ? { method: "GET", path: "/actions", key: null }
        : { method: "POST", path: "/quotes", key: `guess-${String(i).padStart(10, "0")}`, body: QUOTE_BODY },
    );
    const flood = floodFromChild(t.sb.baseUrl, requests, 100, 400).then((r) => ((flooding = false), r));
    const a = bystander(t, KEY_A, () => !flooding, { everyMs: 150, max: 60 });
    const b = bystander(t, KEY_B, () => !flooding, { everyMs: 150, max: 60 });
    const results = await flood;
    const elapsedS = (Date.now() - started) / 1000;

    const unauthorized = results.filter((r) => r.status === 401);
    const limited = results.filter((r) => r.status === 429);
    expect(unauthorized.length + limited.length).toBe(500);
    // Never served: at most the anonymous bucket's burst (and refill) even got a 401.
    expect(unauthorized.length).toBeLessThanOrEqual(RATE.burst + Math.ceil(RATE.perSecond * elapsedS) + 1);
    expect(limited.length).toBeGreaterThan(400);
    for (const r of unauthorized) expect(r.body.error.code).toBe("unauthorized");
    for (const r of limited) {
      expect(r.body.error.code).toBe("rate_limited");
      expect(r.headers["retry-after"]).toMatch(/^[1-9]\d*$/);
    }
    expectServedPromptly(await a, 5, 1_000);
    expectServedPromptly(await b, 5, 1_000);
  });
});
