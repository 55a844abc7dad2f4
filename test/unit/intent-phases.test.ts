/**
 * An intent's data by phase (src/engine/model/intent.ts, narrow.ts, journal/rows.ts): a step
 * written for a state cannot read what that state has not proven (the compiler refuses it,
 * and the value is not there either), and a journal row is narrowed once by its state — each
 * state's valid row narrows, a row missing any field its state requires is refused, naming
 * the intent and the field. The expectations are written out here, apart from the tables
 * they check.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { fromRow, toRow, wholePatch } from "../../src/engine/journal/rows.js";
import { freshAttempt, PHASES } from "../../src/engine/model/intent.js";
import { CorruptIntent, narrowIntent } from "../../src/engine/model/narrow.js";
import { INTENT_STATES } from "../../src/engine/model/states.js";
import type { IntentIn, IntentKind, IntentRecord, IntentState } from "../../src/engine/model/types.js";
import { EXECUTED, NOW, REQUIREMENTS } from "../helpers/journal-records.js";

const REQUEST = {
  url: "https://api.example.com/data?key=secret",
  origin: "https://api.example.com",
  method: "GET" as const,
  headers: {},
  body: null,
};

/** A record with every field null (or its column's default): an intent that has nothing. */
const NOTHING: IntentRecord = {
  intentId: "i1",
  kind: "action",
  origin: null,
  request: null,
  offer: null,
  response: null,
  intentKey: "key-i1",
  attempt: 0,
  idemKey: "key-i1",
  service: "svc",
  action: "servers_provision",
  input: { region: "eu" },
  fingerprint: "fp",
  agentBudget: null,
  state: "new",
  quoteId: null,
  quote: null,
  amount: null,
  payee: null,
  quoteExpiresAt: null,
  quotedAt: null,
  requirements: null,
  proof: null,
  payment: null,
  paymentTx: null,
  settlement: "none",
  executionId: null,
  execution: null,
  execStatus: null,
  output: null,
  refund: null,
  refundState: "none",
  refundCredit: 0n,
  refundTx: null,
  refundSeenAt: null,
  budgetState: "none",
  budgetAmount: null,
  budgetAt: null,
  approvalId: null,
  error: null,
  attention: null,
  callId: null,
  leaseOwner: null,
  leaseUntil: null,
  nextPollAt: null,
  pollIntervalMs: null,
  createdAt: NOW,
  updatedAt: NOW,
};

/** An action that has everything: priced, reserved, signed and executed. */
const ACTION: IntentRecord = { ...NOTHING, ...EXECUTED };

/** A fetch that has everything: its request, its 402's price, the reservation, the proof, the answer. */
const FETCH: IntentRecord = {
  ...ACTION,
  kind: "fetch",
  action: "paid_fetch",
  quote: null,
  executionId: null,
  execution: null,
  origin: REQUEST.origin,
  request: REQUEST,
  offer: { resource: { url: "https://api.example.com/data" } },
  response: { status: 200, headers: {}, contentType: "application/json", size: 2, paid: true },
};

const PRICED_ACTION = ["quoteId", "quote", "amount", "quoteExpiresAt", "quotedAt"];
const RESERVED_ACTION = [...PRICED_ACTION, "requirements", "payee", "budgetAmount", "budgetAt"];
const FETCH_ITSELF = ["origin", "request"];
const PRICED_FETCH = [
  ...FETCH_ITSELF,
  "quoteId",
  "offer",
  "requirements",
  "amount",
  "payee",
  "quoteExpiresAt",
  "quotedAt",
];
const RESERVED_FETCH = [...PRICED_FETCH, "budgetAmount", "budgetAt"];

/** What each state requires, by kind, written out by hand. */
const REQUIRED: Record<IntentState, Record<IntentKind, string[]>> = {
  new: { action: [], fetch: FETCH_ITSELF },
  quoted: { action: PRICED_ACTION, fetch: PRICED_FETCH },
  awaiting_approval: { action: PRICED_ACTION, fetch: PRICED_FETCH },
  reserved: { action: RESERVED_ACTION, fetch: RESERVED_FETCH },
  signed: { action: [...RESERVED_ACTION, "proof"], fetch: [...RESERVED_FETCH, "proof"] },
  unsettled: { action: [...RESERVED_ACTION, "proof"], fetch: [...RESERVED_FETCH, "proof"] },
  paid: { action: [...RESERVED_ACTION, "proof"], fetch: [...RESERVED_FETCH, "proof"] },
  executed: {
    action: [...RESERVED_ACTION, "proof", "executionId", "execution", "execStatus"],
    fetch: [...RESERVED_FETCH, "proof", "response", "execStatus"],
  },
  // Stops and a human's case may come before any price: only what the kind itself has.
  refused: { action: [], fetch: FETCH_ITSELF },
  failed: { action: [], fetch: FETCH_ITSELF },
  attention: { action: [], fetch: FETCH_ITSELF },
};

const rowOf = (r: IntentRecord) => toRow(r);

/** The intent each step takes (read as types only: no step's module is loaded). */
type StepIntent<F extends (...args: never[]) => unknown> = Parameters<F>[1];
type Decide = typeof import("../../src/engine/intent/steps/decide.js").decide;
type Sign = typeof import("../../src/engine/intent/steps/sign.js").sign;
type Deliver = typeof import("../../src/engine/intent/steps/deliver.js").deliver;

describe("a step reads only what its state has proven (the compiler refuses the rest)", () => {
  it("a new intent has no price: amount and quoteId are not there (nor, after a fresh attempt, the last one's)", () => {
    const fresh = fromRow(toRow(freshAttempt(narrowIntent({ ...ACTION, state: "failed" }))));
    if (fresh.state !== "new" || fresh.kind !== "action") throw new Error("narrowed to another state or kind");
    const inNew: IntentIn<"new", "action"> = fresh;
    // @ts-expect-error a new intent has no price yet
    const amount: unknown = inNew.amount;
    // @ts-expect-error nor a quote id
    const quoteId: unknown = inNew.quoteId;
    expect([amount, quoteId]).toEqual([null, null]);
    expectTypeOf(inNew.attempt).toEqualTypeOf<number>();
    expect(inNew.attempt).toBe(ACTION.attempt + 1);
  });

  it("a reserved intent has no proof; a signed one has, non-null", () => {
    const signed = narrowIntent({ ...ACTION, state: "signed" });
    if (signed.state !== "signed") throw new Error("narrowed to another state");
    const inSigned: IntentIn<"signed"> = signed;
    expectTypeOf(inSigned.proof).toEqualTypeOf<string>();
    expect(inSigned.proof).toBe("PROOF");
    const reserved = narrowIntent({ ...ACTION, state: "reserved", proof: null });
    if (reserved.state !== "reserved") throw new Error("narrowed to another state");
    const inReserved: IntentIn<"reserved"> = reserved;
    // @ts-expect-error nothing is signed in `reserved`
    const proof: unknown = inReserved.proof;
    expect(proof).toBeNull();
    expectTypeOf(inReserved.requirements).toEqualTypeOf(REQUIREMENTS);
    expectTypeOf(inReserved.amount).toEqualTypeOf<bigint>();
  });

  it("an action has no request or origin (its offer, from its reservation, is the resource its challenge named); a fetch has no quote", () => {
    const action = narrowIntent({ ...ACTION, state: "signed" });
    if (action.kind !== "action" || action.state !== "signed") throw new Error("narrowed to another kind or state");
    const inAction: IntentIn<"signed", "action"> = action;
    // @ts-expect-error an action sends no request of its own
    const request: unknown = inAction.request;
    // @ts-expect-error nor has an origin
    const origin: unknown = inAction.origin;
    expect([request, origin]).toEqual([null, null]);
    const fetch = narrowIntent({ ...FETCH, state: "quoted" });
    if (fetch.kind !== "fetch" || fetch.state !== "quoted") throw new Error("narrowed to another kind or state");
    const inFetch: IntentIn<"quoted", "fetch"> = fetch;
    expectTypeOf(inFetch.request.url).toEqualTypeOf<string>();
    // @ts-expect-error a fetch is priced by its 402, not by a quote
    const quote: unknown = inFetch.quote;
    expect(quote).toBeNull();
  });

  it("a state reached from several phases says so: a failed intent may not be priced", () => {
    const failed = narrowIntent({ ...NOTHING, state: "failed" });
    if (failed.state !== "failed") throw new Error("narrowed to another state");
    const inFailed: IntentIn<"failed"> = failed;
    // @ts-expect-error failed before the price, there is none
    const amount: unknown = inFailed.amount;
    expect(amount).toBeNull();
  });
});

describe("a step is written for the states its row names", () => {
  it("and takes no intent of another state or kind", () => {
    expectTypeOf<StepIntent<Decide>>().toEqualTypeOf<IntentIn<"quoted" | "awaiting_approval">>();
    expectTypeOf<IntentIn<"reserved">>().not.toExtend<StepIntent<Decide>>();
    expectTypeOf<IntentIn<"reserved">>().toExtend<StepIntent<Sign>>();
    expectTypeOf<IntentIn<"quoted">>().not.toExtend<StepIntent<Sign>>();
    expectTypeOf<IntentIn<"signed", "fetch">>().toExtend<StepIntent<Deliver>>();
    expectTypeOf<IntentIn<"signed", "action">>().not.toExtend<StepIntent<Deliver>>();
  });
});

describe("fromRow narrows a row by its state", () => {
  it("knows every state", () => {
    expect(Object.keys(REQUIRED).sort()).toEqual([...INTENT_STATES].sort());
    expect(Object.keys(PHASES).sort()).toEqual([...INTENT_STATES].sort());
  });

  describe.each<[IntentKind, IntentRecord]>([
    ["action", ACTION],
    ["fetch", FETCH],
  ])("of kind %s", (kind, full) => {
    it.each(INTENT_STATES)("%s: its row narrows, and a row missing a field it requires is refused", (state) => {
      const row = { ...full, state };
      expect(fromRow(rowOf(row))).toEqual(row);
      for (const field of REQUIRED[state][kind]) {
        const short = { ...row, [field]: null } as IntentRecord;
        let thrown: unknown;
        try {
          fromRow(rowOf(short));
        } catch (e) {
          thrown = e;
        }
        expect(thrown, `${state} without ${field}`).toBeInstanceOf(CorruptIntent);
        expect((thrown as Error).message).toContain("intent i1");
        expect((thrown as Error).message).toContain(`state ${state} without ${field}`);
        expect(thrown).toMatchObject({ intentId: "i1", state, field });
      }
    });
  });

  it("only what a state requires: a stop before the price, or after it, both narrow", () => {
    for (const state of ["refused", "failed", "attention"] as const) {
      expect(fromRow(rowOf({ ...NOTHING, state })).state).toBe(state);
      // Priced in part (a quote id without its amount): refused before a price, it narrows as such.
      expect(fromRow(rowOf({ ...NOTHING, state, quoteId: "q1" })).quoteId).toBe("q1");
    }
    expect(fromRow(rowOf({ ...NOTHING, state: "new" }))).toEqual({ ...NOTHING, state: "new" });
  });

  it("refuses a state or a kind it does not know", () => {
    expect(() => fromRow(rowOf({ ...NOTHING, state: "sent" as IntentState }))).toThrow(
      /intent i1 is in state sent without a known state/,
    );
    expect(() => fromRow(rowOf({ ...NOTHING, kind: "barter" as IntentKind }))).toThrow(/without a known kind/);
  });
});

describe("toRow writes every column", () => {
  it("a field the intent does not have as null, or as its column's default", () => {
    const row = toRow({ intentId: "i1", state: "new", attempt: 1 });
    expect(row).toMatchObject({
      intent_id: "i1",
      state: "new",
      attempt: 1,
      kind: "action",
      settlement: "none",
      refund_state: "none",
      budget_state: "none",
      refund_credit: "0",
      quote_id: null,
      proof: null,
      execution_id: null,
      budget_amount: null,
    });
    expect(Object.keys(row)).toHaveLength(Object.keys(NOTHING).length);
  });

  it("a fresh attempt keeps the head and writes nothing of the last attempt", () => {
    const failed = narrowIntent({ ...FETCH, state: "failed", budgetState: "released", leaseOwner: "owner-a" });
    const patch = wholePatch(freshAttempt(failed));
    expect(patch).toEqual({
      ...NOTHING,
      kind: "fetch",
      action: "paid_fetch",
      origin: REQUEST.origin,
      request: REQUEST,
      attempt: 1,
      idemKey: "key-i1.a1",
      intentId: undefined,
      createdAt: undefined,
      updatedAt: undefined,
      leaseOwner: undefined,
      leaseUntil: undefined,
    });
    // Its identity and its lease are not a commit's to write.
    for (const kept of ["intentId", "createdAt", "updatedAt", "leaseOwner", "leaseUntil"])
      expect(kept in patch).toBe(false);
  });
});
