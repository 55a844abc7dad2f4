/**
 * What the fuzzed server and the chain say, read back by the fuzz test
 * (test/hostile/fuzz.test.ts): a tool result's structured content, the spending once nothing
 * is reserved any more, every execution list_executions gives, and the wallet's USDC.
 */
import { readFileSync } from "node:fs";
import { expect } from "vitest";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { parseDecimal } from "../../../src/domain/money.js";
import { associatedTokenAddress } from "../../../src/domain/token.js";
import type { SandboxInfo } from "../../../src/sandbox/index.js";
import { rpcCall } from "../sandbox.js";
import { pollUntil } from "../wait.js";

export function sc(r: CallToolResult | undefined): any {
  return r?.structuredContent;
}

export async function walletUsdc(info: SandboxInfo): Promise<bigint> {
  const wallet = await createKeyPairSignerFromBytes(
    Uint8Array.from(JSON.parse(readFileSync(info.walletPath, "utf8")) as number[]),
  );
  const ata = await associatedTokenAddress(wallet.address, info.asset);
  const res = await rpcCall<{ value: { amount: string } }>(info.rpcUrl, "getTokenAccountBalance", [ata]);
  return BigInt(res.value.amount);
}

/**
 * get_spending, once nothing is reserved any more, or as it stands after 10 s (an intent left
 * for a human keeps its reservation: the caller compares what it gets).
 */
export async function spendingOnceSettled(client: Client): Promise<any> {
  const spendingOf = async () =>
    sc(
      (await client.callTool({ name: "get_spending", arguments: {} }, undefined, {
        timeout: 10_000,
      })) as CallToolResult,
    );
  const settled = await pollUntil(spendingOf, (s) => parseDecimal(s.reserved) === 0n, {
    timeoutMs: 10_000,
    intervalMs: 250,
  });
  return settled.value;
}

/** Every execution list_executions gives, page by page, by executionId. */
export async function listedExecutions(client: Client): Promise<Map<string, any>> {
  const listed = new Map<string, any>();
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const res = (await client.callTool(
      { name: "list_executions", arguments: { limit: 100, ...(cursor ? { cursor } : {}) } },
      undefined,
      { timeout: 10_000 },
    )) as CallToolResult;
    expect(res.isError, JSON.stringify(sc(res))).toBeFalsy();
    for (const item of sc(res).items) listed.set(item.executionId, item);
    cursor = sc(res).nextCursor ?? undefined;
    if (!cursor) break;
  }
  return listed;
}
