/**
 * Running and judging one generated call of the fuzz test (test/hostile/fuzz.test.ts): sends
 * it to the server, then checks how it ended — a clean refusal with a known code, a JSON-RPC
 * InvalidParams only for what is not a valid tools/call, or a payment within the limits for
 * arguments the tool's closed schema accepts — and tallies it for the checks at the end.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema, ErrorCode, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { parseDecimal } from "../../../src/domain/money.js";
import { ERROR_CODES } from "../../../src/engine/errors.js";
import { describeCall, type GenCall, type Outcome } from "./calls.js";
import { KNOWN, PAID } from "./inputs.js";
import { sc } from "./read-back.js";

const CODES = new Set<string>(ERROR_CODES);

/** What the run saw, call by call. */
export interface FuzzTally {
  /** Approval ids the server gave, for later calls to name. */
  approvalPool: string[];
  /** Execution ids of paid results, likewise. */
  executionPool: string[];
  /** executionId -> amount (atomic) of every paid result. */
  paid: Map<string, bigint>;
  /** Intents whose call ended with the outcome still open (they may finish in the background). */
  openIntents: Set<string>;
  codes: Map<string, number>;
  kinds: Map<string, number>;
  latency: Map<string, { n: number; total: number; max: number }>;
  sent: number;
  protocolErrors: number;
  dailyCapHit: number;
}

export interface FuzzRunner {
  tally: FuzzTally;
  /** Sends one call and checks how it ended; throws, naming the call, on anything not clean. */
  runOne(c: GenCall): Promise<void>;
}

export function fuzzRunner(opts: {
  client: Client;
  /** For each paid tool whose input schema is closed, the keys it accepts. */
  closedSchemas: Map<string, Set<string>>;
  maxPerCall: string;
  approvalAbove: string;
  callTimeoutMs: number;
  /** Each clean refusal, as the agent got it (structuredContent.error). */
  onRefusal?: (error: { code: string; message: string; whatToDo: string }) => void;
}): FuzzRunner {
  const { client, closedSchemas } = opts;
  const MAX_PER_CALL = opts.maxPerCall;
  const APPROVAL_ABOVE = opts.approvalAbove;
  const CALL_TIMEOUT_MS = opts.callTimeoutMs;
  const maxPerCall = parseDecimal(MAX_PER_CALL)!;
  const approvalAbove = parseDecimal(APPROVAL_ABOVE)!;
  const tally: FuzzTally = {
    approvalPool: [],
    executionPool: [],
    paid: new Map(),
    openIntents: new Set(),
    codes: new Map(),
    kinds: new Map(),
    latency: new Map(),
    sent: 0,
    protocolErrors: 0,
    dailyCapHit: 0,
  };
  const { approvalPool, executionPool, paid, openIntents, codes, kinds, latency } = tally;

  const check = (o: Outcome): void => {
    const where = () => describeCall(o.call, o.args);
    if (o.error !== undefined) {
      const e = o.error;
      // Only a request that is not a valid tools/call may be refused at the protocol level.
      const protocolOk =
        e instanceof McpError &&
        e.code === ErrorCode.InvalidParams &&
        (!KNOWN.has(o.call.name) || (o.call.raw === true && o.args !== undefined));
      if (!protocolOk)
        throw new Error(
          `call failed at the protocol level: ${e instanceof McpError ? `McpError ${e.code} ` : ""}${(e as Error)?.message ?? String(e)}\n  call: ${where()}`,
        );
      tally.protocolErrors++;
      return;
    }
    const r = o.result!;
    if (!KNOWN.has(o.call.name))
      throw new Error(`an unknown tool answered ${JSON.stringify(r).slice(0, 300)}\n  call: ${where()}`);
    const s = sc(r);
    if (!s || typeof s !== "object")
      throw new Error(`no structuredContent: ${JSON.stringify(r).slice(0, 300)}\n  call: ${where()}`);
    if (
      !Array.isArray(r.content) ||
      r.content.length === 0 ||
      r.content.some((c) => c.type !== "text" || typeof c.text !== "string")
    ) {
      throw new Error(`content is not text: ${JSON.stringify(r.content).slice(0, 300)}\n  call: ${where()}`);
    }
    if (r.isError) {
      const err = s.error;
      if (
        !err ||
        typeof err.code !== "string" ||
        !CODES.has(err.code) ||
        typeof err.message !== "string" ||
        typeof err.whatToDo !== "string"
      ) {
        throw new Error(`a refusal without a clean error: ${JSON.stringify(s).slice(0, 500)}\n  call: ${where()}`);
      }
      // An exception the server did not expect leaks as "unexpected failure": not a clean refusal.
      if (/^unexpected failure/.test(err.message))
        throw new Error(`an unexpected failure leaked: ${err.message.slice(0, 500)}\n  call: ${where()}`);
      codes.set(err.code, (codes.get(err.code) ?? 0) + 1);
      opts.onRefusal?.(err);
      if (err.code === "approval_required" && typeof err.approvalId === "string") approvalPool.push(err.approvalId);
      if (err.code === "budget_exceeded" && err.limit === "maxPerDay") tally.dailyCapHit++;
      if (
        ["outcome_unknown", "service_unavailable", "payment_failed", "busy", "execution_rejected"].includes(err.code) &&
        typeof err.intentId === "string"
      ) {
        openIntents.add(err.intentId);
      }
      return;
    }
    if (PAID.has(o.call.name)) {
      // A payment. Nothing was ever approved, so it must be at or below the approval threshold.
      const amount = parseDecimal(s.payment?.amount);
      if (typeof s.executionId !== "string" || amount === undefined)
        throw new Error(
          `a paid result without executionId/payment.amount: ${JSON.stringify(s).slice(0, 500)}\n  call: ${where()}`,
        );
      if (amount > maxPerCall)
        throw new Error(`PAID ${s.payment.amount} USDC, above maxPerCall ${MAX_PER_CALL}\n  call: ${where()}`);
      if (amount > approvalAbove)
        throw new Error(
          `PAID ${s.payment.amount} USDC without an approval, above approvalAbove ${APPROVAL_ABOVE}\n  call: ${where()}`,
        );
      if (s.quote?.amount !== s.payment.amount)
        throw new Error(`paid ${s.payment.amount} for a quote of ${s.quote?.amount}\n  call: ${where()}`);
      // Paid only for arguments its published input schema accepts: no key outside a closed schema.
      const allowed = closedSchemas.get(o.call.name)!;
      const stray = Object.keys(o.args as object).filter((k) => !allowed.has(k));
      if (stray.length > 0)
        throw new Error(
          `PAID for arguments with keys outside ${o.call.name}'s input schema: ${JSON.stringify(stray)}\n  call: ${where()}`,
        );
      const before = paid.get(s.executionId);
      if (before !== undefined && before !== amount)
        throw new Error(`execution ${s.executionId} reported with two amounts`);
      paid.set(s.executionId, amount);
      executionPool.push(s.executionId);
      codes.set("(paid)", (codes.get("(paid)") ?? 0) + 1);
    } else {
      codes.set(`(ok ${o.call.name})`, (codes.get(`(ok ${o.call.name})`) ?? 0) + 1);
    }
  };

  const runOne = async (c: GenCall): Promise<void> => {
    let args = c.args;
    if (c.poolRef) {
      const pool = c.poolRef.field === "approvalId" ? approvalPool : executionPool;
      if (pool.length > 0) args = { ...(args as object), [c.poolRef.field]: pool[c.poolRef.pick % pool.length] };
      else if (c.poolRef.field === "executionId") args = { ...(args as object), executionId: "exe_nothingyet" };
    }
    tally.sent++;
    kinds.set(c.kind, (kinds.get(c.kind) ?? 0) + 1);
    const outcome: Outcome = { call: c, args };
    const t0 = Date.now();
    try {
      if (c.raw) {
        const params: Record<string, unknown> = { name: c.name };
        if (args !== undefined) params.arguments = args;
        outcome.result = (await client.request({ method: "tools/call", params } as never, CallToolResultSchema, {
          timeout: CALL_TIMEOUT_MS,
        })) as CallToolResult;
      } else {
        outcome.result = (await client.callTool(
          { name: c.name, arguments: args as Record<string, unknown> },
          undefined,
          { timeout: CALL_TIMEOUT_MS },
        )) as CallToolResult;
      }
    } catch (e) {
      outcome.error = e;
    }
    const ms = Date.now() - t0;
    const key = `${c.kind}${PAID.has(c.name) ? "/paid" : ""}`;
    const l = latency.get(key) ?? { n: 0, total: 0, max: 0 };
    latency.set(key, { n: l.n + 1, total: l.total + ms, max: Math.max(l.max, ms) });
    check(outcome);
  };

  return { tally, runOne };
}
