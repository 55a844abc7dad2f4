/**
 * A hand-made x402 seller in this process, on 127.0.0.1:0, for the lies the stock sellers
 * (sellers.ts) cannot tell: every path is one paid resource whose 402 carries the requirement
 * the test writes (any `extra`: a fee payer, a memo). A paid request is settled through the
 * sandbox's facilitator (`/settle`), or — `settle: "ledger"` — sent to the sandbox's ledger by
 * the seller itself, as a seller holding a fully signed proof could. Every proof it is handed
 * is kept, for the test to look at. By default its requirement is on the sandbox's Solana
 * ledger; `requirement` writes any of its other fields (an EVM network, asset and payee, a
 * timeout) as the lie has them.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestSandbox } from "./sandbox.js";

export interface LyingSeller {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** The proofs (base64 PaymentPayload) it was handed, with the path each paid for. */
  proofs: Array<{ path: string; proof: string }>;
  close(): Promise<void>;
}

export interface LyingSellerOptions {
  /** The requirement's `extra` for a path (the facilitator's fee payer, unless the lie says otherwise). */
  extra: (path: string) => Record<string, unknown>;
  /** Atomic USDC units (default 10000: 0.01 USDC). */
  amount?: string;
  /** Who sends a paid request's transaction to the chain: the sandbox's facilitator, or the seller itself (Solana). */
  settle: "facilitator" | "ledger";
  /** The requirement's fields other than `extra` and `amount`, for a path (default: the sandbox's Solana ones). */
  requirement?: (path: string) => Record<string, unknown>;
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64");

export async function startLyingSeller(t: TestSandbox, o: LyingSellerOptions): Promise<LyingSeller> {
  const proofs: LyingSeller["proofs"] = [];
  let url = "";
  const requirement = (path: string) => ({
    scheme: "exact",
    network: t.sb.network,
    amount: o.amount ?? "10000",
    asset: t.sb.asset,
    payTo: t.sb.keys.seller.address,
    maxTimeoutSeconds: 60,
    ...o.requirement?.(path),
    extra: o.extra(path),
  });

  async function settle(path: string, payload: any): Promise<{ ok: boolean; transaction?: string; why?: string }> {
    if (o.settle === "ledger") {
      const r = t.sb.ledger.submit(String(payload?.payload?.transaction));
      return r.ok ? { ok: true, transaction: r.signature } : { ok: false, why: r.error };
    }
    const res = await fetch(`${t.sb.facilitatorUrl}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirement(path) }),
    });
    const body = (await res.json()) as { success?: boolean; transaction?: string; errorReason?: string };
    return body.success ? { ok: true, transaction: body.transaction } : { ok: false, why: body.errorReason };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    req.resume(); // the body is not read
    await new Promise<void>((r) => (req.readableEnded ? r() : req.once("end", r)));
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const signature = req.headers["payment-signature"];
    const challenge = () => {
      res.writeHead(402, {
        "content-type": "application/json",
        "payment-required": b64({ x402Version: 2, resource: { url: `${url}${path}` }, accepts: [requirement(path)] }),
      });
      res.end("{}");
    };
    if (typeof signature !== "string") return challenge();
    proofs.push({ path, proof: signature });
    const settled = await settle(path, JSON.parse(Buffer.from(signature, "base64").toString("utf8")));
    if (!settled.ok) return challenge();
    res.writeHead(200, {
      "content-type": "application/json",
      "payment-response": b64({ success: true, transaction: settled.transaction, network: requirement(path).network }),
    });
    res.end(JSON.stringify({ path, paid: true }));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      res.writeHead(500);
      res.end(String(e));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    proofs,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
