/**
 * Receipts over MCP, on real stdio in sandbox mode: paid-actions://receipts/{id} serves the
 * same signed document `receipt ID` writes, for an execution (by its executionId) and a
 * paid_fetch (by its intentId), and `receipt verify --rpc` accepts it; the paid_fetch result
 * says the seller (the sandbox's resource) signed; an id that names nothing is not found.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  cleanupAll,
  ensureBuilt,
  readJson,
  runCli,
  sc,
  serverEnv,
  SMALL_SERVER,
  startServer,
  text,
} from "../helpers/mcp.js";

beforeAll(() => ensureBuilt(), 90_000);
afterEach(() => cleanupAll());

describe("mcp: a purchase's receipt as a resource", () => {
  it("paid-actions://receipts/{id} serves the signed receipt of an execution and of a paid_fetch; verify accepts both", async () => {
    const s = await startServer({ delayMs: 200 });
    const paid = sc(await call(s.client, "servers_provision", { ...SMALL_SERVER }));
    const done = await call(s.client, "wait_for_execution", { executionId: paid.executionId, timeoutSeconds: 30 });
    expect(sc(done).status, text(done)).toBe("completed");
    const info = JSON.parse(readFileSync(join(s.home, "sandbox", "sandbox.json"), "utf8"));
    const own = new URL(info.baseUrl).origin;
    const fetched = await call(s.client, "paid_fetch", { url: `${own}/x402/weather?city=Oslo` });
    expect(fetched.isError ?? false, text(fetched)).toBe(false);
    const purchase = sc(fetched);
    expect(purchase.payment.seller).toMatchObject({ signed: true, offer: "verified", receipt: "verified" });
    expect(purchase.payment.seller.signer).toBe(info.sellerKey.kid);

    const { resourceTemplates } = await s.client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toContain("paid-actions://receipts/{id}");
    const env = serverEnv(s.home);
    for (const id of [paid.executionId as string, purchase.intentId as string]) {
      const doc = await readJson(s.client, `paid-actions://receipts/${id}`);
      expect(doc).toMatchObject({ receipt: "paid-actions/1", signature: { signer: doc.payment.payer } });
      const file = join(s.home, `${id}.receipt.json`);
      writeFileSync(file, JSON.stringify(doc));
      const run = await runCli(["receipt", "verify", file, "--rpc", info.rpcUrl], env, 30_000);
      expect(run.code, run.stdout + run.stderr).toBe(0);
    }
    await expect(s.client.readResource({ uri: "paid-actions://receipts/int_nothing" })).rejects.toThrow(
      /no purchase or execution int_nothing/,
    );
  });
});
