/**
 * `receipt ID [--out FILE]`: one purchase's receipt (an execution's executionId, or a
 * purchase's intentId), a self-contained JSON document signed by the key that paid; and
 * `receipt verify FILE [--rpc URL]`: that document checked with no journal and no
 * configuration — every signature in it, and, given an RPC, the transfer on chain.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { openPaidActions } from "../app/index.js";
import { verifyReceipt, type Verdict } from "../engine/index.js";
import { UsageError } from "./args.js";

export type ReceiptAction =
  { kind: "make"; id: string; out?: string } | { kind: "verify"; file: string; rpc?: string; json?: boolean };

/** What `receipt` is asked to do, from its positionals and options; a usage error for anything else. */
export function receiptAction(positionals: string[], v: { out?: string; rpc?: string; json?: boolean }): ReceiptAction {
  const [first, second] = positionals;
  if (first === undefined) throw new UsageError("receipt needs an executionId or intentId, or: verify FILE");
  if (first === "verify") {
    if (second === undefined) throw new UsageError("receipt verify needs the receipt's file");
    if (v.out !== undefined) throw new UsageError("--out is for making a receipt, not for verify");
    if (v.rpc !== undefined && !/^https?:\/\/\S+$/.test(v.rpc))
      throw new UsageError(
        `--rpc must be an http(s) URL of a JSON-RPC endpoint, not ${JSON.stringify(v.rpc.slice(0, 60))}`,
      );
    return { kind: "verify", file: second, ...(v.rpc ? { rpc: v.rpc } : {}), ...(v.json ? { json: true } : {}) };
  }
  if (second !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(second.slice(0, 40))}`);
  if (v.rpc !== undefined || v.json) throw new UsageError("--rpc and --json are for receipt verify");
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(first))
    throw new UsageError(`${JSON.stringify(first.slice(0, 40))} is not an executionId or intentId`);
  return { kind: "make", id: first, ...(v.out !== undefined ? { out: v.out } : {}) };
}

/** Makes a receipt from this home's journal and the payment's rail (which signs it with the key that paid). */
async function make(env: NodeJS.ProcessEnv, a: Extract<ReceiptAction, { kind: "make" }>): Promise<number> {
  const pa = await openPaidActions({ env, reconcile: false, resume: false });
  try {
    const made = await pa.engine.receipt(a.id);
    if (!made.ok) {
      process.stderr.write(`paid-actions-mcp: ${made.message}\n`);
      return 1;
    }
    const text = `${JSON.stringify(made.receipt, null, 2)}\n`;
    if (a.out === undefined) process.stdout.write(text);
    else {
      writeFileSync(a.out, text);
      process.stderr.write(
        `Receipt of ${made.receipt.id} written to ${a.out} (check it: paid-actions-mcp receipt verify ${a.out})\n`,
      );
    }
    return 0;
  } finally {
    await pa.close();
  }
}

/** A verdict's lines for a person: each check, ok or FAIL, with what it found. */
export function verdictLines(v: Verdict): string[] {
  return v.checks.map((c) => `${c.holds ? "ok  " : "FAIL"} ${c.check}: ${c.detail}`);
}

/** Checks a receipt's file: exit 0 when it holds, 3 with what does not. */
async function verify(a: Extract<ReceiptAction, { kind: "verify" }>): Promise<number> {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(a.file, "utf8"));
  } catch (e) {
    process.stderr.write(`paid-actions-mcp: ${a.file} is not a JSON receipt (${(e as Error).message.slice(0, 200)})\n`);
    return 3;
  }
  const verdict = await verifyReceipt(json, a.rpc ? { rpcUrl: a.rpc } : {});
  if (a.json) process.stdout.write(`${JSON.stringify(verdict, null, 2)}\n`);
  else {
    for (const line of verdictLines(verdict)) process.stdout.write(`${line}\n`);
    process.stdout.write(
      verdict.holds
        ? `The receipt holds${a.rpc ? ", and its transfer is on chain as stated" : " (add --rpc URL to check its transfer on chain)"}.\n`
        : `The receipt does not hold: ${verdict.checks
            .filter((c) => !c.holds)
            .map((c) => c.check)
            .join(", ")}.\n`,
    );
  }
  return verdict.holds ? 0 : 3;
}

export async function receiptCommand(
  env: NodeJS.ProcessEnv,
  a: ReceiptAction,
  sqliteProblem: () => Promise<string | undefined>,
): Promise<number> {
  if (a.kind === "verify") return verify(a);
  // Only making one opens the journal: verify runs anywhere, with no SQLite at all.
  const problem = await sqliteProblem();
  if (problem) {
    process.stderr.write(`${problem}\n`);
    return 1;
  }
  return make(env, a);
}
