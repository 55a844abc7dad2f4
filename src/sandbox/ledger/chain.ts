/**
 * The sandbox's own accounts on its ledger, and the transactions it signs itself:
 * genesis (USDC mint, fee payer, treasury, demo wallet), the seller's token account,
 * refunds back to payers, and the
 * LiteSVM-backed signer the x402 reference facilitator settles through.
 */
import {
  appendTransactionMessageInstructions,
  blockhash as toBlockhash,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  none,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  some,
  address,
  type Address,
  type Instruction,
  type KeyPairSigner,
  type SignatureDictionary,
  type Transaction,
} from "@solana/kit";
import {
  TOKEN_PROGRAM_ADDRESS,
  getApproveCheckedInstruction,
  getCreateAssociatedTokenIdempotentInstruction,
  getMintEncoder,
  getMintToCheckedInstruction,
  getTransferCheckedInstruction,
} from "@solana-program/token";
import { toFacilitatorSvmSigner, type FacilitatorSvmSigner } from "@x402/svm";
import { USDC_DECIMALS } from "../../domain/money.js";
import type { Ledger } from "./ledger.js";
import { decodeWireTransaction, rememberDecoded } from "./tx-wire.js";

const SOL = 1_000_000_000n;

export interface ServiceKeys {
  feePayer: KeyPairSigner;
  treasury: KeyPairSigner;
  mintAuthority: KeyPairSigner;
  /** The payee of the sandbox's own x402 resources (resources/), apart from the v1 treasury. */
  seller: KeyPairSigner;
}

export { associatedTokenAddress } from "../../domain/token.js";
import { associatedTokenAddress } from "../../domain/token.js";

/** Builds and fully signs a transaction against the ledger's current blockhash. */
export async function signWith(ledger: Ledger, feePayer: KeyPairSigner, instructions: Instruction[]): Promise<string> {
  const latest = ledger.latestBlockhash();
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(feePayer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: toBlockhash(latest.blockhash), lastValidBlockHeight: latest.lastValidBlockHeight },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const signed = await signTransactionMessageWithSigners(message);
  return getBase64EncodedWireTransaction(signed);
}

async function submitOrThrow(ledger: Ledger, wire: string, what: string): Promise<string> {
  const result = ledger.submit(wire);
  if (!result.ok) throw new Error(`${what} failed on the ledger: ${result.error}`);
  return result.signature;
}

/**
 * First start of a sandbox home: the USDC mint (at the real devnet address, its authority
 * ours), SOL for the fee payer, the treasury's token account (the payee's account must
 * exist before the first payment) and the demo wallet, funded with `walletFunding` USDC.
 */
export async function genesis(
  ledger: Ledger,
  keys: ServiceKeys,
  mint: string,
  wallet: KeyPairSigner,
  walletFunding: bigint,
): Promise<void> {
  ledger.setAccount({
    address: mint,
    lamports: 1_461_600n,
    owner: TOKEN_PROGRAM_ADDRESS,
    data: new Uint8Array(
      getMintEncoder().encode({
        mintAuthority: some(keys.mintAuthority.address),
        supply: 0n,
        decimals: USDC_DECIMALS,
        isInitialized: true,
        freezeAuthority: none(),
      }),
    ),
  });
  ledger.airdrop(keys.feePayer.address, 1_000n * SOL);
  await ensureTokenAccount(ledger, keys, keys.treasury.address, mint);
  await fundWallet(ledger, keys, mint, wallet.address, walletFunding);
}

/**
 * The embedded default's delegate mode: the demo wallet (the owner) grants the agent key an
 * allowance on its USDC account — a real ApproveChecked the owner signs (the service's fee
 * payer pays the fee) — and gets some SOL, so that it can sign its own allowance changes.
 */
export async function grantDemoAllowance(
  ledger: Ledger,
  keys: ServiceKeys,
  mint: string,
  owner: KeyPairSigner,
  agent: string,
  amount: bigint,
): Promise<void> {
  ledger.airdrop(owner.address, SOL);
  const ix = getApproveCheckedInstruction({
    source: await associatedTokenAddress(owner.address, mint),
    mint: address(mint),
    delegate: address(agent),
    owner,
    amount,
    decimals: USDC_DECIMALS,
  });
  await submitOrThrow(ledger, await signWith(ledger, keys.feePayer, [ix]), "granting the demo allowance");
}

export async function ensureTokenAccount(
  ledger: Ledger,
  keys: ServiceKeys,
  owner: string,
  mint: string,
): Promise<Address> {
  const ata = await associatedTokenAddress(owner, mint);
  if (ledger.tokenAccount(ata)) return ata;
  const ix = getCreateAssociatedTokenIdempotentInstruction({
    payer: keys.feePayer,
    ata,
    owner: address(owner),
    mint: address(mint),
  });
  await submitOrThrow(ledger, await signWith(ledger, keys.feePayer, [ix]), "creating a token account");
  return ata;
}

/** Mints USDC to a wallet (creating its token account if needed): a real MintToChecked. */
export async function fundWallet(
  ledger: Ledger,
  keys: ServiceKeys,
  mint: string,
  owner: string,
  amount: bigint,
): Promise<string> {
  const ata = await ensureTokenAccount(ledger, keys, owner, mint);
  const ix = getMintToCheckedInstruction({
    mint: address(mint),
    token: ata,
    mintAuthority: keys.mintAuthority,
    amount,
    decimals: USDC_DECIMALS,
  });
  return submitOrThrow(ledger, await signWith(ledger, keys.feePayer, [ix]), "funding the wallet");
}

const MEMO_PROGRAM = address("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");

/**
 * A signed transfer of `amount` from the treasury back to `payer`'s token account (a
 * refund), not yet sent: the caller records it before sending. Its memo names what it
 * refunds: two refunds of the same amount to the same payer within one blockhash's life
 * would otherwise be the same transaction, and the second would never land.
 */
export async function refundTransferWire(
  ledger: Ledger,
  keys: ServiceKeys,
  mint: string,
  payer: string,
  amount: bigint,
  memo?: string,
): Promise<string> {
  const source = await associatedTokenAddress(keys.treasury.address, mint);
  const destination = await ensureTokenAccount(ledger, keys, payer, mint);
  const ix = getTransferCheckedInstruction({
    source,
    mint: address(mint),
    destination,
    authority: keys.treasury,
    amount,
    decimals: USDC_DECIMALS,
  });
  const memoIx: Instruction[] = memo ? [{ programAddress: MEMO_PROGRAM, data: new TextEncoder().encode(memo) }] : [];
  return signWith(ledger, keys.feePayer, [ix, ...memoIx]);
}

/**
 * The fee payer's co-signature, as the reference signer makes it (`toFacilitatorSvmSigner`:
 * the payer's transaction with the fee payer's signature added), with two savings on the hot
 * path: a settlement co-signs the same transaction twice (to simulate it, then to send it)
 * and ed25519 signatures are deterministic, so the second is the first (taken once, at most
 * 64 kept); and the transaction is decoded once (tx-wire.ts remembers the proof's decoding,
 * and the co-signed one's).
 */
function coSigner(base: FacilitatorSvmSigner, feePayer: KeyPairSigner): FacilitatorSvmSigner["signTransaction"] {
  const signed = new Map<string, string>();
  const sign = async (wire: string): Promise<string> => {
    const tx = decodeWireTransaction(wire);
    const [signature] = await feePayer.signMessages([
      { content: tx.messageBytes as unknown as Uint8Array, signatures: tx.signatures as SignatureDictionary },
    ]);
    const full: Transaction = { ...tx, signatures: { ...tx.signatures, ...signature } };
    const out = getBase64EncodedWireTransaction(full);
    rememberDecoded(out, full);
    return out;
  };
  return async (tx, payer, n) => {
    if (payer !== feePayer.address) return base.signTransaction(tx, payer, n);
    const known = signed.get(tx);
    if (known !== undefined) {
      signed.delete(tx);
      return known;
    }
    const wire = await sign(tx);
    signed.set(tx, wire);
    if (signed.size > 64) signed.delete(signed.keys().next().value!);
    return wire;
  };
}

/**
 * The facilitator signer the x402 reference `ExactSvmScheme` settles through: signing is
 * the reference implementation's own; simulate, send and confirm go to the ledger.
 */
export function ledgerFacilitatorSigner(
  ledger: Ledger,
  feePayer: KeyPairSigner,
  network: string,
): FacilitatorSvmSigner {
  // No RPC is ever called through this base: only its signing and addresses are used.
  const base = toFacilitatorSvmSigner(feePayer, { defaultRpcUrl: "http://127.0.0.1:9" });
  const checkNetwork = (n: string) => {
    if (n !== network) throw new Error(`this ledger serves ${network}, not ${n}`);
  };
  const coSign = coSigner(base, feePayer);
  return {
    getAddresses: () => base.getAddresses(),
    signTransaction: (tx, payer, n) => {
      checkNetwork(n);
      return coSign(tx, payer, n);
    },
    async simulateTransaction(tx, n) {
      checkNetwork(n);
      // LiteSVM verifies every signature, so the fee payer co-signs before simulating;
      // the payer's own signature is checked as it would be on chain.
      const signed = await coSign(tx, feePayer.address, n);
      const result = ledger.simulate(signed);
      if (!result.ok) throw new Error(`simulation failed: ${result.error}`);
    },
    async sendTransaction(tx, n) {
      checkNetwork(n);
      const result = ledger.submit(tx);
      if (!result.ok) throw new Error(`transaction rejected by the ledger: ${result.error}`);
      return result.signature;
    },
    async confirmTransaction(signature, n) {
      checkNetwork(n);
      if (!ledger.hasTransaction(signature)) throw new Error(`transaction ${signature} is not on the ledger`);
    },
    async getTokenAccountBalance(tokenAccount) {
      return ledger.tokenAccount(tokenAccount)?.amount ?? null;
    },
  };
}
