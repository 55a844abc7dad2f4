/**
 * Test helpers: a real reference service on 127.0.0.1 (in this process, port 0, a temp
 * home), a plain HTTP client for its API, and a payer that builds proofs with the x402
 * reference client scheme against the sandbox's own Solana RPC.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createKeyPairSignerFromBytes, type KeyPairSigner } from "@solana/kit";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import type { PaymentRequirements as X402Requirements } from "@x402/core/types";
import { startSandbox, type Sandbox, type SandboxOptions } from "../../src/sandbox/index.js";
import { associatedTokenAddress } from "../../src/sandbox/ledger/chain.js";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import { pollUntil } from "./wait.js";

export interface ApiResponse<T = any> {
  status: number;
  headers: Record<string, string>;
  body: T;
  text: string;
}

export interface CallOptions {
  body?: unknown;
  /** Sent as is, without JSON encoding (for malformed-body tests). */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** Omit the Authorization header. */
  noAuth?: boolean;
}

export function apiClient(baseUrl: string, apiKey: string) {
  return async function call<T = any>(method: string, path: string, opts: CallOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...(opts.noAuth ? {} : { authorization: `Bearer ${apiKey}` }) };
    let body: string | Buffer | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] = "application/json";
    }
    Object.assign(headers, opts.headers ?? {});
    const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: Object.fromEntries(res.headers), body: parsed as T, text };
  };
}

export type Call = ReturnType<typeof apiClient>;

export async function rpcCall<T = any>(rpcUrl: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const json = (await res.json()) as { result?: T; error?: { message: string } };
  if (json.error) throw new Error(`${method}: ${json.error.message}`);
  return json.result as T;
}

/** A raw JSON-RPC POST: the HTTP status and the parsed answer, errors included (for protocol tests). */
export async function rawRpc(url: string, body: string): Promise<{ status: number; json: any }> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
  return { status: res.status, json: await res.json() };
}

export interface TestSandbox {
  sb: Sandbox;
  call: Call;
  /** The demo wallet (funded with 1000 USDC at genesis): the owner in delegate mode. */
  wallet: KeyPairSigner;
  /** The agent key: no USDC of its own; the demo wallet granted it an allowance at first start. */
  agent: KeyPairSigner;
  /** Builds a proof (base64 x402 v2 PaymentPayload) with the reference client scheme. */
  proof(
    requirements: PaymentRequirements,
    opts?: { signer?: KeyPairSigner; accepted?: PaymentRequirements },
  ): Promise<string>;
  /** Atomic USDC balance of an owner's associated token account, read over the sandbox's RPC. */
  usdc(owner: string): Promise<bigint>;
  /** Quotes an intent and returns the quote body. */
  quote(action: string, input: Record<string, unknown>, budget?: string): Promise<any>;
  close(): Promise<void>;
}

export const SERVER_INPUT = { region: "eu-west-1", plan: "small", durationHours: 24 } as const;

export async function startTestSandbox(opts: Partial<SandboxOptions> = {}): Promise<TestSandbox> {
  const home = opts.home ?? mkdtempSync(join(tmpdir(), "pam-sandbox-"));
  // The EVM ledger only where a test asks for it (`evm: true`): the others are about Solana and
  // spare starting an anvil node each.
  const sb = await startSandbox({
    providerDelayMs: 50,
    log: () => undefined,
    evm: false,
    ...opts,
    home,
    port: opts.port ?? 0,
  });
  const call = apiClient(sb.baseUrl, sb.apiKey);
  const keypair = (path: string) =>
    createKeyPairSignerFromBytes(Uint8Array.from(JSON.parse(readFileSync(path, "utf8")) as number[]));
  const wallet = await keypair(sb.walletPath);
  const agent = await keypair(sb.agentKeyPath!);
  const clients = new Map<string, ExactSvmScheme>();
  const proof: TestSandbox["proof"] = async (requirements, o = {}) => {
    const signer = o.signer ?? wallet;
    let client = clients.get(signer.address);
    if (!client) {
      client = new ExactSvmScheme(signer, { rpcUrl: sb.rpcUrl });
      clients.set(signer.address, client);
    }
    const result = await client.createPaymentPayload(2, requirements as unknown as X402Requirements);
    const payload = { ...result, accepted: o.accepted ?? requirements };
    return Buffer.from(JSON.stringify(payload)).toString("base64");
  };
  const usdc = async (owner: string) => {
    const ata = await associatedTokenAddress(owner, sb.asset);
    try {
      const result = await rpcCall<{ value: { amount: string } }>(sb.rpcUrl, "getTokenAccountBalance", [ata]);
      return BigInt(result.value.amount);
    } catch {
      return 0n;
    }
  };
  const quote = async (action: string, input: Record<string, unknown>, budget = "1000") => {
    const res = await call("POST", "/quotes", {
      body: { action, input, budget: { amount: budget, currency: "USDC" } },
    });
    if (res.status !== 201) throw new Error(`quote failed: ${res.status} ${res.text}`);
    return res.body;
  };
  return {
    sb,
    call,
    wallet,
    agent,
    proof,
    usdc,
    quote,
    async close() {
      await sb.close();
      if (!opts.home) rmSync(home, { recursive: true, force: true });
    },
  };
}

/** Polls an execution until `done(record)` or the deadline. */
export async function waitForExecution(
  call: Call,
  executionId: string,
  done: (e: any) => boolean,
  timeoutMs = 10_000,
): Promise<any> {
  const found = await pollUntil(
    () => call("GET", `/executions/${executionId}`),
    (res) => res.status === 200 && done(res.body),
    { timeoutMs },
  );
  if (!found.done) throw new Error(`execution ${executionId} did not reach the expected state: ${found.value.text}`);
  return found.value.body;
}
