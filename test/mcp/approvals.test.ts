/**
 * Approvals above the threshold, over real stdio with the v1 client: by elicitation when the
 * client declares it (a handler that throws still gets the structured refusal, and the
 * approval stays usable), and otherwise by a person running `paid-actions-mcp approve
 * <approvalId>` at a terminal (a pseudo-terminal here) in a second process on the same home.
 */
import type { ElicitRequest, ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { runInPty } from "../commands/pty.js";
import { loginAsPerson } from "../helpers/console-person.js";
import {
  call,
  cleanupAll,
  ensureBuilt,
  runCli,
  sc,
  serverEnv,
  serviceGet,
  SMALL_SERVER,
  SMALL_SERVER_PRICE,
  startServer,
  text,
  usdc,
} from "../helpers/mcp.js";

/** Approval above 0.1 USDC: the 0.288 USDC server needs one. */
const LIMITS = { PAID_ACTIONS_APPROVAL_ABOVE: "0.1", PAID_ACTIONS_MAX_PER_CALL: "5", PAID_ACTIONS_MAX_PER_DAY: "25" };

beforeAll(() => ensureBuilt(), 90_000);
afterEach(() => cleanupAll());

describe("mcp e2e: approval by elicitation", () => {
  it("asks the human (action, amount, payee, expiry); accept pays, decline and cancel pay nothing, cancel leaves it pending", async () => {
    const asked: ElicitRequest[] = [];
    let answer: ElicitResult = { action: "decline" };
    const s = await startServer({
      delayMs: 500,
      env: LIMITS,
      elicit: (request) => {
        asked.push(request);
        return answer;
      },
    });
    await s.client.listTools();
    const quote = sc(await call(s.client, "quote_action", { action: "servers.provision", input: { ...SMALL_SERVER } }));
    expect(quote.amount).toBe(SMALL_SERVER_PRICE);
    expect(quote.needsApproval).toBe(true);

    // Decline: a tool error, nothing paid.
    answer = { action: "decline" };
    const declined = await call(s.client, "servers_provision", { ...SMALL_SERVER });
    expect(declined.isError).toBe(true);
    expect(sc(declined).error.code).toBe("approval_declined");
    expect(asked).toHaveLength(1);
    const params = asked[0]!.params as { mode?: string; message: string; requestedSchema?: unknown };
    expect(params.mode ?? "form").toBe("form");
    expect(params.message).toContain(SMALL_SERVER_PRICE);
    expect(params.message).toContain("servers.provision");
    expect(params.message).toContain(quote.payee);
    expect(params.message).toMatch(/expire/i);
    expect(params.requestedSchema).toBeDefined();

    // Cancel (the human dismissed the dialog): nothing paid, and nothing decided either — the
    // approval stays pending (as a dismissed link's does), for a person to decide elsewhere.
    answer = { action: "cancel" };
    const cancelled = await call(s.client, "servers_provision", { ...SMALL_SERVER });
    expect(cancelled.isError).toBe(true);
    expect(sc(cancelled).error.code).toBe("approval_required");
    expect(sc(cancelled).error.message).toContain("the person dismissed the approval question without deciding");
    expect(sc(cancelled).error.message).toContain("nothing was paid");
    expect(asked).toHaveLength(2);
    const waiting = await runCli(["approve"], serverEnv(s.home, LIMITS));
    expect(waiting.stdout).toContain(sc(cancelled).error.approvalId);
    expect(waiting.stdout).not.toContain(sc(declined).error.approvalId);

    // An "accept" whose form says no is not an approval.
    answer = { action: "accept", content: { approve: false } };
    const unchecked = await call(s.client, "servers_provision", { ...SMALL_SERVER });
    expect(unchecked.isError).toBe(true);
    expect(sc(unchecked).error.code).toBe("approval_declined");

    let spending = sc(await call(s.client, "get_spending"));
    expect(usdc(spending.spentTotal)).toBe(0);
    expect(usdc(spending.reserved)).toBe(0);
    expect((await serviceGet(s.home, "/executions")).items).toEqual([]);

    // Accept: paid, once.
    answer = { action: "accept", content: { approve: true } };
    const accepted = await call(s.client, "servers_provision", { ...SMALL_SERVER });
    expect(accepted.isError ?? false, text(accepted)).toBe(false);
    const paid = sc(accepted);
    expect(paid.payment.amount).toBe(SMALL_SERVER_PRICE);
    expect(typeof paid.payment.transaction).toBe("string");
    expect(asked).toHaveLength(4);

    spending = sc(await call(s.client, "get_spending"));
    expect(usdc(spending.spentTotal)).toBeCloseTo(0.288, 6);
    const atService = (await serviceGet(s.home, "/executions")).items;
    expect(atService.map((e: any) => e.executionId)).toEqual([paid.executionId]);
  });

  it("a call below the threshold pays without asking", async () => {
    const asked: ElicitRequest[] = [];
    const s = await startServer({
      delayMs: 500,
      env: { ...LIMITS, PAID_ACTIONS_APPROVAL_ABOVE: "1" },
      elicit: (r) => (asked.push(r), { action: "decline" }),
    });
    const result = await call(s.client, "servers_provision", { ...SMALL_SERVER });
    expect(result.isError ?? false, text(result)).toBe(false);
    expect(asked).toHaveLength(0);
  });
});

describe("mcp e2e: a host whose elicitation handler throws (the v1 client)", () => {
  it("form or link: approval_required with the approvalId and nothing paid, structured; the approval stays usable", async () => {
    for (const modes of [["form"], ["url"]] as const) {
      const asked: ElicitRequest[] = [];
      const s = await startServer({
        delayMs: 200,
        env: LIMITS,
        elicitModes: [...modes],
        elicit: (request) => {
          asked.push(request);
          throw new Error("the host's dialog crashed");
        },
      });
      const args = { ...SMALL_SERVER, image: `throws-${modes[0]}` };
      const refused = await call(s.client, "servers_provision", args);
      expect(refused.isError).toBe(true);
      const error = sc(refused).error;
      expect(error.code).toBe("approval_required");
      expect(error.approvalId).toMatch(/^apr_/);
      expect(error.message).toContain("nothing was paid");
      expect(error.message).toContain("the host's dialog crashed");
      expect(text(refused)).not.toContain("Fulfilling input required");
      expect(asked).toHaveLength(1);
      expect((await serviceGet(s.home, "/executions")).items).toEqual([]);

      // Still pending: a person approves it (with the console link the refusal carries, else at a terminal).
      if (modes[0] === "url") {
        expect((await (await loginAsPerson(error.consoleUrl)).approve(error.approvalId)).status).toBe(200);
      } else {
        const pty = runInPty(["approve", error.approvalId], serverEnv(s.home, LIMITS));
        await pty.waitFor(`Type ${SMALL_SERVER_PRICE} to approve`);
        pty.type(`${SMALL_SERVER_PRICE}\r`);
        expect((await pty.exit).code).toBe(0);
      }
      const paid = await call(s.client, "servers_provision", { ...args, approvalId: error.approvalId });
      expect(paid.isError ?? false, text(paid)).toBe(false);
      const again = await call(s.client, "servers_provision", { ...args, approvalId: error.approvalId });
      expect(sc(again).executionId).toBe(sc(paid).executionId);
      expect((await serviceGet(s.home, "/executions")).items).toHaveLength(1);
      await s.close();
    }
  });
});

describe("mcp e2e: approval by `approve` at a terminal, in a second process", () => {
  it("approval_required with an approvalId; a person approves; the retry pays once; a second retry pays nothing more", async () => {
    const s = await startServer({ delayMs: 500, env: LIMITS });
    await s.client.listTools();
    const env = serverEnv(s.home, LIMITS);

    const first = await call(s.client, "servers_provision", { ...SMALL_SERVER });
    expect(first.isError).toBe(true);
    const error = sc(first).error;
    expect(error.code).toBe("approval_required");
    expect(typeof error.approvalId).toBe("string");
    expect(error.approvalId.length).toBeGreaterThan(0);
    expect(typeof error.whatToDo).toBe("string");
    expect(`${error.message} ${error.whatToDo}`).toContain(error.approvalId);
    expect(error.message).toContain("a person must approve this payment in the paid-actions console or terminal");
    const approvalId: string = error.approvalId;

    // Nothing paid while waiting.
    expect(usdc(sc(await call(s.client, "get_spending")).spentTotal)).toBe(0);
    expect((await serviceGet(s.home, "/executions")).items).toEqual([]);

    // A retry before the human approved is still refused.
    const early = await call(s.client, "servers_provision", { ...SMALL_SERVER, approvalId });
    expect(early.isError).toBe(true);
    expect(sc(early).error.code).toBe("approval_required");

    // Without a terminal (an agent's shell), `approve <id>` approves nothing.
    const listed = await runCli(["approve"], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(approvalId);
    const piped = await runCli(["approve", approvalId], env);
    expect(piped.code).toBe(2);
    const still = await call(s.client, "servers_provision", { ...SMALL_SERVER, approvalId });
    expect(sc(still).error.code).toBe("approval_required");

    // A person approves at a terminal, in another process on the same home.
    const pty = runInPty(["approve", approvalId], env);
    await pty.waitFor(`Type ${SMALL_SERVER_PRICE} to approve`);
    pty.type(`${SMALL_SERVER_PRICE}\r`);
    const approved = await pty.exit;
    expect(approved.code, approved.screen).toBe(0);
    expect(approved.screen).toContain(`Approved ${approvalId}`);

    // The approval is bound to that input: a different one is refused and does not use it up.
    const other = await call(s.client, "servers_provision", { ...SMALL_SERVER, durationHours: 48, approvalId });
    expect(other.isError).toBe(true);
    expect(sc(other).error.code).toBe("approval_invalid");
    expect(usdc(sc(await call(s.client, "get_spending")).spentTotal)).toBe(0);

    // The retry with the same input and the approvalId pays.
    const retry = await call(s.client, "servers_provision", { ...SMALL_SERVER, approvalId });
    expect(retry.isError ?? false, text(retry)).toBe(false);
    const paid = sc(retry);
    expect(paid.payment.amount).toBe(SMALL_SERVER_PRICE);
    expect(typeof paid.payment.transaction).toBe("string");

    // A second retry lands on the same execution: no second payment.
    const again = await call(s.client, "servers_provision", { ...SMALL_SERVER, approvalId });
    expect(again.isError ?? false, text(again)).toBe(false);
    expect(sc(again).executionId).toBe(paid.executionId);
    expect(sc(again).payment.transaction).toBe(paid.payment.transaction);

    const spending = sc(await call(s.client, "get_spending"));
    expect(usdc(spending.spentTotal)).toBeCloseTo(0.288, 6);
    expect(usdc(spending.spentLast24h) + usdc(spending.reserved)).toBeCloseTo(0.288, 6);
    const atService = (await serviceGet(s.home, "/executions")).items;
    expect(atService.map((e: any) => e.executionId)).toEqual([paid.executionId]);
    const journal = sc(await call(s.client, "list_executions")).items;
    expect(journal.map((i: any) => i.executionId)).toEqual([paid.executionId]);

    // Single use: approving it again fails.
    const twice = await runInPty(["approve", approvalId], env).exit;
    expect(twice.code).toBe(1);
    expect(twice.screen).toContain("already used");
  });
});
