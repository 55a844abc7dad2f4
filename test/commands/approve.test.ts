/**
 * `paid-actions-mcp approve`, the built CLI, as an agent's shell and as a person at a
 * terminal run it: real pending approvals from real paid calls above the threshold (the
 * engine against the sandbox), the command in a pseudo-terminal (util-linux `script`) or
 * with plain pipes, and the agent's next call with the approvalId showing what was paid.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clearPin, setPin } from "../../src/engine/approvals/pin.js";
import { PaidActionError } from "../../src/engine/errors.js";
import type { PaidCall } from "../../src/engine/model/types.js";
import { engineFixture, refusal, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { runCli } from "../helpers/mcp.js";
import { ensureBuilt } from "../helpers/process.js";
import { on } from "../helpers/proxy.js";
import { runInPty } from "./pty.js";

const NO_TTY =
  "paid-actions-mcp: approving a payment needs a person at an interactive terminal, or in the paid-actions console; nothing was approved\n";
const PRICE = "0.288";
const PROMPT = `Type ${PRICE} to approve paying ${PRICE} USDC, or "decline" to decline it`;

let f: EngineFixture;
/** When set, the proxy shortens the next quotes' expiry to this many ms from now. */
let quoteLifeMs: number | undefined;

beforeAll(async () => {
  ensureBuilt();
  f = await engineFixture({
    env: { PAID_ACTIONS_APPROVAL_ABOVE: "0.1", PAID_ACTIONS_MAX_TOTAL: "100" },
    rules: [
      {
        match: on("POST", "/v1/quotes"),
        action: {
          kind: "rewrite",
          transform: (q) => (
            quoteLifeMs !== undefined && (q.expiresAt = new Date(Date.now() + quoteLifeMs).toISOString()),
            q
          ),
        },
      },
    ],
  });
}, 120_000);
afterAll(() => f?.close());

let calls = 0;

/** The agent asks to pay 0.288 USDC (a new purchase each time): refused, waiting for a person. */
async function pendingApproval() {
  const input: Record<string, unknown> = { ...SMALL_SERVER };
  const callId = `call_approvetest${++calls}`;
  const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input }, { callId }));
  expect(e.code).toBe("approval_required");
  const c = (e as PaidActionError<"approval_required">).context;
  return { approvalId: c.approvalId, input, payee: c.payee as string, callId };
}

/** The CLI's environment: the fixture's (same home, same journal). */
const env = () => f.env as Record<string, string>;
const balance = () => f.t.usdc(f.t.wallet.address);
const status = async (approvalId: string) => (await f.pa.journal.approval(approvalId))?.status;

/** The agent's call with the approvalId, and how much left the wallet. */
async function agentRetry(a: {
  approvalId: string;
  input: Record<string, unknown>;
}): Promise<{ paid?: PaidCall; refused?: PaidActionError; spent: bigint }> {
  const before = await balance();
  const result: { paid?: PaidCall; refused?: PaidActionError } = await f.pa.engine
    .pay({ action: "servers.provision", input: a.input, approvalId: a.approvalId })
    .then(
      (paid) => ({ paid }),
      (e: unknown) => ({ refused: e as PaidActionError }),
    );
  return { ...result, spent: before - (await balance()) };
}

describe("approve without a terminal (an agent's shell)", () => {
  it("lists what waits with the full input, the payee from the challenge, the expiry and the spend after; --json too", async () => {
    const a = await pendingApproval();
    const listed = await runCli(["approve"], env());
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(`Approval ${a.approvalId} (waiting for a person)`);
    expect(listed.stdout).toContain(`"region": "eu-west-1"`);
    expect(listed.stdout).toContain(`amount   ${PRICE} USDC`);
    expect(listed.stdout).toContain(`payee    ${f.t.sb.keys.treasury.address}`);
    expect(listed.stdout).not.toMatch(/ to \?|payee +\?/);
    expect(listed.stdout).toMatch(/expires {2}\d{4}-\d\d-\d\dT/);
    expect(listed.stdout).toMatch(/last 24 h: [\d.]+ of 25\.00 USDC/);
    expect(listed.stdout).toMatch(/total: +[\d.]+ of 100\.00 USDC/);

    const json = await runCli(["approve", "--json"], env());
    expect(json.code, json.stderr).toBe(0);
    const item = (JSON.parse(json.stdout) as { items: any[] }).items.find((i) => i.approvalId === a.approvalId);
    expect(item).toMatchObject({
      status: "pending",
      action: "servers.provision",
      amount: PRICE,
      currency: "USDC",
      payee: f.t.sb.keys.treasury.address,
      input: a.input,
      expired: false,
    });
    expect(item.after).toMatchObject({ maxPerDay: "25.00", maxTotal: "100.00" });
    expect(Number(item.after.spentTotal)).toBeCloseTo(
      Number(PRICE) + Number((await f.pa.engine.spending()).spentTotal),
      6,
    );
  });

  it("`approve <id>` refuses (exit 2, one line), approves nothing, and the agent's retry still pays nothing", async () => {
    const a = await pendingApproval();
    const r = await runCli(["approve", a.approvalId], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(NO_TTY);
    expect(r.stdout).toBe("");
    expect(await status(a.approvalId)).toBe("pending");
    const retry = await agentRetry(a);
    expect(retry.refused?.code).toBe("approval_required");
    expect(retry.spent).toBe(0n);
  });
});

describe("approve at a terminal (a person)", () => {
  it("shows the payment; typing the amount approves it; the agent's retry pays once; approving it again is refused", async () => {
    const a = await pendingApproval();
    const p = runInPty(["approve", a.approvalId], f.env);
    await p.waitFor(PROMPT);
    p.type(`${PRICE}\r`);
    const done = await p.exit;
    expect(done.code, done.screen).toBe(0);
    for (const shown of [
      `action   servers.provision`,
      `amount   ${PRICE} USDC`,
      `payee    ${a.payee}`,
      `"region": "eu-west-1"`,
      "last 24 h:",
      `Approved ${a.approvalId}`,
      // This process cannot see whether a call waits: both cases are told.
      "A call of the agent waiting for it pays now, once;",
    ]) {
      expect(done.screen).toContain(shown);
    }
    expect(await status(a.approvalId)).toBe("approved");
    expect(f.pa.transcripts.read(a.callId)).toContainEqual(
      expect.objectContaining({
        step: "approval",
        approvalId: a.approvalId,
        decision: "approved by a person in the terminal",
      }),
    );

    const retry = await agentRetry(a);
    expect(retry.refused, retry.refused?.message).toBeUndefined();
    expect(typeof retry.paid?.executionId).toBe("string");
    expect(retry.spent).toBe(288_000n);
    expect(await status(a.approvalId)).toBe("used");

    const again = runInPty(["approve", a.approvalId], f.env);
    const second = await again.exit;
    expect(second.code).toBe(1);
    expect(second.screen).toContain(`approval ${a.approvalId} was already used`);
    expect((await agentRetry(a)).spent).toBe(0n);
  });

  it("a typed decline is recorded as declined, and the agent's retry pays nothing", async () => {
    const a = await pendingApproval();
    const p = runInPty(["approve", a.approvalId], f.env);
    await p.waitFor(PROMPT);
    p.type("decline\r");
    const done = await p.exit;
    expect(done.code, done.screen).toBe(0);
    expect(done.screen).toContain(`Declined ${a.approvalId}`);
    const row = await f.pa.journal.approval(a.approvalId);
    expect(row?.status).toBe("declined");
    expect(row?.decidedAt).toEqual(expect.any(Number));
    // The call that asked keeps the decision in its transcript.
    expect(f.pa.transcripts.read(a.callId)).toContainEqual(
      expect.objectContaining({
        step: "approval",
        approvalId: a.approvalId,
        decision: "declined by a person in the terminal",
      }),
    );
    const retry = await agentRetry(a);
    expect(retry.refused?.code).toBe("approval_declined");
    expect(retry.spent).toBe(0n);
  });

  it("another answer, or Ctrl-C, leaves it waiting (exit 1)", async () => {
    const a = await pendingApproval();
    const p = runInPty(["approve", a.approvalId], f.env);
    await p.waitFor(PROMPT);
    p.type("0.29\r");
    const wrong = await p.exit;
    expect(wrong.code).toBe(1);
    expect(wrong.screen).toContain(`nothing was decided: approval ${a.approvalId} is still waiting`);

    const q = runInPty(["approve", a.approvalId], f.env);
    await q.waitFor(PROMPT);
    q.type("0.2\u0003");
    expect((await q.exit).code).toBe(1);
    expect(await status(a.approvalId)).toBe("pending");
    expect((await agentRetry(a)).spent).toBe(0n);
  });

  it("with a PIN set: a wrong PIN approves nothing; the right one (never shown) approves, and the agent pays", async () => {
    const a = await pendingApproval();
    await setPin(f.home, "2468-secret");
    try {
      const p = runInPty(["approve", a.approvalId], f.env);
      await p.waitFor(PROMPT);
      p.type(`${PRICE}\r`);
      await p.waitFor("Approval PIN: ");
      p.type("1357-wrong\r");
      const wrong = await p.exit;
      expect(wrong.code).toBe(1);
      expect(wrong.screen).toContain("paid-actions-mcp: wrong PIN; nothing was approved");
      expect(wrong.screen).not.toContain("1357-wrong");
      expect(await status(a.approvalId)).toBe("pending");
      const early = await agentRetry(a);
      expect(early.refused?.code).toBe("approval_required");
      expect(early.spent).toBe(0n);

      const q = runInPty(["approve", a.approvalId], f.env);
      await q.waitFor(PROMPT);
      q.type(`${PRICE}\r`);
      await q.waitFor("Approval PIN: ");
      q.type("2468-secret\r");
      const right = await q.exit;
      expect(right.code, right.screen).toBe(0);
      expect(right.screen).not.toContain("2468-secret");
      expect(await status(a.approvalId)).toBe("approved");
      const paid = await agentRetry(a);
      expect(paid.paid?.executionId).toBeTruthy();
      expect(paid.spent).toBe(288_000n);
    } finally {
      await clearPin(f.home);
    }
  });

  it("an approval that expired with its quote cannot be approved, and nothing is paid", async () => {
    quoteLifeMs = 2_500;
    let a: Awaited<ReturnType<typeof pendingApproval>>;
    try {
      a = await pendingApproval();
    } finally {
      quoteLifeMs = undefined;
    }
    const expiresAt = (await f.pa.journal.approval(a.approvalId))!.expiresAt;
    // The expiry must pass on the wall clock: the CLI below runs in its own process, with no
    // clock to move, and the instant is known (not a guess).
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now()) + 200));
    const listed = await runCli(["approve"], env());
    expect(listed.stdout).not.toContain(a.approvalId);

    const p = runInPty(["approve", a.approvalId], f.env);
    const done = await p.exit;
    expect(done.code).toBe(1);
    expect(done.screen).toContain(`approval ${a.approvalId} expired with its quote`);
    expect(done.screen).not.toContain("Type ");
    expect(await status(a.approvalId)).toBe("pending");
    const retry = await agentRetry(a);
    expect(retry.paid).toBeUndefined();
    expect(retry.spent).toBe(0n);
  });

  it("an unknown approval: a clear message, exit 1", async () => {
    const done = await runInPty(["approve", "apr_doesnotexist"], f.env).exit;
    expect(done.code).toBe(1);
    expect(done.screen).toContain(`there is no approval apr_doesnotexist in ${f.home}; nothing was approved`);
  });
});
