/**
 * What every part of the engine is handed: its injected ports (journal, service client, the
 * rails that pay and read the chain, transcripts, clock, ids) and small helpers over them.
 * Built once by the Engine (createCtx); nothing here reads the environment.
 */
import type { EventEmitter } from "node:events";
import type { ExecutionStatus } from "../domain/wire.js";
import type { Config, ConfigIssue } from "./config/config.js";
import type { JournalStore } from "./journal/port.js";
import type { Rails } from "./rails/load.js";
import type { Exchange, ServiceClient } from "./service/client.js";
import type { Transcripts } from "./read/transcripts.js";
import type { IntentRecord, Step } from "./model/types.js";
import type { guardedFetch } from "./x402-http/http.js";

export interface EngineDeps {
  config: Config | { issues: ConfigIssue[] };
  journal: JournalStore;
  client: ServiceClient | undefined;
  /**
   * The rails: one per network paid on, each the only way to sign there and to read that
   * chain (through the user's own RPC). Each loads its key and its RPC on first use, so a
   * bad wallet fails paying calls, not start-up.
   */
  rails: Rails;
  transcripts: Transcripts;
  now: () => number;
  newId: (prefix: string) => string;
  /** This process's identity for intent leases. */
  owner: string;
  log: (line: string) => void;
  /** Test hook: called at each step boundary (the crash test kills the process here). */
  onStep?: (step: Step, intentId: string) => void;
  /** A quote's own challenge is used up to this age; older, a fresh one is asked for (default 15 s). */
  challengeMaxAgeMs?: number;
  /** How long a call waits for a settling payment or another call on the same intent (default 15 s). */
  settleWaitMs?: number;
  /** Pause between looks while waiting (default 1 s). */
  settleWaitStepMs?: number;
  /** The transport x402 resources are fetched through (default: x402-http/http.ts's guarded one). */
  resourceTransport?: typeof guardedFetch;
}

export interface Ctx {
  d: EngineDeps;
  config: Config;
  client: ServiceClient;
  journal: JournalStore;
  now: () => number;
  /** The rails that sign proofs and read the truth about money (rails/port.ts, rails/load.ts). */
  rails: Rails;
  events: EventEmitter;
  /** Tells listeners an execution's record changed (for MCP updates). */
  executionChanged(intent: IntentRecord, previous: ExecutionStatus | null): void;
  transcript(intent: IntentRef, step: string, data?: Record<string, unknown>): void;
  /** Records every HTTP attempt of an intent's requests in its call's transcript (redacted there). */
  trace(intent: IntentRef): (e: Exchange) => void;
  step(step: Step, intent: IntentRef): void;
}

/** What the transcript, the trace and the crash boundaries need of an intent: which one, and its call. */
export type IntentRef = Pick<IntentRecord, "intentId" | "callId">;

/** Lease on an intent while one call drives it; renewed at a third of it. */
export const LEASE_MS = 30_000;
export const POLL_START_MS = 1_000;

export function makeTranscript(d: EngineDeps) {
  return (intent: IntentRef, step: string, data: Record<string, unknown> = {}): void => {
    if (intent.callId) d.transcripts.append(intent.callId, step, { intentId: intent.intentId, ...data });
  };
}

export function makeTrace(d: EngineDeps) {
  return (intent: IntentRef) =>
    (e: Exchange): void => {
      if (!intent.callId) return;
      d.transcripts.append(intent.callId, "http", {
        intentId: intent.intentId,
        attempt: e.attempt,
        request: { method: e.method, path: e.path, headers: e.requestHeaders, body: e.requestBody },
        response:
          e.status === undefined ? null : { status: e.status, headers: e.responseHeaders, body: e.responseBody },
        ...(e.error ? { error: e.error } : {}),
        durationMs: e.durationMs,
      });
    };
}

/** The engine's context over a valid config and a service client. */
export function createCtx(
  d: EngineDeps,
  config: Config,
  client: ServiceClient,
  events: EventEmitter,
  executionChanged: (intent: IntentRecord, previous: ExecutionStatus | null) => void,
): Ctx {
  return {
    d,
    config,
    client,
    journal: d.journal,
    now: d.now,
    rails: d.rails,
    events,
    executionChanged,
    transcript: makeTranscript(d),
    trace: makeTrace(d),
    step: (step, intent) => d.onStep?.(step, intent.intentId),
  };
}
