/**
 * The console's read model of x402 purchases (paid_fetch), over real HTTP on 127.0.0.1:
 * purchases recorded in the journal as the engine records them — a delivered GET with its
 * signed proof, paid request, answer and verified settlement; a POST waiting for a person's
 * approval — listed newest first (paged, by origin), each with its timeline; spending by
 * origin; an approval that names the method and the URL. Their requests carry credentials in
 * a header, a query and a body, and the delivered one a proof: none of them appears in any
 * answer of the API, in a page, or in the event stream.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startConsole, type ConsoleHandle } from "../../src/console/server.js";
import type { Intent, IntentPatch, StoredRequest } from "../../src/engine/model/types.js";
import { redactUrl } from "../../src/engine/x402-http/request.js";
import { openEvents, type SseStream } from "../helpers/console-http.js";
import { loginAsPerson, type ConsolePerson } from "../helpers/console-person.js";
import { engineFixture, type EngineFixture } from "../helpers/engine.js";
import { newIntent, payment } from "../helpers/journal-records.js";

const SELLER = "https://api.seller.example";
const OTHER = "https://data.other.example:8443";
const PAYEE = "Se11erPayee1111111111111111111111111111111";
const TX = "5xTransaction1111111111111111111111111111111111111111111111111111111111111111111111111";
/** What must never leave the journal's secret columns. */
const SECRETS = {
  header: "Bearer sk_live_HEADERSECRET_7d1f",
  query: "QUERYSECRET_93ab",
  body: "BODYSECRET_5c2e",
  proof: "PROOFSECRET_e0c4_base64payload",
};

let f: EngineFixture;
let handle: ConsoleHandle;
let person: ConsolePerson;
let stream: SseStream | undefined;
const t0 = Date.now() - 60_000;
const ids = { delivered: "int_delivered01", waiting: "int_waiting0001", older: ["int_older00001", "int_older00002"] };
const CALL = "call_purchase0001";
const APPROVAL = "apr_fetchwait0001";

function request(origin: string, method: StoredRequest["method"], path: string, body: string | null): StoredRequest {
  return {
    url: `${origin}${path}`,
    origin,
    method,
    headers: { authorization: SECRETS.header, "x-trace": "trace-1" },
    body,
  };
}

/** A fetch intent as paid_fetch records it: the request apart, the public view as its input. */
async function recordFetch(id: string, at: number, r: StoredRequest, patch: IntentPatch): Promise<void> {
  const j = f.pa.journal;
  const input = {
    method: r.method,
    url: redactUrl(r.url),
    origin: r.origin,
    headers: Object.keys(r.headers).sort(),
    bodyBytes: r.body === null ? 0 : Buffer.byteLength(r.body),
  };
  await j.insertIntent(
    newIntent(id, {
      service: f.pa.engine.service,
      action: "paid_fetch",
      input,
      createdAt: at,
      fetch: { origin: r.origin, request: r },
    }),
  );
  await j.update(id, { leaseOwner: null, leaseUntil: null, ...patch }, at + 10);
}

const priced = (quoteId: string, amount: bigint, at: number): IntentPatch => ({
  state: "quoted",
  quoteId,
  amount,
  payee: PAYEE,
  quotedAt: at,
  quoteExpiresAt: at + 300_000,
  requirements: {
    scheme: "exact",
    network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
    amount: amount.toString(),
    asset: "Mint111",
    payTo: PAYEE,
    maxTimeoutSeconds: 60,
  } as Intent["requirements"],
});

async function recordDelivered(): Promise<void> {
  const j = f.pa.journal;
  const at = t0;
  await recordFetch(ids.delivered, at, request(SELLER, "GET", `/weather?api_key=${SECRETS.query}&city=paris`, null), {
    ...priced("fq_delivered01", 10_000n, at + 20),
    callId: CALL,
  });
  f.pa.transcripts.append(CALL, "request", { intentId: ids.delivered, paid: false, status: 402, headers: {} });
  await j.update(
    ids.delivered,
    { state: "reserved", budgetState: "reserved", budgetAmount: 10_000n, budgetAt: at + 30 },
    at + 30,
  );
  await j.recordSigned(payment("fq_delivered01", ids.delivered, { amount: 10_000n, payee: PAYEE, signedAt: at + 40 }), {
    intentId: ids.delivered,
    patch: { state: "signed", proof: SECRETS.proof },
    now: at + 40,
    expect: { state: "reserved" },
  });
  const sentAt = Date.now() - 1_000;
  await j.updatePayment("fq_delivered01", { sentAt, claimedTx: TX });
  f.pa.transcripts.append(CALL, "request", {
    intentId: ids.delivered,
    paid: true,
    status: 200,
    headers: { "content-type": "application/json" },
    settlement: { success: true, transaction: TX, network: "solana:devnet" },
  });
  await j.saveResponseBody(ids.delivered, Buffer.from('{"city":"paris","temp":21}'), sentAt + 5);
  await j.update(
    ids.delivered,
    {
      state: "executed",
      execStatus: "completed",
      budgetState: "spent",
      paymentTx: TX,
      settlement: "verified",
      response: {
        status: 200,
        headers: { "content-type": "application/json" },
        contentType: "application/json",
        size: 26,
        paid: true,
      },
    },
    sentAt + 10,
  );
  // The reconciler finds it on chain after the answer.
  await j.updatePayment("fq_delivered01", { fate: "landed", tx: TX, checkedAt: Date.now() + 500 });
}

async function recordWaiting(): Promise<void> {
  const at = t0 + 1_000;
  const body = JSON.stringify({ text: "summarize this", token: SECRETS.body });
  await recordFetch(ids.waiting, at, request(OTHER, "POST", "/summarize", body), {
    ...priced("fq_waiting0001", 2_500_000n, at + 20),
    state: "awaiting_approval",
    approvalId: APPROVAL,
  });
  await f.pa.journal.insertApproval({
    approvalId: APPROVAL,
    intentId: ids.waiting,
    quoteId: "fq_waiting0001",
    action: "paid_fetch",
    amount: 2_500_000n,
    payee: PAYEE,
    expiresAt: Date.now() + 300_000,
    status: "pending",
    createdAt: at + 30,
    decidedAt: null,
  });
}

beforeAll(async () => {
  f = await engineFixture({
    env: { PAID_ACTIONS_ALLOW_ORIGINS: `${SELLER},${OTHER}` },
    configFile: { limits: { perOrigin: { [SELLER]: "0.5" } } },
  });
  for (const [i, id] of ids.older.entries())
    await recordFetch(id, t0 - 10_000 + i, request(SELLER, "GET", `/old?key=${SECRETS.query}`, null), {
      state: "refused",
      error: { code: "payment_unsupported", message: "the resource asks for no payment this server can make" },
    });
  await recordDelivered();
  await recordWaiting();
  handle = await startConsole({
    engine: f.pa.engine,
    journal: f.pa.journal,
    transcripts: f.pa.transcripts,
    home: f.home,
    config: f.pa.config,
    audit: async () => ({}),
  });
  person = await loginAsPerson(handle.loginUrl());
}, 60_000);

afterAll(async () => {
  stream?.close();
  await handle?.close();
  await f?.close();
});

const json = async (path: string, status = 200) => {
  const res = await person.get(path);
  expect(res.status, path).toBe(status);
  return (await res.json()) as any;
};

describe("console: x402 purchases", () => {
  it("lists the purchases newest first, paged by cursor and filtered by origin; no action appears among them", async () => {
    const all = await json("/api/purchases");
    expect(all.items.map((p: any) => p.intentId)).toEqual([ids.waiting, ids.delivered, ids.older[1], ids.older[0]]);
    expect(all.nextCursor).toBeUndefined();
    expect(all.items[1]).toEqual({
      intentId: ids.delivered,
      intentKey: `key-${ids.delivered}`,
      origin: SELLER,
      method: "GET",
      url: `${SELLER}/weather?api_key=…&city=…`,
      state: "executed",
      status: 200,
      contentType: "application/json",
      bodyBytes: 26,
      amount: "0.01",
      currency: "USDC",
      payTo: PAYEE,
      network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
      transaction: TX,
      settlement: "verified",
      callId: CALL,
      createdAt: new Date(t0).toISOString(),
      updatedAt: expect.any(String),
    });
    const first = await json("/api/purchases?limit=3");
    expect(first.items).toHaveLength(3);
    const rest = await json(`/api/purchases?limit=3&cursor=${first.nextCursor}`);
    expect(rest.items.map((p: any) => p.intentId)).toEqual([ids.older[0]]);
    expect(rest.nextCursor).toBeUndefined();
    const other = await json(`/api/purchases?origin=${encodeURIComponent(`${OTHER}/`)}`);
    expect(other.items.map((p: any) => p.intentId)).toEqual([ids.waiting]);
    expect((await json("/api/purchases?origin=ftp%3A%2F%2Fx", 400)).error.code).toBe("invalid_input");
    expect((await json("/api/purchases?cursor=bm9wZQ", 400)).error.code).toBe("invalid_input");
    expect((await json("/api/purchases?limit=0", 400)).error.code).toBe("invalid_input");
  });

  it("one purchase's timeline: the unpaid request and its 402, the price, the reservation, the proof, the paid request, the answer, the settlement verified", async () => {
    const body = await json(`/api/purchases/${ids.delivered}`);
    expect(body.purchase).toMatchObject({ intentId: ids.delivered, state: "executed", status: 200 });
    expect(body.transcripts).toEqual([CALL]);
    const steps = body.timeline.map((e: any) => [e.step, e.status ?? null]);
    expect(steps).toEqual([
      ["request", "402"],
      ["price", null],
      ["reservation", "spent"],
      ["payment", null],
      ["request", null],
      ["answer", "200"],
      ["settlement", "landed"],
    ]);
    const [unpaid, price, , , paid, answer, settled] = body.timeline;
    expect(unpaid.title).toBe(`GET ${SELLER}/weather?api_key=…&city=… sent without payment`);
    expect(price).toMatchObject({ title: "Priced 0.01 USDC by its 402", at: new Date(t0 + 20).toISOString() });
    expect(price.detail).toContain(PAYEE);
    expect(paid.title).toContain("PAYMENT-SIGNATURE");
    expect(answer).toMatchObject({ title: "Answered HTTP 200", transaction: TX });
    expect(answer.detail).toContain("PAYMENT-RESPONSE says it settled the payment");
    expect(settled).toMatchObject({ title: "Settlement verified on chain: exactly as priced", transaction: TX });
    const times = body.timeline.map((e: any) => Date.parse(e.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));

    const refused = await json(`/api/purchases/${ids.older[0]}`);
    expect(refused.timeline.map((e: any) => e.step)).toEqual(["request", "error"]);
    expect((await json("/api/purchases/int_nosuchpurchase", 404)).error.code).toBe("not_found");
  });

  it("an approval for a fetch names the method, the redacted URL and the origin, with the amount and the payee", async () => {
    const { items } = await json("/api/approvals");
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      approvalId: APPROVAL,
      action: "paid_fetch",
      amount: "2.50",
      payee: PAYEE,
      fetch: { method: "POST", url: `${OTHER}/summarize`, origin: OTHER },
      input: { method: "POST", url: `${OTHER}/summarize`, headers: ["authorization", "x-trace"] },
    });
    expect((await json(`/api/approvals/${APPROVAL}`)).approval.fetch).toEqual(items[0].fetch);
  });

  it("spending shows each origin's share beside the actions', against its per-call cap", async () => {
    const body = await json("/api/spending");
    expect(body.byAction).toEqual([]);
    expect(body.byOrigin).toEqual([
      { origin: SELLER, spentLast24h: "0.01", spentTotal: "0.01", perCallCap: "0.50", count: 1 },
    ]);
    expect(body.allowOrigins).toEqual([OTHER, SELLER].sort());
  });

  it("the pages are served for /purchases and /purchases/<id>", async () => {
    for (const path of ["/purchases", `/purchases/${ids.delivered}`]) {
      const res = await person.get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type")).toContain("text/html");
    }
  });

  it("the event stream tells a purchase that changed", async () => {
    stream = await openEvents(handle.port, person.cookie);
    await stream.next((e) => e.event === "approvals", 5_000);
    // The first look takes what is; a change after it is told.
    await new Promise((r) => setTimeout(r, 1_200));
    await f.pa.journal.update(
      ids.waiting,
      { state: "refused", error: { code: "approval_declined", message: "declined" } },
      Date.now(),
    );
    const told = await stream.next((e) => e.event === "purchases", 5_000);
    expect(told.data).toEqual({ changed: [ids.waiting] });
  });

  it("no header value, query value, body or proof of any request appears in any answer, page or event", async () => {
    const paths = [
      "/api/purchases",
      `/api/purchases?origin=${encodeURIComponent(SELLER)}`,
      ...[ids.delivered, ids.waiting, ...ids.older].flatMap((id) => [`/api/purchases/${id}`, `/api/executions/${id}`]),
      "/api/approvals",
      `/api/approvals/${APPROVAL}`,
      "/api/spending",
      "/api/transcripts",
      `/api/transcripts/${CALL}`,
      "/purchases",
      `/purchases/${ids.delivered}`,
      "/assets/pages/purchases.js",
      "/assets/pages/purchase.js",
    ];
    for (const path of paths) {
      const res = await person.get(path);
      expect(res.status, path).toBe(200);
      const text = await res.text();
      for (const [what, secret] of Object.entries(SECRETS)) expect(text, `${what} in ${path}`).not.toContain(secret);
      expect(text).not.toContain("HEADERSECRET");
    }
    const told = JSON.stringify(stream?.events ?? []);
    for (const secret of Object.values(SECRETS)) expect(told).not.toContain(secret);
    // The journal still holds them, where they belong.
    expect((await f.pa.journal.intent(ids.delivered))!.request!.headers.authorization).toBe(SECRETS.header);
  });
});
