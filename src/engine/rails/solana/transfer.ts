/**
 * The x402 `exact` SVM transfer a proof carries, laid out as the reference client lays it out
 * (`@x402/svm`'s exact scheme: compute unit limit, compute unit price, TransferChecked, memo;
 * the fee payer's signature left to the facilitator), from `source` — the agent key's own
 * USDC account, or in delegate mode the owner's — authorised by the agent key.
 *
 * `transferMessage` is that transaction as @solana/kit builds it. Compiling and signing it
 * with kit on every proof costs about a millisecond of CPU (every address through base58
 * and back, the signature through WebCrypto), so `exactTransfer` compiles it once per set of
 * accounts (fee payer, source, payee account, mint, authority) and keeps the compiled layout;
 * each proof then writes its blockhash, amount and memo into that layout and signs the
 * message with node:crypto's ed25519. The bytes are kit's, byte for byte
 * (test/unit/transfer-wire.test.ts; test/engine/payer.test.ts against the reference client).
 */
import { KeyObject, sign } from "node:crypto";
import {
  address,
  appendTransactionMessageInstructions,
  blockhash as toBlockhash,
  compileTransactionMessage,
  createTransactionMessage,
  getAddressEncoder,
  getBase58Encoder,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Instruction,
  type KeyPairSigner,
} from "@solana/kit";
import { getTransferCheckedInstruction } from "@solana-program/token";
import type { PaymentRequirements } from "../../../domain/wire.js";
import { USDC_DECIMALS } from "../../../domain/money.js";
import type { Lifetime } from "./chain.js";

export const COMPUTE_BUDGET_PROGRAM = address("ComputeBudget111111111111111111111111111111");
/**
 * The compute budget program's instructions a transfer carries (their first data byte): the
 * only ones a submitted allowance may carry too (delegate.ts; never heap or data-size requests).
 */
export const SET_COMPUTE_UNIT_LIMIT = 2;
export const SET_COMPUTE_UNIT_PRICE = 3;
const MEMO_PROGRAM = address("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
/** The reference client's compute budget (@x402/svm DEFAULT_COMPUTE_UNIT_LIMIT / _PRICE_MICROLAMPORTS). */
const COMPUTE_UNIT_LIMIT = 20_000;
const COMPUTE_UNIT_PRICE_MICROLAMPORTS = 1n;
const TRANSFER_CHECKED = 12;

function le(value: bigint, bytes: number): number[] {
  return Array.from({ length: bytes }, (_, i) => Number((value >> BigInt(8 * i)) & 0xffn));
}

export interface TransferInput {
  authority: KeyPairSigner;
  source: string;
  payeeAccount: string;
  requirements: PaymentRequirements;
  lifetime: Lifetime;
}

/** Sets a kit transaction message's lifetime to our blockhash (the allowance transactions use it too). */
export const withLifetime =
  (lifetime: Lifetime) =>
  <M extends Parameters<typeof setTransactionMessageLifetimeUsingBlockhash>[1]>(m: M) =>
    setTransactionMessageLifetimeUsingBlockhash(
      { blockhash: toBlockhash(lifetime.blockhash), lastValidBlockHeight: lifetime.lastValidHeight },
      m,
    );

/** The challenge's memo and fee payer, which every exact proof needs. */
function memoAndFeePayer(r: PaymentRequirements): { memo: string; feePayer: string } {
  const memo = r.extra.memo;
  if (typeof memo !== "string" || memo.length === 0)
    throw new Error("the challenge names no memo: a payment must carry its quote's id");
  const feePayer = r.extra.feePayer;
  if (typeof feePayer !== "string") throw new Error("the challenge names no fee payer");
  return { memo, feePayer };
}

/** The transfer as @solana/kit builds it (not signed). */
export function transferMessage(o: TransferInput) {
  const { memo, feePayer } = memoAndFeePayer(o.requirements);
  const instructions: Instruction[] = [
    {
      programAddress: COMPUTE_BUDGET_PROGRAM,
      data: new Uint8Array([SET_COMPUTE_UNIT_LIMIT, ...le(BigInt(COMPUTE_UNIT_LIMIT), 4)]),
    },
    {
      programAddress: COMPUTE_BUDGET_PROGRAM,
      data: new Uint8Array([SET_COMPUTE_UNIT_PRICE, ...le(COMPUTE_UNIT_PRICE_MICROLAMPORTS, 8)]),
    },
    getTransferCheckedInstruction({
      source: address(o.source),
      mint: address(o.requirements.asset),
      destination: address(o.payeeAccount),
      authority: o.authority,
      amount: BigInt(o.requirements.amount),
      decimals: USDC_DECIMALS,
    }),
    { programAddress: MEMO_PROGRAM, accounts: [], data: new TextEncoder().encode(memo) },
  ];
  return pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(address(feePayer), m),
    withLifetime(o.lifetime),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
}

// ---- The compiled layout, kept per set of accounts ------------------------------------------

/** A v0 message's bytes up to its blockhash, its instructions' fixed parts, where the authority signs. */
interface Layout {
  /** Version, header, the static account keys. */
  head: Uint8Array;
  signers: number;
  authorityIndex: number;
  /** The two compute budget instructions, whole. */
  compute: Uint8Array;
  /** TransferChecked's program index and accounts, up to its data. */
  transferHead: Uint8Array;
  memoProgramIndex: number;
}

function shortU16(n: number): number[] {
  const out: number[] = [];
  let rest = n;
  for (;;) {
    const low = rest & 0x7f;
    rest >>= 7;
    if (rest === 0) return [...out, low];
    out.push(low | 0x80);
  }
}

const instructionBytes = (programIndex: number, accounts: readonly number[], data: ArrayLike<number>) => [
  programIndex,
  ...shortU16(accounts.length),
  ...accounts,
  ...shortU16(data.length),
  ...Array.from(data),
];

function layoutOf(o: TransferInput): Layout {
  const compiled = compileTransactionMessage(transferMessage(o));
  if (compiled.version !== 0 || compiled.instructions.length !== 4 || (compiled.addressTableLookups ?? []).length > 0)
    throw new Error("the transfer did not compile to the layout it is built in");
  const { header, staticAccounts } = compiled;
  const keys = getAddressEncoder();
  const head = [
    0x80,
    header.numSignerAccounts,
    header.numReadonlySignerAccounts,
    header.numReadonlyNonSignerAccounts,
    ...shortU16(staticAccounts.length),
    ...staticAccounts.flatMap((a) => [...keys.encode(a)]),
  ];
  const [limit, price, transfer, memo] = compiled.instructions;
  const ix = (i: (typeof compiled.instructions)[number]) =>
    instructionBytes(i.programAddressIndex, i.accountIndices ?? [], i.data ?? new Uint8Array());
  const authorityIndex = staticAccounts.indexOf(o.authority.address);
  if (authorityIndex < 1 || authorityIndex >= header.numSignerAccounts)
    throw new Error("the agent key is not among the transfer's signers");
  const transferAccounts = transfer!.accountIndices ?? [];
  return {
    head: Uint8Array.from(head),
    signers: header.numSignerAccounts,
    authorityIndex,
    compute: Uint8Array.from([...ix(limit!), ...ix(price!)]),
    transferHead: Uint8Array.from([
      transfer!.programAddressIndex,
      ...shortU16(transferAccounts.length),
      ...transferAccounts,
    ]),
    memoProgramIndex: memo!.programAddressIndex,
  };
}

/** Kept layouts, at most MAX_LAYOUTS (about 1 KB each): one per payee a key pays. */
const MAX_LAYOUTS = 1_024;
const layouts = new Map<string, Layout>();
const signingKeys = new WeakMap<KeyPairSigner, KeyObject>();

function keptLayout(o: TransferInput, feePayer: string): Layout {
  const key = [feePayer, o.source, o.payeeAccount, o.requirements.asset, o.authority.address].join(":");
  let layout = layouts.get(key);
  if (!layout) {
    layout = layoutOf(o);
    layouts.set(key, layout);
    if (layouts.size > MAX_LAYOUTS) layouts.delete(layouts.keys().next().value!);
  }
  return layout;
}

/** The message for this proof: the layout, with its blockhash, amount and memo. */
function messageBytes(layout: Layout, o: TransferInput, memo: string): Buffer {
  const blockhash = Uint8Array.from(getBase58Encoder().encode(o.lifetime.blockhash));
  if (blockhash.length !== 32) throw new Error("the blockhash is not 32 bytes");
  const amount = BigInt(o.requirements.amount);
  if (amount < 0n || amount >= 1n << 64n) throw new Error("the amount is not a u64");
  const transferData = [TRANSFER_CHECKED, ...le(amount, 8), USDC_DECIMALS];
  const memoBytes = new TextEncoder().encode(memo);
  return Buffer.concat([
    layout.head,
    blockhash,
    Uint8Array.from(shortU16(4)),
    layout.compute,
    layout.transferHead,
    Uint8Array.from([...shortU16(transferData.length), ...transferData]),
    Uint8Array.from([layout.memoProgramIndex, ...shortU16(0), ...shortU16(memoBytes.length)]),
    memoBytes,
    Uint8Array.from(shortU16(0)), // no address lookup tables
  ]);
}

/**
 * The transfer partially signed by the agent key (the fee payer's slot left empty), as a
 * base64 wire transaction: kit's bytes, without kit on the way.
 */
export function exactTransfer(o: TransferInput): string {
  const { memo, feePayer } = memoAndFeePayer(o.requirements);
  const layout = keptLayout(o, feePayer);
  const message = messageBytes(layout, o, memo);
  let key = signingKeys.get(o.authority);
  if (!key) signingKeys.set(o.authority, (key = KeyObject.from(o.authority.keyPair.privateKey)));
  const signatures = new Uint8Array(64 * layout.signers);
  signatures.set(sign(null, message, key), 64 * layout.authorityIndex);
  return Buffer.concat([Uint8Array.from(shortU16(layout.signers)), signatures, message]).toString("base64");
}
