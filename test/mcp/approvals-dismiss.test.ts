/**
 * What dismissing means, in both protocol eras and both modes — the table
 * docs/approvals-and-console.md states ("Dismissing is not declining"): the host's answer to
 * the approval question is `cancel` (the person closed the form, or the link's prompt) or
 * `decline` (they said no). A dismissal decides nothing: the call answers
 * `approval_required`, the approval stays pending, and a decision taken later (here in a
 * second process's journal, as `approve` at a terminal would) is used by the retry with the
 * approvalId, which pays once. Only a decline declines: recorded, nothing paid, and the
 * retry is refused too.
 */
import type { ElicitResult } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { openJournal } from "../../src/app/index.js";
import { callTool, ERAS, inProcessSuite } from "../helpers/inproc.js";

const SMALL_SERVER = { region: "eu-west-1", plan: "small", durationHours: 24 } as const; // 0.288 USDC
const PRICE = 288_000n;
const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;

const suite = inProcessSuite({ prefix: "pam-dismiss", providerDelayMs: 200 });
const balance = () => suite.sandbox().usdc(suite.sandbox().wallet.address);
const NEEDS_APPROVAL = { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" };

/** The table the approvals page states: what each answer, in each mode, leaves the approval as. */
const MEANING = [
  { mode: "form", answer: "cancel", code: "approval_required", status: "pending" },
  { mode: "form", answer: "decline", code: "approval_declined", status: "declined" },
  { mode: "url", answer: "cancel", code: "approval_required", status: "pending" },
  { mode: "url", answer: "decline", code: "approval_declined", status: "declined" },
] as const;

async function withJournal<T>(
  env: Record<string, string>,
  f: (j: Awaited<ReturnType<typeof openJournal>>) => Promise<T>,
) {
  const j = await openJournal(env);
  try {
    return await f(j);
  } finally {
    await j.close();
  }
}

describe.each(ERAS)("%s era: dismissing is not declining", (era) => {
  it.each(MEANING)("$mode mode, $answer: $code, the approval $status", async ({ mode, answer, code, status }) => {
    const env = suite.env(NEEDS_APPROVAL);
    const elicit = (): ElicitResult => ({ action: answer });
    const s = await suite.start({ env, era, elicit, elicitModes: [mode] });
    const before = await balance();
    const args = { ...SMALL_SERVER, image: `dismiss-${era}-${mode}-${answer}` };
    const first = sc(await callTool(s.client, "servers_provision", args, 30_000)).error;
    expect(first.code).toBe(code);
    const approvalId = String(first.approvalId);
    expect(approvalId).toMatch(/^apr_/);
    expect(first.message).toContain("nothing was paid");
    if (answer === "cancel") expect(first.message).toMatch(/dismissed/);
    expect(await withJournal(env, async (j) => (await j.journal.approval(approvalId))?.status)).toBe(status);
    expect(await balance()).toBe(before);

    // A person decides afterwards (only a pending approval can still be approved).
    const approved = await withJournal(env, (j) =>
      j.engine.approve(approvalId, "terminal").then(
        () => true,
        () => false,
      ),
    );
    expect(approved).toBe(status === "pending");
    const retry = await callTool(s.client, "servers_provision", { ...args, approvalId }, 30_000);
    if (status === "pending") {
      expect(retry.isError, JSON.stringify(sc(retry))).toBeFalsy();
      expect(await balance()).toBe(before - PRICE);
    } else {
      expect(sc(retry).error.code).toBe("approval_declined");
      expect(await balance()).toBe(before);
    }
  });
});
