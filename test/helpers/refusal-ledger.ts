/**
 * Every refusal a hostile suite got, held against the ledger (issue 30): a refusal that says
 * nothing of its purchase was charged or paid — in its message, or in the hint the MCP layer
 * gives with it (`whatToDo`) — must end with no transfer for that purchase on the ledger,
 * after every proof of it that a service kept had its chance to land.
 *
 * A refusal is recorded when the call gets it (`record`); its claim covers the proofs its
 * intent had signed by then (the journal's payment records signed no later). At the end
 * (`check`), every proof a service was handed for one of those quotes (as a proxy or a seller
 * saw it) is sent to the facilitator's /settle once more — a service that kept it could do
 * that whenever its blockhash lives — and then the payer's token account history, read over
 * the ledger's RPC, must hold no transfer carrying any of their memos. On EVM (a payment
 * journaled with its authorization's nonce) the kept proofs are found by that nonce, and the
 * nonce must be unused on the EVM ledger (USDC's `authorizationState`, read over its RPC): a
 * used one is a transfer that landed.
 */
import { createPublicClient, http, parseAbi, type Address, type Hex } from "viem";
import { expect } from "vitest";
import { openJournal } from "../../src/app/index.js";
import { associatedTokenAddress } from "../../src/domain/token.js";
import { PaidActionError } from "../../src/engine/errors.js";
import type { JournalStore } from "../../src/engine/journal/port.js";
import { hintFor } from "../../src/mcp/hints.js";
import { decodeWireTransaction, memoOf } from "../../src/sandbox/ledger/tx-wire.js";
import type { SeenRequest } from "./proxy.js";
import { rpcCall, type TestSandbox } from "./sandbox.js";
import { saysUncharged } from "./says-uncharged.js";

/** A refusal as the agent reads it: the MCP layer's structured error (engine errors are shaped the same way). */
export interface Said {
  code: string;
  message: string;
  whatToDo: string;
  intentId?: string;
  intentKey?: string;
}

/** Where the refusals' purchases were journaled and paid. */
export interface LedgerSide {
  /** The journal of each recorded refusal, by the name it was recorded with (one: any name). */
  journals: JournalStore | Record<string, JournalStore>;
  /** The ledger's RPC, the USDC mint, and the wallet a payment without a journaled source paid from. */
  rpcUrl: string;
  mint: string;
  wallet: string;
  /** The facilitator kept proofs are settled through; absent: none is replayed. */
  facilitatorUrl?: string;
  /** Requests a service or seller was handed (a proxy's or a seller's record): the proofs it could keep. */
  seen?: ReadonlyArray<Pick<SeenRequest, "headers" | "body">>;
  /** The EVM ledger's RPC and USDC, for payments journaled with an authorization's nonce. */
  evm?: { rpcUrl: string; asset: string };
}

interface Recorded extends Said {
  at: number;
  journal: string;
}

/** The proofs a request carried: an execution's header, /payments/confirm's body, a resource's PAYMENT-SIGNATURE. */
function proofsIn(r: Pick<SeenRequest, "headers" | "body">): string[] {
  const out: string[] = [];
  for (const h of ["x-payment-proof", "payment-signature"]) {
    const v = r.headers[h];
    if (typeof v === "string") out.push(v);
  }
  try {
    const body = JSON.parse(r.body) as { paymentProof?: unknown };
    if (typeof body?.paymentProof === "string") out.push(body.paymentProof);
  } catch {
    // not JSON: no proof in the body
  }
  return out;
}

/** A proof's payload and the memo its transfer carries (`[len] text`); undefined when it is not one. */
function readProof(proof: string): { payload: any; memo: string } | undefined {
  try {
    const payload = JSON.parse(Buffer.from(proof, "base64").toString("utf8"));
    const memo = memoOf(decodeWireTransaction(String(payload?.payload?.transaction)));
    return memo === null ? undefined : { payload, memo };
  } catch {
    return undefined;
  }
}

/** An EVM proof's payload and its authorization's nonce (lower-case); undefined when it is not one. */
function readAuthorization(proof: string): { payload: any; nonce: string } | undefined {
  try {
    const payload = JSON.parse(Buffer.from(proof, "base64").toString("utf8"));
    const a = payload?.payload?.authorization;
    if (typeof a?.nonce !== "string") return undefined;
    return { payload, nonce: a.nonce.toLowerCase() };
  } catch {
    return undefined;
  }
}

const AUTHORIZATION_STATE = parseAbi(["function authorizationState(address, bytes32) view returns (bool)"]);

/** Whether the authorizer's nonce is used (or canceled) on the EVM ledger, read over its RPC. */
function nonceUsed(evm: NonNullable<LedgerSide["evm"]>, authorizer: string, nonce: string): Promise<boolean> {
  return createPublicClient({ transport: http(evm.rpcUrl) }).readContract({
    address: evm.asset as Address,
    abi: AUTHORIZATION_STATE,
    functionName: "authorizationState",
    args: [authorizer as Address, nonce as Hex],
  });
}

/** Sends a kept proof to the facilitator's /settle, as the one who kept it could. */
async function settleAgain(facilitatorUrl: string, payload: any): Promise<void> {
  await fetch(`${facilitatorUrl}/settle`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: payload.accepted }),
  }).catch(() => undefined);
}

/** Every memo of the transfers an account's history holds, read page by page over the RPC. */
async function memosOf(rpcUrl: string, account: string): Promise<string[]> {
  const memos: string[] = [];
  let before: string | undefined;
  for (;;) {
    const page = await rpcCall<Array<{ signature: string; memo: string | null; err: unknown }>>(
      rpcUrl,
      "getSignaturesForAddress",
      [account, { limit: 1000, ...(before ? { before } : {}) }],
    );
    for (const e of page) if (e.memo !== null && e.err === null) memos.push(e.memo);
    if (page.length < 1000) return memos;
    before = page[page.length - 1]!.signature;
  }
}

const isStore = (j: LedgerSide["journals"]): j is JournalStore =>
  typeof (j as Partial<JournalStore>).intentByKey === "function";

/** A memo as an RPC reports it (`[len] text`, as Solana's do, or the text alone) carries `quoteId`. */
const carries = (memo: string, quoteId: string) => memo === quoteId || memo.endsWith(`] ${quoteId}`);

/** A test sandbox's side of the check: its RPC, mint, demo wallet and facilitator. */
export function sandboxSide(t: TestSandbox): Omit<LedgerSide, "journals"> {
  return {
    rpcUrl: t.sb.rpcUrl,
    mint: t.sb.asset,
    wallet: t.wallet.address,
    facilitatorUrl: t.sb.facilitatorUrl,
    ...(t.sb.evm ? { evm: { rpcUrl: t.sb.evm.rpcUrl, asset: t.sb.evm.asset } } : {}),
  };
}

/** `ledger.check` on the journal an MCP server's environment names (SQLite or PostgreSQL), opened for it. */
export async function checkOnJournalOf(
  ledger: RefusalLedger,
  env: NodeJS.ProcessEnv,
  side: Omit<LedgerSide, "journals">,
): ReturnType<RefusalLedger["check"]> {
  const opened = await openJournal(env);
  try {
    return await ledger.check({ ...side, journals: opened.journal });
  } finally {
    await opened.close();
  }
}

export class RefusalLedger {
  private readonly recorded: Recorded[] = [];

  /** Every refusal recorded so far. */
  get refusals(): number {
    return this.recorded.length;
  }

  /** Records a refusal a call got, now; `journal` names the journal its purchase is in, where there are several. */
  record(r: PaidActionError | Said, journal = "default"): void {
    const said: Said =
      r instanceof PaidActionError
        ? {
            code: r.code,
            message: r.message,
            whatToDo: hintFor(r),
            ...(typeof r.context.intentId === "string" ? { intentId: r.context.intentId } : {}),
            ...(typeof r.context.intentKey === "string" ? { intentKey: r.context.intentKey } : {}),
          }
        : r;
    this.recorded.push({ ...said, at: Date.now(), journal });
  }

  /**
   * Holds every refusal that says nothing was charged or paid to the ledger (see the header).
   * Returns how many refusals there were, how many made that claim, how many proofs the claims
   * covered, and how many kept proofs were replayed.
   */
  async check(side: LedgerSide): Promise<{ refusals: number; claims: number; proofs: number; replayed: number }> {
    const claims = this.recorded.filter((r) => saysUncharged(r.message, r.whatToDo));
    const covered = new Map<string, { said: Recorded; source: string }>();
    // EVM payments, by their authorization's nonce (lower-case): no memo tells them apart.
    const authorizations = new Map<string, { said: Recorded; quoteId: string; payer: string }>();
    for (const said of claims) {
      const journal = isStore(side.journals) ? side.journals : side.journals[said.journal]!;
      const intentId =
        said.intentId ?? (said.intentKey ? (await journal.intentByKey(said.intentKey))?.intentId : undefined);
      if (intentId === undefined) continue; // refused before any purchase was recorded
      for (const p of await journal.paymentsOf(intentId)) {
        if (p.signedAt > said.at) continue; // signed after the refusal (a later attempt): not what it spoke of
        if (p.nonce) {
          authorizations.set(p.nonce.toLowerCase(), { said, quoteId: p.quoteId, payer: p.payer ?? side.wallet });
          continue;
        }
        const source = p.source ?? (await associatedTokenAddress(p.payer ?? side.wallet, p.mint ?? side.mint));
        covered.set(p.quoteId, { said, source });
      }
    }
    // Every kept proof for a covered quote gets its chance: settled through the facilitator, as its holder could.
    let replayed = 0;
    if (side.facilitatorUrl)
      for (const request of side.seen ?? [])
        for (const proof of proofsIn(request)) {
          const auth = readAuthorization(proof);
          if (auth) {
            if (!authorizations.has(auth.nonce)) continue;
            replayed++;
            await settleAgain(side.facilitatorUrl, auth.payload);
            continue;
          }
          const read = readProof(proof);
          if (!read || ![...covered.keys()].some((quoteId) => carries(read.memo, quoteId))) continue;
          replayed++;
          await settleAgain(side.facilitatorUrl, read.payload);
        }
    for (const [nonce, { said, quoteId, payer }] of authorizations) {
      if (!side.evm)
        throw new Error(`an EVM payment (quote ${quoteId}) was covered, but the check names no EVM ledger`);
      expect(
        await nonceUsed(side.evm, payer, nonce),
        `${said.code} said nothing was charged or paid (${said.message} / ${said.whatToDo}), but a transfer for quote ${quoteId} is on the ledger (its authorization's nonce ${nonce} is used)`,
      ).toBe(false);
    }
    const histories = new Map<string, string[]>();
    for (const [quoteId, { said, source }] of covered) {
      if (!histories.has(source)) histories.set(source, await memosOf(side.rpcUrl, source));
      const landed = histories.get(source)!.filter((m) => carries(m, quoteId));
      expect(
        landed,
        `${said.code} said nothing was charged or paid (${said.message} / ${said.whatToDo}), but a transfer for quote ${quoteId} is on the ledger`,
      ).toEqual([]);
    }
    const summary = {
      refusals: this.recorded.length,
      claims: claims.length,
      proofs: covered.size + authorizations.size,
      replayed,
    };
    if (process.env.REFUSAL_LEDGER_LOG) process.stderr.write(`[refusal ledger] ${JSON.stringify(summary)}\n`);
    return summary;
  }
}
