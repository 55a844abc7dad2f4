/**
 * The intent a paid call is about: the one it names — by its approval (for exactly the input
 * that was approved) or by its intent key (for the same action and input only) — or a new one,
 * recorded with its lease before anything is asked of the service.
 */
import { LEASE_MS, type Ctx } from "../context.js";
import { paidError } from "../errors.js";
import { IntentKeyTaken } from "../journal/port.js";
import type { Intent, PayRequest } from "../model/types.js";
import type { Call } from "./calls.js";

/**
 * The recorded intent a call names by its approvalId or its intentKey, when its action and
 * input (`fp`) are the ones recorded; undefined when it names none yet.
 */
export async function findIntent(c: Ctx, req: PayRequest, fp: string): Promise<Intent | undefined> {
  let intent: Intent | undefined;
  if (req.approvalId !== undefined) {
    const approval = typeof req.approvalId === "string" ? await c.journal.approval(req.approvalId) : undefined;
    if (!approval) throw paidError("approval_invalid", { approvalId: req.approvalId, problem: "missing" });
    intent = await c.journal.intent(approval.intentId);
    if (!intent || intent.fingerprint !== fp) {
      throw paidError("approval_invalid", { approvalId: req.approvalId, problem: "other_input" });
    }
  } else if (req.intentKey !== undefined) {
    intent = await c.journal.intentByKey(req.intentKey);
    if (intent && intent.fingerprint !== fp) {
      throw paidError("intent_conflict", { intentKey: req.intentKey, intentId: intent.intentId });
    }
  }
  return intent;
}

/** Records a new intent, leased to this process; or finds the one another process just recorded under the same key. */
export async function recordIntent(
  c: Ctx,
  service: string,
  { req, fp, agentBudget, opts, fetch }: Call,
): Promise<{ intent: Intent } | { conflict: Intent }> {
  const now = c.d.now();
  const intentId = c.d.newId("int");
  const intentKey = req.intentKey ?? `pam-${intentId}`;
  try {
    await c.journal.insertIntent({
      intentId,
      intentKey,
      idemKey: intentKey,
      service,
      action: req.action,
      input: req.input,
      fingerprint: fp,
      agentBudget: agentBudget ?? null,
      callId: opts.callId ?? null,
      createdAt: now,
      leaseOwner: c.d.owner,
      leaseUntil: now + LEASE_MS,
      ...(fetch ? { fetch: { origin: fetch.origin, request: fetch.request } } : {}),
    });
  } catch (e) {
    const existing =
      req.intentKey !== undefined && e instanceof IntentKeyTaken
        ? await c.journal.intentByKey(req.intentKey)
        : undefined;
    if (existing) return { conflict: existing };
    throw e;
  }
  const created = await c.journal.intent(intentId);
  if (!created) throw new Error(`intent ${intentId} was recorded but is not in the journal`);
  c.transcript(created, "intent", { action: req.action, input: req.input, budget: req.budget ?? null, intentKey });
  c.step("intent_recorded", created);
  return { intent: created };
}
