/**
 * Helpers for payment tests: reading and rewriting x402 v2 proofs, building hostile
 * transactions by hand, and preparing extra accounts on the sandbox ledger (a second SPL
 * mint, another payee's token account).
 */
import {
  address,
  appendTransactionMessageInstructions,
  blockhash as toBlockhash,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getTransactionDecoder,
  none,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  some,
  type Address,
  type Instruction,
} from "@solana/kit";
import { TOKEN_PROGRAM_ADDRESS, getMintEncoder, getTransferCheckedInstruction } from "@solana-program/token";
import { associatedTokenAddress } from "../../src/sandbox/ledger/chain.js";
import type { PaymentRequirements } from "../../src/domain/wire.js";
import { rpcCall, type TestSandbox } from "./sandbox.js";

export const COMPUTE_BUDGET_PROGRAM = address("ComputeBudget111111111111111111111111111111");
export const MEMO_PROGRAM = address("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");

/** The decoded x402 v2 PaymentPayload a proof carries. */
export interface ProofPayload {
  x402Version: number;
  accepted: PaymentRequirements;
  payload: { transaction: string };
  [k: string]: unknown;
}

export function decodeProof(proof: string): ProofPayload {
  return JSON.parse(Buffer.from(proof, "base64").toString("utf8")) as ProofPayload;
}

export function encodeProof(payload: unknown): string {
  return Buffer.from(JSON.stringify(payload)).toString("base64");
}

/** The same transaction bytes, presented with another `accepted`. */
export function withAccepted(proof: string, accepted: PaymentRequirements): string {
  return encodeProof({ ...decodeProof(proof), accepted });
}

/** The same proof with its transaction replaced. */
export function withTransaction(proof: string, transaction: string): string {
  const p = decodeProof(proof);
  return encodeProof({ ...p, payload: { ...p.payload, transaction } });
}

/** The signer addresses of a wire transaction, in signature-slot order. */
export function signerSlots(wireBase64: string): string[] {
  const tx = getTransactionDecoder().decode(Buffer.from(wireBase64, "base64"));
  return Object.keys(tx.signatures);
}

/**
 * Flips one bit of the signature in `slot` of a base64 wire transaction. The signatures
 * section is a compact-u16 count followed by 64-byte signatures; the message (and so its
 * hash) is untouched.
 */
export function flipSignatureBit(wireBase64: string, slot: number): string {
  const bytes = Buffer.from(wireBase64, "base64");
  const count = bytes[0]!;
  if (count >= 0x80) throw new Error("more than 127 signatures: not a transaction these tests build");
  if (slot >= count) throw new Error(`the transaction has ${count} signature slots, not ${slot + 1}`);
  const at = 1 + slot * 64 + 17;
  bytes[at] = bytes[at]! ^ 0x01;
  return bytes.toString("base64");
}

/** The 64 bytes of one signature slot. */
export function signatureSlotBytes(wireBase64: string, slot: number): Buffer {
  const bytes = Buffer.from(wireBase64, "base64");
  return bytes.subarray(1 + slot * 64, 1 + (slot + 1) * 64);
}

/** Atomic balance of `owner`'s associated token account for `mint` (0 when it has none). */
export async function tokenBalance(t: TestSandbox, owner: string, mint: string): Promise<bigint> {
  const ata = await associatedTokenAddress(owner, mint);
  const token = t.sb.ledger.tokenAccount(ata);
  return token ? token.amount : 0n;
}

/** A fresh SPL mint (classic token program, 6 decimals) whose authority is the sandbox's mint authority. */
export async function createSecondMint(t: TestSandbox): Promise<Address> {
  const mint = (await generateKeyPairSigner()).address;
  t.sb.ledger.setAccount({
    address: mint,
    lamports: 1_461_600n,
    owner: TOKEN_PROGRAM_ADDRESS,
    data: new Uint8Array(
      getMintEncoder().encode({
        mintAuthority: some(t.sb.keys.mintAuthority.address),
        supply: 0n,
        decimals: 6,
        isInitialized: true,
        freezeAuthority: none(),
      }),
    ),
  });
  return mint;
}

function u32le(n: number): Uint8Array {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return new Uint8Array(b);
}

function u64le(n: bigint): Uint8Array {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(n);
  return new Uint8Array(b);
}

/**
 * A transaction in the exact-scheme layout (compute limit, compute price, TransferChecked,
 * memo) whose transfer authority is the service's own fee payer: the fee payer would pay
 * the treasury out of its own token account. Built by hand with @solana/kit; no signature
 * at all (the only signer is the fee payer, whose slot stays empty).
 */
export async function feePayerAuthorityTransaction(t: TestSandbox, requirements: PaymentRequirements): Promise<string> {
  const feePayer = address(t.sb.keys.feePayer.address);
  const mint = address(requirements.asset);
  const source = await associatedTokenAddress(feePayer, mint);
  const destination = await associatedTokenAddress(requirements.payTo, mint);
  const latest = await rpcCall<{ value: { blockhash: string; lastValidBlockHeight: number | bigint } }>(
    t.sb.rpcUrl,
    "getLatestBlockhash",
  );
  const instructions: Instruction[] = [
    { programAddress: COMPUTE_BUDGET_PROGRAM, accounts: [], data: new Uint8Array([2, ...u32le(20_000)]) },
    { programAddress: COMPUTE_BUDGET_PROGRAM, accounts: [], data: new Uint8Array([3, ...u64le(1n)]) },
    getTransferCheckedInstruction({
      source,
      mint,
      destination,
      authority: createNoopSigner(feePayer),
      amount: BigInt(requirements.amount),
      decimals: 6,
    }),
    { programAddress: MEMO_PROGRAM, accounts: [], data: new TextEncoder().encode(String(requirements.extra.memo)) },
  ];
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(feePayer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        {
          blockhash: toBlockhash(latest.value.blockhash),
          lastValidBlockHeight: BigInt(latest.value.lastValidBlockHeight),
        },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  return getBase64EncodedWireTransaction(compileTransaction(message));
}
