/**
 * A pay request as the engine accepts it: a catalog action name, an object input (canonical
 * JSON, at most 60 KiB), an optional USDC budget and intent key. Refused with invalid_input,
 * naming the field; nothing is recorded for a request that fails here.
 */
import { createHash } from "node:crypto";
import { parseDecimal } from "../../domain/money.js";
import { ACTION_NAME, canonicalJson } from "../../domain/wire.js";
import { paidError } from "../errors.js";
import type { PayRequest } from "../model/types.js";

/** What identifies an intent's content: a retry with the same key must carry the same. */
export function fingerprint(action: string, input: string): string {
  return createHash("sha256").update(`${action}\n${input}`).digest("hex");
}

export function validateRequest(req: PayRequest): { input: string; agentBudget?: bigint } {
  if (typeof req.action !== "string" || !ACTION_NAME.test(req.action)) {
    throw paidError("invalid_input", { field: "action", problem: "action_name" });
  }
  if (!req.input || typeof req.input !== "object" || Array.isArray(req.input))
    throw paidError("invalid_input", { field: "input", problem: "input_object" });
  let input: string;
  try {
    input = canonicalJson(req.input);
  } catch {
    throw paidError("invalid_input", { field: "input", problem: "input_json" });
  }
  if (Buffer.byteLength(input) > 60 * 1024) throw paidError("invalid_input", { field: "input", problem: "input_size" });
  const agentBudget = agentBudgetOf(req.budget);
  checkIntentKey(req.intentKey);
  return { input, agentBudget };
}

/** The agent's budget for one call, in atomic units: it can only lower the human's limits. */
export function agentBudgetOf(budget: PayRequest["budget"]): bigint | undefined {
  if (budget === undefined) return undefined;
  if (budget.currency !== "USDC") {
    // The agent's value, whatever it is, cut short: the message quotes it.
    const got = typeof budget.currency === "string" ? budget.currency.slice(0, 40) : String(budget.currency);
    throw paidError("invalid_input", { field: "budget.currency", problem: "budget_currency", got });
  }
  const agentBudget = typeof budget.amount === "string" ? parseDecimal(budget.amount) : undefined;
  if (agentBudget === undefined) throw paidError("invalid_input", { field: "budget.amount", problem: "budget_amount" });
  return agentBudget;
}

/** An intent key the agent chose: 8-100 characters of a safe alphabet. */
export function checkIntentKey(intentKey: unknown): void {
  if (intentKey !== undefined && (typeof intentKey !== "string" || !/^[A-Za-z0-9_.:-]{8,100}$/.test(intentKey))) {
    throw paidError("invalid_input", { field: "intentKey", problem: "intent_key" });
  }
}
