/**
 * Delegated spending: the agent key pays from the owner's USDC token account as its SPL
 * Token delegate, within the allowance the owner granted on chain (ApproveChecked). The
 * token program refuses any transfer past what is left of it, whoever holds the agent key:
 * that ceiling holds against anything running as the user, which no local check can.
 *
 * The proof is transfer.ts's, the reference client's layout, with the owner's token account
 * as the source and the agent key as the transfer's authority. The reference facilitator does
 * not require the source to belong to the authority, and its simulation enforces the allowance.
 *
 * Here: the owner's transactions that set the allowance (ApproveChecked, which replaces
 * it) and take it back (Revoke), for the `allowance` command, and the check of one handed to
 * `allowance submit` — what it changes, and what it would cost the owner to send.
 */
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  getU64Decoder,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  type TransactionSigner,
} from "@solana/kit";
import { getApproveCheckedInstruction, getRevokeInstruction } from "@solana-program/token";
import { formatDecimal, USDC_DECIMALS } from "../../../domain/money.js";
import type { Lifetime } from "./chain.js";
import { describeFee, type AllowanceFee } from "./allowance.js";
import { COMPUTE_BUDGET_PROGRAM, SET_COMPUTE_UNIT_LIMIT, SET_COMPUTE_UNIT_PRICE, withLifetime } from "./transfer.js";

/** What the owner's allowance transaction does. */
export type AllowanceChange = { kind: "grant"; amount: bigint } | { kind: "revoke" };

/**
 * The owner's transaction that sets (ApproveChecked: it replaces, it does not add) or
 * revokes the agent key's allowance on the owner's token account. The owner pays its fee.
 * With `owner` a signer it comes back signed; with an address, unsigned (for a wallet).
 */
export interface AllowanceTransactionInput {
  /** A signer: the transaction comes back signed; an address: unsigned, for a wallet. */
  owner: TransactionSigner | string;
  /** The owner's USDC token account. */
  account: string;
  mint: string;
  /** The agent key, the delegate. */
  agent: string;
  change: AllowanceChange;
  lifetime: Lifetime;
}

export async function allowanceTransaction(o: AllowanceTransactionInput): Promise<string> {
  const owner = typeof o.owner === "string" ? createNoopSigner(address(o.owner)) : o.owner;
  const ix =
    o.change.kind === "grant"
      ? getApproveCheckedInstruction({
          source: address(o.account),
          mint: address(o.mint),
          delegate: address(o.agent),
          owner,
          amount: o.change.amount,
          decimals: USDC_DECIMALS,
        })
      : getRevokeInstruction({ source: address(o.account), owner });
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(owner.address, m),
    withLifetime(o.lifetime),
    (m) => appendTransactionMessageInstructions([ix], m),
  );
  if (typeof o.owner === "string") return getBase64EncodedWireTransaction(compileTransaction(message));
  return getBase64EncodedWireTransaction(await partiallySignTransactionMessageWithSigners(message));
}

const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const APPROVE = 4;
const REVOKE = 5;
const APPROVE_CHECKED = 13;

/** Solana's fee per signature, and its compute budget when none is asked for (per instruction, and at most). */
const LAMPORTS_PER_SIGNATURE = 5_000n;
const DEFAULT_UNITS_PER_INSTRUCTION = 200_000;
const MAX_COMPUTE_UNITS = 1_400_000;
/**
 * The most an allowance transaction may cost its owner to be sent by `allowance submit`:
 * 0.00001 SOL. Our own grant or revoke (allowanceTransaction) costs half of it — one
 * signature, no compute-budget instruction, no priority fee; the other half leaves a wallet
 * room for a modest priority fee (200,000 units at 25,000 microlamports each is 5,000
 * lamports), and a prepared transaction that would make the owner pay more (a grant with a
 * priority fee cost an owner 0.14 SOL, 14,000 times this) is refused before it is sent.
 */
export const MAX_ALLOWANCE_FEE_LAMPORTS = 2n * LAMPORTS_PER_SIGNATURE;

export type AllowanceReading =
  { ok: true; change: AllowanceChange; signed: boolean; fee: AllowanceFee } | { ok: false; problem: string };

type Compiled = ReturnType<ReturnType<typeof getCompiledTransactionMessageDecoder>["decode"]>;
type CompiledInstruction = Extract<Compiled, { version: 0 }>["instructions"][number];

/** The compute budget an allowance transaction asks for, or why it may not be sent. */
function computeBudget(
  budget: readonly CompiledInstruction[],
  others: number,
): { unitLimit: number; microLamportsPerUnit: bigint } | { problem: string } {
  let limit: number | undefined;
  let price: bigint | undefined;
  for (const ix of budget) {
    const data = new Uint8Array(ix.data ?? []);
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    if ((ix.accountIndices ?? []).length > 0) return { problem: "a compute-budget instruction of it names accounts" };
    if (data[0] === SET_COMPUTE_UNIT_LIMIT && data.length === 5 && limit === undefined) limit = view.getUint32(1, true);
    else if (data[0] === SET_COMPUTE_UNIT_PRICE && data.length === 9 && price === undefined)
      price = view.getBigUint64(1, true);
    else
      return {
        problem:
          "its compute-budget instructions are not only one unit limit and one unit price (a grant needs no other)",
      };
  }
  return {
    unitLimit: Math.min(limit ?? DEFAULT_UNITS_PER_INSTRUCTION * others, MAX_COMPUTE_UNITS),
    microLamportsPerUnit: price ?? 0n,
  };
}

/** What a transaction costs its fee payer: the signatures' fee and the priority fee. */
function feeOf(signatures: number, unitLimit: number, microLamportsPerUnit: bigint): AllowanceFee {
  const base = LAMPORTS_PER_SIGNATURE * BigInt(signatures);
  const priority = (microLamportsPerUnit * BigInt(unitLimit) + 999_999n) / 1_000_000n;
  return { lamports: base + priority, base, priority, signatures, unitLimit, microLamportsPerUnit };
}

/**
 * What a (wallet-signed) transaction handed to `allowance submit` does, checked before it
 * is sent: exactly one SPL Token instruction that grants (Approve/ApproveChecked) or
 * revokes the allowance of this server's agent key on the owner's account, the owner paying
 * the fee — at most a unit limit and a unit price besides (what a wallet may add), the whole
 * fee within MAX_ALLOWANCE_FEE_LAMPORTS — and whether every signature is in place.
 */
export function readAllowanceTransaction(
  wire: string,
  e: { owner: string; account: string; agent: string; mint: string },
): AllowanceReading {
  let message: Compiled;
  let signatures: ReadonlyArray<Uint8Array | null>;
  try {
    const tx = getTransactionDecoder().decode(getBase64Encoder().encode(wire));
    message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
    signatures = Object.values(tx.signatures);
  } catch {
    return { ok: false, problem: "it is not a base64 Solana transaction" };
  }
  if (message.version !== "legacy" && message.version !== 0)
    return { ok: false, problem: "its message version is not one this client reads (legacy or v0)" };
  const keys = message.staticAccounts.map(String);
  if (keys[0] !== e.owner)
    return { ok: false, problem: `its fee payer is ${keys[0] ?? "(none)"}, not the owner ${e.owner}` };
  const changes: AllowanceChange[] = [];
  const budget: CompiledInstruction[] = [];
  for (const ix of message.instructions) {
    const program = keys[ix.programAddressIndex];
    if (program === String(COMPUTE_BUDGET_PROGRAM)) {
      budget.push(ix);
      continue;
    }
    if (program !== TOKEN_PROGRAM)
      return { ok: false, problem: `it calls program ${program ?? "(unknown)"}, not only the SPL Token program` };
    const change = tokenChange(ix, keys, e);
    if (!change)
      return {
        ok: false,
        problem: "its token instruction is not an allowance of this server's agent key on the owner's USDC account",
      };
    changes.push(change);
  }
  if (changes.length !== 1) return { ok: false, problem: `it makes ${changes.length} allowance changes, not one` };
  const asked = computeBudget(budget, message.instructions.length - budget.length);
  if ("problem" in asked) return { ok: false, problem: asked.problem };
  const fee = feeOf(message.header.numSignerAccounts, asked.unitLimit, asked.microLamportsPerUnit);
  if (fee.lamports > MAX_ALLOWANCE_FEE_LAMPORTS)
    return {
      ok: false,
      problem: `its fee would be ${describeFee(fee)}, above the ${formatDecimal(MAX_ALLOWANCE_FEE_LAMPORTS, 9)} SOL an allowance transaction may cost the owner (the one \`allowance grant --unsigned\` prints costs ${formatDecimal(LAMPORTS_PER_SIGNATURE, 9)} SOL)`,
    };
  const signed = signatures.length > 0 && signatures.every((s) => s !== null && s.some((b) => b !== 0));
  return { ok: true, change: changes[0]!, signed, fee };
}

/** The allowance change one SPL Token instruction makes on the owner's account for this agent key, if it is one. */
function tokenChange(
  ix: CompiledInstruction,
  keys: readonly string[],
  e: { owner: string; account: string; agent: string; mint: string },
): AllowanceChange | undefined {
  const data = new Uint8Array(ix.data ?? []);
  const accounts = (ix.accountIndices ?? []).map((i) => keys[i]);
  if (data[0] === REVOKE && accounts[0] === e.account && accounts[1] === e.owner) return { kind: "revoke" };
  if (
    data[0] === APPROVE_CHECKED &&
    data.length === 10 &&
    accounts[0] === e.account &&
    accounts[1] === e.mint &&
    accounts[2] === e.agent &&
    accounts[3] === e.owner
  )
    return { kind: "grant", amount: getU64Decoder().decode(data, 1) };
  if (
    data[0] === APPROVE &&
    data.length === 9 &&
    accounts[0] === e.account &&
    accounts[1] === e.agent &&
    accounts[2] === e.owner
  )
    return { kind: "grant", amount: getU64Decoder().decode(data, 1) };
  return undefined;
}
