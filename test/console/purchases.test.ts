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
import { openEvents, type SseStream } from "../helpers/console-http.js";
import { loginAsPerson, type ConsolePerson } from "../helpers/console-person.js";
import { engineFixture, type EngineFixture } from "../helpers/engine.js";
import { countReads } from "../helpers/journal-reads.js";
import { waitFor } from "../helpers/wait.js";
import { APPROVAL, CALL, IDS as ids, OTHER, PAYEE, recordPurchases, SECRETS, SELLER, TX } from "./purchase-records.js";

let f: EngineFixture;
let handle: ConsoleHandle;
let person: ConsolePerson;
let stream: SseStream | undefined;
/** The console's reads of the newest purchases: its live updates' look at the journal ends with one. */
let purchaseReads: () => number;
const t0 = Date.now() - 60_000;

beforeAll(async () => {
  f = await engineFixture({
    env: { PAID_ACTIONS_ALLOW_ORIGINS: `${SELLER},${OTHER}` },
    configFile: { limits: { perOrigin: { [SELLER]: "0.5" } } },
  });
  await recordPurchases({ journal: f.pa.journal, transcripts: f.pa.transcripts, service: f.pa.engine.service, t0 });
  const counted = countReads(f.pa.journal, "purchases");
  purchaseReads = counted.reads;
  handle = await startConsole({
    engine: f.pa.engine,
    journal: counted.journal,
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
    const readsBefore = purchaseReads();
    stream = await openEvents(handle.port, person.cookie);
    await stream.next((e) => e.event === "approvals", 5_000);
    // The first look takes what is; a change after it is told.
    await waitFor(() => purchaseReads() > readsBefore, { what: "the stream's first look at the journal" });
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
