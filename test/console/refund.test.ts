/**
 * The console's read model of money that came back: an execution the provider failed is
 * refunded by a real transfer, the reconciler sees it land and credits it; the console's
 * timeline shows the refund and its credit, and spending by action subtracts it exactly as
 * the caps do. Runs on SQLite and (the "engine on postgres" project) on a PostgreSQL journal.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startConsole, type ConsoleHandle } from "../../src/console/server.js";
import { parseDecimal } from "../../src/domain/money.js";
import { loginAsPerson, type ConsolePerson } from "../helpers/console-person.js";
import { engineFixture, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { on } from "../helpers/proxy.js";
import { waitFor } from "../helpers/wait.js";

let f: EngineFixture;
let handle: ConsoleHandle;
let person: ConsolePerson;
let paid: Awaited<ReturnType<EngineFixture["pa"]["engine"]["pay"]>>;
let failed: typeof paid;

beforeAll(async () => {
  let failNext = false;
  f = await engineFixture({
    rules: [
      {
        match: (r) => failNext && on("POST", "/v1/executions")(r),
        action: { kind: "dynamic", choose: (r) => void (r.headers["x-sandbox-outcome"] = "fail") },
      },
    ],
  });
  const pay = () =>
    f.pa.engine.pay(
      { action: "servers.provision", input: SMALL_SERVER },
      { callId: `call_${Math.random().toString(36).slice(2, 12)}` },
    );
  paid = await pay();
  failNext = true;
  failed = await pay();
  failNext = false;
  await waitFor(
    async () => {
      const [a, b] = [await f.pa.journal.intent(paid.intentId), await f.pa.journal.intent(failed.intentId)];
      if (a?.execStatus === "completed" && a.settlement === "verified" && b?.refundState === "verified") return true;
      await f.pa.reconciler!.runOnce(Number.MAX_SAFE_INTEGER);
      return false;
    },
    { timeoutMs: 20_000, intervalMs: 50, what: "the reconciler to settle both executions" },
  );
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
  await handle?.close();
  await f?.close();
});

describe("console: refunds", () => {
  it("the failed execution's timeline shows the refund, its transaction and what was credited back", async () => {
    const body = (await (await person.get(`/api/executions/${failed.executionId}`)).json()) as any;
    const intent = (await f.pa.journal.intent(failed.intentId))!;
    expect(body.execution).toMatchObject({ status: "refunded", refundCredited: "0.288" });
    const refund = body.timeline.find((e: any) => e.step === "refund");
    expect(refund).toMatchObject({ status: "verified", transaction: intent.refund!.transaction });
    expect(refund.detail).toContain("0.288 USDC credited back");
    expect(Date.parse(refund.at)).toBe(intent.refundSeenAt);
    const statuses = body.timeline.filter((e: any) => e.step === "execution").map((e: any) => e.status);
    expect(statuses).toContain("refunded");
    const settled = body.timeline.find((e: any) => e.step === "settlement");
    expect(settled).toMatchObject({ status: "landed", transaction: intent.paymentTx });
    expect(body.transcripts).toEqual([intent.callId]);

    const ok = (await (await person.get(`/api/executions/${paid.executionId}`)).json()) as any;
    expect(ok.timeline.some((e: any) => e.step === "refund")).toBe(false);
    expect(ok.timeline.filter((e: any) => e.step === "execution").map((e: any) => e.status)).toContain("completed");
  });

  it("spending by action subtracts the refund credited, as the caps do, and adds up to the engine's spending", async () => {
    const body = (await (await person.get("/api/spending")).json()) as any;
    const engine = await f.pa.engine.spending();
    expect(engine.spentTotal).toBe("0.288");
    expect(engine.refundsCredited).toBe("0.288");
    expect(body.byAction).toEqual([
      {
        action: "servers.provision",
        spentLast24h: "0.288",
        spentTotal: "0.288",
        refunded: "0.288",
        perCallCap: "5.00",
        count: 2,
      },
    ]);
    expect(parseDecimal(body.byAction[0].spentLast24h)).toBe(parseDecimal(engine.spentLast24h));
    expect(body.days.at(-1)).toEqual({ day: new Date().toISOString().slice(0, 10), spent: "0.288" });
    expect(body.days.slice(0, -1).every((d: any) => d.spent === "0.00")).toBe(true);
  });
});
