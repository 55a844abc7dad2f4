/**
 * The sandbox's facilitator lists the sandbox's own paid resources in discovery from its first
 * start, as a seller that registered them would: each entry is what a buyer's first payment
 * would have catalogued from the 402 (price, payee, fee payer, the Bazaar declaration with its
 * method), read through the stock Bazaar client. A restart on the same port changes nothing;
 * one on another port moves the entries to the new origin and forgets the old ones, and leaves
 * other sellers' entries alone, even on the same path.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HTTPFacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { withBazaar } from "@x402/extensions/bazaar";
import { afterAll, describe, expect, it } from "vitest";
import { PAID_RESOURCES } from "../../src/sandbox/resources/catalog.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const home = mkdtempSync(join(tmpdir(), "pam-discovery-own-"));
let t: TestSandbox | undefined;
afterAll(async () => {
  await t?.close();
  rmSync(home, { recursive: true, force: true });
});

const listed = async (sandbox: TestSandbox) =>
  (await withBazaar(new HTTPFacilitatorClient({ url: sandbox.sb.facilitatorUrl })).extensions.bazaar.listResources())
    .items;
const originOf = (sandbox: TestSandbox) => new URL(sandbox.sb.baseUrl).origin;

/** Another seller's resource on the same path, catalogued as its buyer's settlement would. */
function otherSellersEntry(sandbox: TestSandbox): string {
  const url = "http://127.0.0.1:9/x402/weather";
  const requirements = {
    scheme: "exact",
    network: sandbox.sb.network,
    amount: "5000",
    asset: sandbox.sb.asset,
    payTo: sandbox.sb.owner!,
    maxTimeoutSeconds: 60,
    extra: { feePayer: sandbox.sb.keys.feePayer.address },
  } as PaymentRequirements;
  const bazaar = {
    info: { input: { type: "http", method: "GET" } },
    schema: { type: "object", properties: { input: { type: "object" } }, required: ["input"] },
  };
  const payload = {
    x402Version: 2,
    resource: { url, description: "someone else's weather", mimeType: "application/json" },
    accepted: requirements,
    payload: {},
    extensions: { bazaar },
  } as PaymentPayload;
  expect(sandbox.sb.catalog.record(payload, requirements)).toBe(url);
  return url;
}

describe("discovery lists the sandbox's own resources from its first start", () => {
  it("a fresh sandbox lists each of its resources as a first payment would, before anything was paid", async () => {
    t = await startTestSandbox({ home });
    const origin = originOf(t);
    const items = await listed(t);
    expect(items.map((i) => i.resource).sort()).toEqual(PAID_RESOURCES.map((r) => `${origin}${r.path}`).sort());
    for (const resource of PAID_RESOURCES) {
      const entry = items.find((i) => i.resource === `${origin}${resource.path}`)!;
      expect(entry).toMatchObject({
        type: "http",
        x402Version: 2,
        description: resource.description,
        mimeType: "application/json",
      });
      expect(entry.accepts).toEqual([
        {
          scheme: "exact",
          network: t.sb.network,
          amount: resource.price.toString(),
          asset: t.sb.asset,
          payTo: t.sb.keys.seller.address,
          maxTimeoutSeconds: 60,
          extra: { feePayer: t.sb.keys.feePayer.address },
        },
      ]);
      expect((entry.extensions as any).bazaar.info.input).toMatchObject({ type: "http", method: resource.method });
    }
    // The 402 a buyer gets carries the same declaration the listing does.
    const res = await fetch(`${origin}/x402/weather?city=Oslo`);
    expect(res.status).toBe(402);
    const challenge = JSON.parse(Buffer.from(res.headers.get("payment-required")!, "base64").toString("utf8"));
    const weather = items.find((i) => i.resource === `${origin}/x402/weather`)!;
    expect(weather.extensions).toEqual({ bazaar: challenge.extensions.bazaar });
  });

  it("a restart on the same port changes nothing; one on another port moves them, and other sellers' stay", async () => {
    const other = otherSellersEntry(t!);
    const before = await listed(t!);
    const port = t!.sb.port;
    await t!.close();
    t = await startTestSandbox({ home, port });
    expect(await listed(t)).toEqual(before);

    const oldOrigin = originOf(t);
    await t.close();
    t = await startTestSandbox({ home });
    const origin = originOf(t);
    expect(origin).not.toBe(oldOrigin);
    const urls = (await listed(t)).map((i) => i.resource);
    expect(urls.sort()).toEqual([other, ...PAID_RESOURCES.map((r) => `${origin}${r.path}`)].sort());
  });
});
