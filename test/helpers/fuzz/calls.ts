/**
 * Generated tool calls for the fuzz test (test/hostile/fuzz.test.ts): every kind of call the
 * agent could make — mutated, valid, payable, with a server-given approval id, arbitrary
 * arguments, unknown tools, arguments that are not an object, deep nesting, huge strings —
 * and how a call ended (Outcome), named in a failure message by describeCall.
 */
import fc from "fast-check";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import {
  ACTIONS,
  ALL_TOOLS,
  KNOWN,
  approvalBandInput,
  budgetArb,
  extrasArb,
  mutate,
  mutationArb,
  payableInput,
  validInput,
} from "./inputs.js";
import {
  anyValue,
  deepValue,
  edgeNumber,
  hostileKey,
  hostileString,
  hostileValue,
  hugeString,
  INJECTION,
  leaf,
  ownObject,
  unicodeUnit,
} from "./values.js";

export interface GenCall {
  kind: string;
  name: string;
  args: unknown;
  /** Send with client.request (arguments that are not a JSON object, or absent). */
  raw?: boolean;
  /** Replace this field with an id the server gave out earlier (approvals, executions), if any. */
  poolRef?: { field: "approvalId" | "executionId"; pick: number };
}

const anyKnownName = fc.constantFrom(...ALL_TOOLS);

export const callArb: fc.Arbitrary<GenCall> = fc.oneof(
  // A valid input for a paid tool, mutated: wrong types, missing and extra fields.
  {
    weight: 26,
    arbitrary: fc
      .tuple(validInput, fc.array(mutationArb, { minLength: 1, maxLength: 3 }), extrasArb)
      .map(([v, ms, ex]) => ({ kind: "mutated", name: v.name, args: { ...mutate(v.args, ms), ...ex } })),
  },
  // A valid input, with or without extras (budgets above the limits, bogus keys and approvals).
  {
    weight: 10,
    arbitrary: fc
      .tuple(validInput, extrasArb)
      .map(([v, ex]) => ({ kind: "valid", name: v.name, args: { ...v.args, ...ex } })),
  },
  { weight: 4, arbitrary: payableInput.map((v) => ({ kind: "payable", name: v.name, args: v.args })) },
  { weight: 3, arbitrary: approvalBandInput.map((v) => ({ kind: "approval-band", name: v.name, args: v.args })) },
  // A payable input plus a key that means something to JavaScript objects: it is not in the schema, so it is refused.
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.oneof(payableInput, approvalBandInput),
        fc.constantFrom("__proto__", "constructor", "prototype", "toString", "hasOwnProperty"),
        fc.oneof(fc.constant({}), fc.constant(null), fc.record({ durationHours: fc.constant(1) }), hostileValue),
      )
      .map(([v, key, value]) => ({
        kind: "proto-key",
        name: v.name,
        args: ownObject([...Object.entries(v.args), [key, value]]),
      })),
  },
  // A valid input with an approvalId the server handed out (approval_required) — never approved by a human.
  {
    weight: 2,
    arbitrary: fc.tuple(fc.oneof(payableInput, approvalBandInput), fc.nat()).map(([v, pick]) => ({
      kind: "approval-pool",
      name: v.name,
      args: { ...v.args },
      poolRef: { field: "approvalId" as const, pick },
    })),
  },
  // Any known tool, arbitrary arguments.
  {
    weight: 12,
    arbitrary: fc
      .tuple(anyKnownName, fc.array(fc.tuple(hostileKey, anyValue), { maxLength: 6 }))
      .map(([name, e]) => ({ kind: "random-args", name, args: ownObject(e) })),
  },
  // quote_action: actions and inputs, valid or not.
  {
    weight: 8,
    arbitrary: fc
      .record(
        {
          action: fc.oneof(fc.constantFrom(...ACTIONS), hostileString),
          input: fc.oneof(
            validInput.map((v) => v.args),
            anyValue,
            deepValue,
          ),
          budget: budgetArb,
        },
        { requiredKeys: ["action", "input"] },
      )
      .map((args) => ({ kind: "quote", name: "quote_action", args })),
  },
  // Mirror tools with plausible and hostile arguments.
  {
    weight: 10,
    arbitrary: fc.oneof(
      fc
        .record({ executionId: fc.oneof(fc.stringMatching(/^exe_[A-Za-z0-9]{4,20}$/), hostileString, anyValue) })
        .map((args) => ({ kind: "mirror", name: "get_execution", args })),
      fc
        .record(
          {
            executionId: fc.oneof(fc.stringMatching(/^exe_[A-Za-z0-9]{4,20}$/), hostileString, anyValue),
            timeoutSeconds: fc.oneof(fc.constantFrom(0, 0.5, 1), edgeNumber, anyValue),
          },
          { requiredKeys: ["executionId"] },
        )
        .map((args) => ({ kind: "mirror", name: "wait_for_execution", args })),
      fc.tuple(fc.nat(), fc.constantFrom(0, 0.2, 1)).map(([pick, timeoutSeconds]) => ({
        kind: "mirror-pool",
        name: "wait_for_execution",
        args: { timeoutSeconds },
        poolRef: { field: "executionId" as const, pick },
      })),
      fc.nat().map((pick) => ({
        kind: "mirror-pool",
        name: "get_execution",
        args: {},
        poolRef: { field: "executionId" as const, pick },
      })),
      fc
        .record(
          {
            status: fc.oneof(
              fc.constantFrom("pending", "processing", "completed", "failed", "refunded"),
              hostileString,
            ),
            action: fc.oneof(fc.constantFrom(...ACTIONS), hostileString),
            limit: fc.oneof(fc.integer({ min: 1, max: 100 }), edgeNumber),
            cursor: fc.oneof(
              fc.constant(Buffer.from("123:int_abc").toString("base64url")),
              fc.constant(Buffer.from("99999999999999999:int_x").toString("base64url")),
              hostileString,
            ),
          },
          { requiredKeys: [] },
        )
        .map((args) => ({ kind: "mirror", name: "list_executions", args })),
      fc
        .oneof(fc.constant({}), fc.record({ x: anyValue }), extrasArb)
        .map((args) => ({ kind: "mirror", name: "get_spending", args })),
      fc
        .record(
          {
            taskType: fc.oneof(fc.constantFrom("translation", "summarization", "legal"), hostileString),
            query: hostileString,
            priceBand: fc.oneof(
              fc.record(
                {
                  min: fc.constantFrom("0", "0.1", "-1", "1e308"),
                  max: fc.oneof(fc.constantFrom("1", "1000"), hostileString),
                },
                { requiredKeys: [] },
              ),
              anyValue,
            ),
            guarantees: fc.oneof(
              fc.record(
                {
                  refundOnFailure: fc.boolean(),
                  maxDeliverySeconds: fc.oneof(fc.integer({ min: 1, max: 86400 }), edgeNumber),
                },
                { requiredKeys: [] },
              ),
              anyValue,
            ),
            limit: fc.oneof(fc.integer({ min: 1, max: 50 }), edgeNumber),
          },
          { requiredKeys: [] },
        )
        .map((args) => ({ kind: "mirror", name: "search_agent_services", args })),
      fc
        .record({
          companyId: fc.oneof(
            fc.stringMatching(/^co_[A-Za-z0-9]{4,20}$/),
            fc.constantFrom("..", "co_..%2F..", "co_/../x"),
            hostileString,
            anyValue,
          ),
        })
        .map((args) => ({ kind: "mirror", name: "get_company", args })),
    ),
  },
  // Unknown tool names.
  {
    weight: 6,
    arbitrary: fc
      .tuple(
        fc.oneof(
          fc.constantFrom(
            "servers.provision",
            "SERVERS_PROVISION",
            "servers_provision ",
            " quote_action",
            "pay",
            "transfer_usdc",
            "approve",
            "__proto__",
            "constructor",
            "toString",
            "",
            "x".repeat(10_000),
          ),
          fc.string({ unit: unicodeUnit, maxLength: 30 }),
          fc.constantFrom(...INJECTION),
        ),
        fc.oneof(
          validInput.map((v) => v.args),
          hostileValue.filter((v): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v)),
          fc.constant({}),
        ),
      )
      .filter(([name]) => !KNOWN.has(name))
      .map(([name, args]) => ({ kind: "unknown", name, args })),
  },
  // Arguments that are not an object, or absent: sent as raw tools/call requests.
  {
    weight: 3,
    arbitrary: fc
      .tuple(
        anyKnownName,
        fc.oneof(
          fc.constant(undefined),
          leaf,
          fc.array(anyValue, { maxLength: 3 }),
          deepValue.filter((v) => Array.isArray(v)),
        ),
      )
      .map(([name, args]) => ({ kind: "non-object", name, args, raw: true })),
  },
  // Deep nesting and huge strings inside otherwise plausible calls.
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.constantFrom(...ALL_TOOLS), hostileKey, deepValue)
      .map(([name, key, v]) => ({ kind: "deep", name, args: ownObject([[key, v]]) })),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(
        validInput,
        fc.constantFrom("task", "name", "region", "domain", "budget", "intentKey", "approvalId", "serviceId", "extra"),
        hugeString,
      )
      .map(([v, key, s]) => ({
        kind: "huge",
        name: v.name,
        args: key === "budget" ? { ...v.args, budget: { amount: s, currency: "USDC" } } : { ...v.args, [key]: s },
      })),
  },
);

export interface Outcome {
  call: GenCall;
  args: unknown;
  result?: CallToolResult;
  error?: unknown;
}

export function describeCall(c: GenCall, args: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(args) ?? "undefined";
  } catch (e) {
    text = `(unserializable: ${(e as Error).message})`;
  }
  return `${c.kind} ${JSON.stringify(c.name.slice(0, 80))} ${text.length > 600 ? `${text.slice(0, 600)}… (${text.length} chars)` : text}`;
}
