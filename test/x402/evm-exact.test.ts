/**
 * The sandbox's EVM ledger (eip155:84532) used by code nobody here wrote: the stock @x402/fetch
 * client with @x402/evm's exact client scheme pays the sandbox's own demo resources through its
 * facilitator, and a stock @x402/express seller (in this process) configured with the
 * sandbox's facilitator URL and @x402/evm's exact server scheme gets paid the same way. USDC
 * is read back from the chain over JSON-RPC; a replayed proof is refused and moves nothing.
 */
import { readFileSync, statSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { HTTPFacilitatorClient, x402ResourceServer } from "@x402/core/server";
import { ExactEvmScheme as ExactEvmClient } from "@x402/evm/exact/client";
import { ExactEvmScheme as ExactEvmServer } from "@x402/evm/exact/server";
import { paymentMiddleware } from "@x402/express";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { createPublicClient, http, parseAbi, type Address, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const EVM_NETWORK = "eip155:84532";
const USDC_BASE_SEPOLIA = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const ERC20 = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function name() view returns (string)",
  "function version() view returns (string)",
  "function authorizationState(address, bytes32) view returns (bool)",
]);

/** Express has no type declarations here: the few calls this test makes, typed by hand. */
interface ExpressApp {
  use(handler: unknown): void;
  get(path: string, handler: (req: unknown, res: { json(body: unknown): void }) => void): void;
  listen(port: number, host: string, ready: () => void): Server;
}
const EXPRESS = "express";
const loadExpress = async () => ((await import(EXPRESS)) as { default: () => ExpressApp }).default;

describe("stock x402 EVM clients and sellers on the sandbox's EVM ledger", () => {
  let t: TestSandbox;
  let chain: ReturnType<typeof createPublicClient>;
  let seller: Server;
  let sellerUrl: string;
  const payee = privateKeyToAccount(generatePrivateKey()).address;
  const usdc = (owner: string) =>
    chain.readContract({ address: USDC_BASE_SEPOLIA, abi: ERC20, functionName: "balanceOf", args: [owner as Address] });
  const agent = () => privateKeyToAccount(readFileSync(t.sb.evm!.agentKeyPath, "utf8").trim() as Hex);

  /** Pays with the stock client; returns the answer and the PAYMENT-SIGNATURE it sent. */
  async function pay(url: string) {
    let proof: string | undefined;
    const recording: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      proof = request.headers.get("payment-signature") ?? proof;
      return fetch(request);
    };
    const client = new x402Client().register("eip155:*", new ExactEvmClient(agent()));
    const res = await wrapFetchWithPayment(recording, client)(url);
    const header = res.headers.get("payment-response");
    return {
      status: res.status,
      body: (await res.json().catch(() => undefined)) as unknown,
      proof,
      receipt: header ? decodePaymentResponseHeader(header) : undefined,
    };
  }

  beforeAll(async () => {
    t = await startTestSandbox({ evm: true });
    chain = createPublicClient({ transport: http(t.sb.evm!.rpcUrl) });
    const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: t.sb.facilitatorUrl })).register(
      EVM_NETWORK,
      new ExactEvmServer(),
    );
    const app = (await loadExpress())();
    app.use(
      paymentMiddleware(
        { "GET /paid": { accepts: { scheme: "exact", network: EVM_NETWORK, payTo: payee, price: "$0.01" } } },
        server,
      ),
    );
    app.get("/paid", (_req, res) => void res.json({ ok: true }));
    seller = await new Promise<Server>((done) => {
      const s = app.listen(0, "127.0.0.1", () => done(s));
    });
    sellerUrl = `http://127.0.0.1:${(seller.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((done) => seller?.close(done));
    await t?.close();
  });

  it("sandbox.json names the EVM ledger; the agent's key file is 0600 and holds 25 USDC; the token is USDC's", async () => {
    const info = JSON.parse(readFileSync(join(t.sb.home, "sandbox.json"), "utf8"));
    expect(info.evm).toEqual({
      rpcUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      network: EVM_NETWORK,
      chainId: 84532,
      asset: USDC_BASE_SEPOLIA,
      agentAddress: agent().address,
      agentKeyPath: t.sb.evm!.agentKeyPath,
      ownerAddress: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/),
    });
    expect(statSync(info.evm.agentKeyPath).mode & 0o777).toBe(0o600);
    expect(await chain.getChainId()).toBe(84532);
    expect(await usdc(info.evm.agentAddress)).toBe(25_000_000n);
    expect(await usdc(info.evm.ownerAddress)).toBe(1_000_000_000n);
    const read = (functionName: "name" | "version") =>
      chain.readContract({ address: USDC_BASE_SEPOLIA, abi: ERC20, functionName });
    expect([await read("name"), await read("version")]).toEqual(["USDC", "2"]);
  });

  it("/supported lists the exact scheme on both networks, Solana's first", async () => {
    const supported = await new HTTPFacilitatorClient({ url: t.sb.facilitatorUrl }).getSupported();
    expect(supported.kinds.map((k) => k.network)).toEqual([t.sb.network, EVM_NETWORK]);
    expect(supported.signers["eip155:*"]).toEqual([t.sb.evmLedger!.keys.facilitator.address]);
  });

  it("the demo resources accept both networks, Solana first; the stock EVM client pays one, exactly, once", async () => {
    const unpaid = await fetch(`${t.sb.baseUrl.replace(/\/v1$/, "")}/x402/weather?city=Lisbon`);
    expect(unpaid.status).toBe(402);
    const challenge = JSON.parse(Buffer.from(unpaid.headers.get("payment-required")!, "base64").toString("utf8"));
    expect(challenge.accepts.map((a: { network: string }) => a.network)).toEqual([t.sb.network, EVM_NETWORK]);
    const evmEntry = challenge.accepts[1];
    expect(evmEntry).toMatchObject({ asset: USDC_BASE_SEPOLIA, extra: { name: "USDC", version: "2" } });
    const price = BigInt(evmEntry.amount);
    const sellerAddress = evmEntry.payTo as string;
    const [payerBefore, sellerBefore] = [await usdc(agent().address), await usdc(sellerAddress)];

    const paid = await pay(`${t.sb.baseUrl.replace(/\/v1$/, "")}/x402/weather?city=Lisbon`);
    expect(paid.status).toBe(200);
    expect(paid.receipt).toMatchObject({ success: true, network: EVM_NETWORK, payer: agent().address });
    expect(await usdc(agent().address)).toBe(payerBefore - price);
    expect(await usdc(sellerAddress)).toBe(sellerBefore + price);
    const receipt = await chain.getTransactionReceipt({ hash: paid.receipt!.transaction as Hex });
    expect(receipt.status).toBe("success");

    // The same proof again: refused, nothing moves.
    const replay = await fetch(`${t.sb.baseUrl.replace(/\/v1$/, "")}/x402/weather?city=Lisbon`, {
      headers: { "PAYMENT-SIGNATURE": paid.proof! },
    });
    expect(replay.status).toBe(402);
    expect(await usdc(agent().address)).toBe(payerBefore - price);
    expect(await usdc(sellerAddress)).toBe(sellerBefore + price);
  });

  it("a stock @x402/express seller with the sandbox's facilitator settles on eip155:84532; a replay is refused", async () => {
    const [payerBefore, payeeBefore] = [await usdc(agent().address), await usdc(payee)];
    const paid = await pay(`${sellerUrl}/paid`);
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body).toEqual({ ok: true });
    expect(paid.receipt).toMatchObject({ success: true, network: EVM_NETWORK });
    expect(await usdc(agent().address)).toBe(payerBefore - 10_000n);
    expect(await usdc(payee)).toBe(payeeBefore + 10_000n);

    const replay = await fetch(`${sellerUrl}/paid`, { headers: { "PAYMENT-SIGNATURE": paid.proof! } });
    expect(replay.status).toBe(402);
    // And straight to the facilitator: a settled authorization is a duplicate, never settled twice.
    const payload = JSON.parse(Buffer.from(paid.proof!, "base64").toString("utf8"));
    const facilitator = new HTTPFacilitatorClient({ url: t.sb.facilitatorUrl });
    const again = await facilitator.settle(payload, payload.accepted).catch((e: { errorReason?: string }) => e);
    expect(again).toMatchObject({ success: false, errorReason: "duplicate_settlement" });
    expect(await usdc(agent().address)).toBe(payerBefore - 10_000n);
    expect(await usdc(payee)).toBe(payeeBefore + 10_000n);
  });
});
