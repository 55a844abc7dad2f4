/**
 * A pay request as the engine accepts it: a catalog action name, an object input (canonical
 * JSON, at most 60 KiB), an optional USDC budget and intent key. Refused with invalid_input,
 * naming the field; nothing is recorded for a request that fails here.
 */
import { createHash } from "node:crypto";
import { parseDecimal } from "../../domain/money.js";
import { ACTION_NAME, canonicalJson } from "../../domain/wire.js";
import { PaidActionError } from "../errors.js";
import type { PayRequest } from "../model/types.js";

/** What identifies an intent's content: a retry with the same key must carry the same. */
export function fingerprint(action: string, input: string): string {
  return createHash("sha256").update(`${action}\n${input}`).digest("hex");
}

export function validateRequest(req: PayRequest): { input: string; agentBudget?: bigint } {
  if (typeof req.action !== "string" || !ACTION_NAME.test(req.action)) {
    throw new PaidActionError("invalid_input", "action must be a catalog action name such as servers.provision", {
      field: "action",
    });
  }
  if (!req.input || typeof req.input !== "object" || Array.isArray(req.input))
    throw new PaidActionError("invalid_input", "input must be an object", { field: "input" });
  let input: string;
  try {
    input = canonicalJson(req.input);
  } catch {
    throw new PaidActionError("invalid_input", "input is not serializable JSON", { field: "input" });
  }
  if (Buffer.byteLength(input) > 60 * 1024)
    throw new PaidActionError("invalid_input", "input is larger than 60 KiB", { field: "input" });
  const agentBudget = agentBudgetOf(req.budget);
  checkIntentKey(req.intentKey);
  return { input, agentBudget };
}

/** The agent's budget for one call, in atomic units: it can only lower the human's limits. */
export function agentBudgetOf(budget: PayRequest["budget"]): bigint | undefined {
  if (budget === undefined) return undefined;
  if (budget.currency !== "USDC") {
    throw new PaidActionError(
      "invalid_input",
      `budget.currency must be USDC, not ${JSON.stringify(budget.currency).slice(0, 40)}`,
      { field: "budget.currency" },
    );
  }
  const agentBudget = typeof budget.amount === "string" ? parseDecimal(budget.amount) : undefined;
  if (agentBudget === undefined)
    throw new PaidActionError(
      "invalid_input",
      'budget.amount must be a decimal string such as "2.50" (at most 6 decimals)',
      {
        field: "budget.amount",
      },
    );
  return agentBudget;
}

/** An intent key the agent chose: 8-100 characters of a safe alphabet. */
export function checkIntentKey(intentKey: unknown): void {
  if (intentKey !== undefined && (typeof intentKey !== "string" || !/^[A-Za-z0-9_.:-]{8,100}$/.test(intentKey))) {
    throw new PaidActionError("invalid_input", "intentKey must be 8-100 characters of A-Z a-z 0-9 _ . : -", {
      field: "intentKey",
    });
  }
}
