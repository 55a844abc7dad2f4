/**
 * A person who decides after the client stopped waiting, over real stdio with the official
 * TypeScript SDK v1 client at its DEFAULT request timeout (60 s, not reset by progress) and
 * URL-mode elicitation declared: the host opens the console's page at once, the person
 * decides only at 70 s. The first call answers before 60 s with approval_required, its
 * approvalId and a console link that still works; an approval given then is used by the
 * retry with that approvalId (paid once), a decline makes the retry answer approval_declined
 * (nothing paid). The console tells the person that no call is waiting: the agent will use
 * the decision when it calls again.
 *
 * Real time, because the 60 s under test is the client SDK's own timer: the two people (one
 * approves, one declines) run at once on two servers with their own homes, so the file
 * takes about as long as one of them (~75 s).
 */
import type { ElicitRequest } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loginAsPerson } from "../helpers/console-person.js";
import {
  cleanupAll,
  ensureBuilt,
  sc,
  serviceGet,
  SMALL_SERVER,
  SMALL_SERVER_PRICE,
  startServer,
  text,
  usdc,
  type McpServerProcess,
} from "../helpers/mcp.js";

/** Approval above 0.1 USDC: the 0.288 USDC server needs one. */
const LIMITS = { PAID_ACTIONS_APPROVAL_ABOVE: "0.1", PAID_ACTIONS_MAX_PER_CALL: "5", PAID_ACTIONS_MAX_PER_DAY: "25" };
const DECIDES_AT_MS = 70_000;
const SDK_DEFAULT_TIMEOUT_MS = 60_000;

beforeAll(() => ensureBuilt(), 90_000);
afterAll(() => cleanupAll());

/** A host that declares URL mode and "opens" each link at once (it answers accept: the person went there). */
async function hostOpeningLinks(image: string) {
  const asked: ElicitRequest[] = [];
  const s = await startServer({
    delayMs: 200,
    env: LIMITS,
    elicitModes: ["url"],
    elicit: (request) => {
      asked.push(request);
      return { action: "accept" };
    },
  });
  return { s, asked, args: { ...SMALL_SERVER, image } };
}

/** The first call, with the client's default timeouts: refused with approval_required before 60 s. */
async function firstCallRefused(
  s: McpServerProcess,
  args: Record<string, unknown>,
  onprogress?: (p: { progress: number; message?: string }) => void,
) {
  const started = Date.now();
  // No timeout options: the SDK's defaults (60 s, no reset on progress). onprogress only asks for progress.
  const first = await s.client.callTool({ name: "servers_provision", arguments: args }, undefined, {
    ...(onprogress ? { onprogress } : {}),
  });
  const tookMs = Date.now() - started;
  expect(tookMs).toBeLessThan(SDK_DEFAULT_TIMEOUT_MS);
  expect(tookMs).toBeGreaterThan(40_000); // it did wait for the person, about 45 s
  expect(first.isError).toBe(true);
  const error = sc(first).error;
  expect(error.code).toBe("approval_required");
  expect(error.approvalId).toMatch(/^apr_/);
  expect(error.message).toContain("nothing was paid");
  expect(error.whatToDo).toContain("Call again with the same input and this approvalId once the person has decided");
  expect(error.consoleUrl).toMatch(/^file:\/\//);
  expect(text(first)).toContain(error.approvalId);
  return { started, approvalId: error.approvalId as string, consoleUrl: error.consoleUrl as string };
}

/**
 * Waits for a moment on the wall clock. Time is what these tests are about: the person
 * decides after the client's 60 s default timeout, against a server in its own process
 * (no clock of its to move), so the moment has to pass.
 */
const until = (at: number) => new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));

describe("mcp e2e: a person decides after the v1 client's default timeout (URL mode)", () => {
  it.concurrent(
    "approved at 70 s: the first call answers approval_required before 60 s; the retry with its approvalId pays once",
    async () => {
      const { s, asked, args } = await hostOpeningLinks("late-approval");
      const progress: { progress: number; message?: string }[] = [];
      const first = await firstCallRefused(s, args, (p) => void progress.push(p));
      expect(asked).toHaveLength(1);
      expect((asked[0]!.params as { mode?: string }).mode).toBe("url");
      // Every 5 s while it waited, counting up.
      const waiting = progress.filter((p) =>
        p.message?.includes(`waiting for a person to decide on approval ${first.approvalId}`),
      );
      expect(waiting.length).toBeGreaterThanOrEqual(7);
      const counts = progress.map((p) => p.progress);
      expect(counts).toEqual([...new Set(counts)].sort((a, b) => a - b));
      expect((await serviceGet(s.home, "/executions")).items).toEqual([]);

      await until(first.started + DECIDES_AT_MS);
      // The link the refusal carried still signs the person in, to that payment's page.
      const person = await loginAsPerson(first.consoleUrl);
      const approved = await person.approve(first.approvalId);
      expect(approved.status).toBe(200);
      const decided = (await approved.json()) as { agentCall: string; next: string };
      expect(decided.agentCall).toBe("none");
      expect(decided.next).toContain("the agent will use it when it calls again");

      const retry = await s.client.callTool({
        name: "servers_provision",
        arguments: { ...args, approvalId: first.approvalId },
      });
      expect(retry.isError ?? false, text(retry)).toBe(false);
      const paid = sc(retry);
      expect(paid.payment.amount).toBe(SMALL_SERVER_PRICE);
      const again = await s.client.callTool({
        name: "servers_provision",
        arguments: { ...args, approvalId: first.approvalId },
      });
      expect(sc(again).executionId).toBe(paid.executionId);
      // Exactly one payment: one execution at the service, 0.288 USDC spent in the journal.
      const atService = (await serviceGet(s.home, "/executions")).items;
      expect(atService.map((e: { executionId: string }) => e.executionId)).toEqual([paid.executionId]);
      const spending = sc(await s.client.callTool({ name: "get_spending", arguments: {} }));
      expect(usdc(spending.spentTotal)).toBeCloseTo(0.288, 6);
      expect(asked).toHaveLength(1); // the retry asked no one: the approval was there
    },
    120_000,
  );

  it.concurrent(
    "declined at 70 s: the first call answers approval_required before 60 s; the retry answers approval_declined, nothing paid",
    async () => {
      const { s, args } = await hostOpeningLinks("late-decline");
      const first = await firstCallRefused(s, args);

      await until(first.started + DECIDES_AT_MS);
      const person = await loginAsPerson(first.consoleUrl);
      const declined = await person.decline(first.approvalId);
      expect(declined.status).toBe(200);
      expect(((await declined.json()) as { agentCall: string }).agentCall).toBe("none");

      const retry = await s.client.callTool({
        name: "servers_provision",
        arguments: { ...args, approvalId: first.approvalId },
      });
      expect(retry.isError).toBe(true);
      const error = sc(retry).error;
      expect(error.code).toBe("approval_declined");
      expect(error.approvalId).toBe(first.approvalId);
      expect(error.message).toContain("nothing was paid");
      expect((await serviceGet(s.home, "/executions")).items).toEqual([]);
      const spending = sc(await s.client.callTool({ name: "get_spending", arguments: {} }));
      expect(usdc(spending.spentTotal)).toBe(0);
      expect(usdc(spending.reserved)).toBe(0);
    },
    120_000,
  );
});
