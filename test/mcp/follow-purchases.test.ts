/**
 * A paid_fetch purchase followed like an execution, in both protocol eras: on 2025
 * `resources/subscribe` on `paid-actions://purchases/{intentId}` is accepted (it answered
 * -32602 before), on 2026-07-28 `subscriptions/listen` honours it, and
 * `notifications/resources/updated` arrives as the purchase moves — when the call that pays
 * it ends, and when the reconciler verifies its settlement on chain (`claimed` → `verified`).
 * The purchase is the test sandbox's own x402 weather, approved by a person first so that the
 * subscription is in place before anything is paid.
 */
import type { Client } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { openJournal } from "../../src/app/index.js";
import { callTool, ERAS, inProcessSuite } from "../helpers/inproc.js";

const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;
const suite = inProcessSuite({ prefix: "pam-follow-purchase", providerDelayMs: 200 });

async function readPurchase(client: Client, uri: string): Promise<{ state: string; settlement: string }> {
  const r = await client.readResource({ uri });
  const first = r.contents[0] as { text?: string };
  return JSON.parse(first.text ?? "{}") as { state: string; settlement: string };
}

describe.each(ERAS)("%s era: following a purchase", (era) => {
  it("subscribes to the purchase, and an update arrives when its settlement is verified", async () => {
    const origin = new URL(suite.sandbox().sb.baseUrl).origin;
    // The weather costs 0.001 USDC: above this threshold, a person approves it first.
    const env = suite.env({ PAID_ACTIONS_APPROVAL_ABOVE: "0.0005", PAID_ACTIONS_ALLOW_ORIGINS: origin });
    const s = await suite.start({ env, era });
    const args = { url: `${origin}/x402/weather?city=Porto`, intentKey: `follow-purchase-${era}` };
    const asked = sc(await callTool(s.client, "paid_fetch", args, 30_000)).error;
    expect(asked.code).toBe("approval_required");
    const intentId = String(asked.intentId);
    const uri = `paid-actions://purchases/${intentId}`;
    expect((await readPurchase(s.client, uri)).state).toBe("awaiting_approval");

    // What the purchase was, read at each update for it.
    const seen: { state: string; settlement: string }[] = [];
    const updated: string[] = [];
    s.client.setNotificationHandler("notifications/resources/updated", async (n) => {
      updated.push(n.params.uri);
      if (n.params.uri === uri) seen.push(await readPurchase(s.client, uri));
    });
    let close = async () => {};
    if (era === "legacy") {
      await s.client.subscribeResource({ uri });
      await s.client.subscribeResource({ uri: "paid-actions://purchases" });
    } else {
      const sub = await s.client.listen({ resourceSubscriptions: [uri, "paid-actions://purchases"] });
      expect(sub.honoredFilter.resourceSubscriptions).toEqual([uri, "paid-actions://purchases"]);
      close = () => sub.close();
    }

    const j = await openJournal(env);
    try {
      await j.engine.approve(String(asked.approvalId), "terminal");
    } finally {
      await j.close();
    }
    const paid = sc(await callTool(s.client, "paid_fetch", { ...args, approvalId: asked.approvalId }, 30_000));
    expect(paid.intentId).toBe(intentId);
    expect(paid.payment.settlement).toBe("claimed");

    await expect.poll(() => seen.map((p) => p.settlement), { timeout: 20_000, interval: 100 }).toContain("verified");
    expect(seen.map((p) => p.state)).toContain("executed");
    expect(updated).toContain("paid-actions://purchases");
    expect(updated).not.toContain("paid-actions://spending"); // not asked for
    expect(await readPurchase(s.client, uri)).toMatchObject({ state: "executed", settlement: "verified" });
    await close();
  });
});
