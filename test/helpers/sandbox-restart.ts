/**
 * What the restart tests of the built CLI sandbox (test/sandbox/restart-*.test.ts) share:
 * the traffic's parameters, the service's own payment records read from its SQLite file, its
 * executions read over the API until they rest, USDC read from the ledger, and the set-up
 * and clean-up of a describe (the built CLI; every process started, every home made).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, expect } from "vitest";
import type { createSolanaRpc } from "@solana/kit";
import { associatedTokenAddress } from "../../src/sandbox/ledger/chain.js";
import { ensureBuilt, killAllStarted } from "./process.js";
import type { ApiResponse, Call } from "./sandbox.js";
import { pollUntil } from "./wait.js";

const USDC = 1_000_000n;
export const FUNDING = 1000n * USDC;
export const PROVIDER_DELAY_MS = 200;
export const LONG_DELAY_MS = 1_500;
const FINAL = new Set(["completed", "refunded"]);
export const ACTION = "servers.provision";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const serverInput = (i: number) => ({ region: "eu-west-1", plan: "small", durationHours: 1 + i });

export interface Request {
  method: string;
  path: string;
  body: unknown;
  headers: Record<string, string>;
}

export interface PaymentRow {
  payment_id: string;
  quote_id: string;
  status: string;
  transaction_sig: string | null;
  payer: string | null;
  amount: string;
}

/** The service's own payment records, read from its SQLite file (read-only, WAL reader). */
export function paymentRecords(home: string): PaymentRow[] {
  const db = new Database(join(home, "sandbox.sqlite"), { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare(`SELECT payment_id, quote_id, status, transaction_sig, payer, amount FROM payments ORDER BY payment_id`)
      .all() as PaymentRow[];
  } finally {
    db.close();
  }
}

export const send = (call: Call, r: Request) => call(r.method, r.path, { body: r.body, headers: r.headers });

/** All executions of the API key, newest first (paginated, bounded). */
export async function listExecutions(call: Call): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 20; page++) {
    const res: ApiResponse = await call("GET", `/executions?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
    expect(res.status).toBe(200);
    items.push(...res.body.items);
    cursor = res.body.nextCursor;
    if (!cursor) return items;
  }
  throw new Error("more than 20 pages of executions");
}

/** Polls until every execution of the key is completed or refunded (bounded). */
export async function waitAllFinal(call: Call, timeoutMs: number): Promise<any[]> {
  const isOpen = (e: any) => !FINAL.has(e.status);
  const found = await pollUntil(
    () => listExecutions(call),
    (items) => !items.some(isOpen),
    { timeoutMs, intervalMs: 100 },
  );
  if (!found.done) {
    const open = found.value.filter(isOpen).map((e) => [e.executionId, e.status]);
    throw new Error(`executions still not final after ${timeoutMs} ms: ${JSON.stringify(open)}`);
  }
  return found.value;
}

/** Amount (atomic) moved out of `owner`'s token account by a landed transaction, per getTransaction meta. */
export function tokenDelta(tx: any, owner: string, mint: string): bigint {
  const pick = (list: any[]) => list.find((b) => b.owner === owner && b.mint === mint);
  const pre = pick(tx.meta.preTokenBalances ?? []);
  const post = pick(tx.meta.postTokenBalances ?? []);
  return BigInt(post?.uiTokenAmount.amount ?? "0") - BigInt(pre?.uiTokenAmount.amount ?? "0");
}

export async function usdcBalance(
  rpc: ReturnType<typeof createSolanaRpc>,
  owner: string,
  mint: string,
): Promise<bigint> {
  const ata = await associatedTokenAddress(owner, mint);
  return BigInt((await rpc.getTokenAccountBalance(ata).send()).value.amount);
}

/**
 * Registers a describe's set-up (the built CLI) and clean-up (every CLI sandbox started,
 * every home made); `newHome` makes a fresh home for one sandbox.
 */
export function restartFixture(): { newHome: () => string } {
  const homes: string[] = [];
  beforeAll(() => {
    ensureBuilt();
  }, 60_000);

  afterAll(() => {
    killAllStarted();
    for (const home of homes) rmSync(home, { recursive: true, force: true });
  });

  return {
    newHome(): string {
      const home = mkdtempSync(join(tmpdir(), "pam-restart-"));
      homes.push(home);
      return home;
    },
  };
}
