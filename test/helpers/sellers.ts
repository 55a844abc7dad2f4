/**
 * Stock x402 sellers for tests: `startSeller` runs seller.mjs in a child process of its own
 * (a temp dir as cwd, 127.0.0.1:0) — @x402/express's or @x402/hono's `paymentMiddleware` with
 * `x402ResourceServer(new HTTPFacilitatorClient({url: facilitatorUrl}))` and @x402/svm's exact
 * server scheme (@x402/evm's on an eip155 network): code nobody here wrote, settling through
 * whatever facilitator it is given.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const SCRIPT = fileURLToPath(new URL("./seller.mjs", import.meta.url));

export type SellerMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface SellerRoute {
  method: SellerMethod;
  /** An Express/Hono path. */
  path: string;
  /** A money price ("$0.01": USDC of the network) or atomic units of an asset; absent: a free route. */
  price?: string | { amount: string; asset: string };
  description?: string;
  /** Declare the Bazaar discovery extension on this route (default: the seller's `bazaar`). */
  bazaar?: boolean;
  /**
   * What the handler answers. Default: 200 with `{data: …}` for GET/DELETE, and the request's
   * JSON body echoed for POST/PUT/PATCH. `status` ≥ 400 means the stock middleware settles nothing.
   */
  respond?: {
    status?: number;
    headers?: Record<string, string>;
    json?: unknown;
    echo?: boolean;
    text?: string;
    contentType?: string;
    /** This many deterministic bytes (application/octet-stream unless `contentType`). */
    bytes?: number;
  };
}

/**
 * A lying proxy in front of the stock seller: once a paid request was settled, it answers
 * a 500, or a fresh 402 challenge, instead of the resource — and drops PAYMENT-RESPONSE; or
 * (`tamper-offer`) it changes the payee its 402's signed offers name, keeping their signatures.
 */
export type SellerLie = "500-after-settle" | "402-after-settle" | "tamper-offer";

export interface SellerOptions {
  framework: "express" | "hono";
  facilitatorUrl: string;
  /** CAIP-2, e.g. the sandbox's `solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1`, or its EVM ledger's `eip155:84532`. */
  network: string;
  payTo: string;
  /** Default: `DEFAULT_SELLER_ROUTES`. */
  routes?: SellerRoute[];
  /** Declare the Bazaar discovery extension on every paid route. */
  bazaar?: boolean;
  /** Declare the payment-identifier extension (optional, not required) on every paid route. */
  paymentIdentifier?: boolean;
  /**
   * Sign offers and receipts (x402 offer-receipt, @x402/extensions' own issuer and extension),
   * with the transaction in the receipt: `true`, JWS ES256 by a fresh P-256 key named by a
   * did:jwk; `{eip712: key}`, EIP-712 by that EVM private key (0x hex), named by a did:pkh.
   */
  offerReceipt?: boolean | { eip712: string };
  lie?: SellerLie;
}

/** What the seller's public face saw, in order (its own log endpoint excepted). */
export interface SeenRequest {
  method: string;
  /** Path and query. */
  path: string;
  /** Whether it carried PAYMENT-SIGNATURE or X-PAYMENT. */
  paid: boolean;
  /** The payment-identifier extension's id in the payment, if any. */
  paymentIdentifier: string | null;
  status: number;
}

export interface Seller {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  pid: number;
  requests(): Promise<SeenRequest[]>;
  /** Kills the process by its pid and removes its temp dir. */
  stop(): Promise<void>;
}

/** `GET /paid/data` ($0.01, `{data: …}`), `POST /paid/echo` ($0.02, echoes the JSON body), `GET /free`. */
export const DEFAULT_SELLER_ROUTES: SellerRoute[] = [
  { method: "GET", path: "/paid/data", price: "$0.01", description: "Some paid data" },
  { method: "POST", path: "/paid/echo", price: "$0.02", description: "Echoes a JSON body, paid" },
  { method: "GET", path: "/free", respond: { json: { free: true } } },
];

const running = new Set<() => Promise<void>>();

/** Stops every seller still running (for an afterAll). */
export async function stopAllSellers(): Promise<void> {
  await Promise.all([...running].map((stop) => stop()));
}

export async function startSeller(opts: SellerOptions, timeoutMs = 20_000): Promise<Seller> {
  const dir = mkdtempSync(join(tmpdir(), "pam-seller-"));
  const config = { ...opts, routes: opts.routes ?? DEFAULT_SELLER_ROUTES };
  writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  const child = spawn(process.execPath, [SCRIPT, join(dir, "config.json")], {
    cwd: dir,
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, NODE_OPTIONS: "" },
  });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    running.delete(stop);
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, "SIGTERM");
    const timer = setTimeout(() => child.exitCode === null && process.kill(child.pid!, "SIGKILL"), 3_000);
    await exited;
    clearTimeout(timer);
    rmSync(dir, { recursive: true, force: true });
  };
  running.add(stop);
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`seller did not start in ${timeoutMs} ms: ${stderr}`)), timeoutMs);
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      const line = out.split("\n")[0];
      if (out.includes("\n") && line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { port: number }).port);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`seller exited before listening: ${stderr}`));
    });
  }).catch(async (e: unknown) => {
    await stop();
    throw e;
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    pid: child.pid!,
    async requests() {
      const res = await fetch(`${url}/__seller/requests`);
      return (await res.json()) as SeenRequest[];
    },
    stop,
  };
}
