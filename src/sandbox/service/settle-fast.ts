/**
 * The v1 settlement's fast path: a proof in the shape the x402 exact SVM clients build —
 * [SetComputeUnitLimit, SetComputeUnitPrice, TransferChecked (SPL Token), Memo] — checked
 * against the quote's requirements by every rule the reference facilitator's verification
 * (`@x402/svm` ExactSvmScheme, its static path) applies, read once from the transaction's
 * bytes (domain/solana-wire.ts) but for the signatures, which LiteSVM checks when it is
 * submitted; then co-signed by the fee payer (node:crypto, on the thread pool), simulated
 * and submitted in one synchronous step, the caller's record of the settlement committed with
 * the ledger's (`recordLanded`).
 *
 * It never refuses anything itself: a proof the reference would refuse, one in another shape,
 * or one whose simulation or submission fails answers `undefined`, and the reference
 * facilitator settles it as before, so every refusal and its reason stay the reference's own. Nothing is sent
 * before the simulation passed, and between it and the submission nothing else runs.
 */
import { KeyObject, sign } from "node:crypto";
import { getAddressEncoder, type KeyPairSigner } from "@solana/kit";
import { associatedTokenAddress } from "../../domain/token.js";
import type { PaymentPayload, PaymentRequirements } from "../../domain/wire.js";
import type { Ledger } from "../ledger/ledger.js";
import {
  isSigned,
  keyName,
  readWireBase64,
  sameBytes,
  type WireInstruction,
  type WireTransaction,
} from "../../domain/solana-wire.js";

const COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111";
const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const MEMO_PROGRAM = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
/** The reference's ceiling on the compute unit price (MAX_COMPUTE_UNIT_PRICE_MICROLAMPORTS). */
const MAX_PRICE_MICROLAMPORTS = 5_000_000n;
const TRANSFER_CHECKED = 12;

const addressEncoder = getAddressEncoder();
const bytesOf = (address: string) => addressEncoder.encode(address as never) as Uint8Array;
const PROGRAMS = {
  computeBudget: bytesOf(COMPUTE_BUDGET),
  token: bytesOf(TOKEN_PROGRAM),
  memo: bytesOf(MEMO_PROGRAM),
};

/** A settlement the fast path made, as the reference facilitator answers one. */
export interface FastSettlement {
  success: true;
  transaction: string;
  payer: string;
}

export class FastExactSettler {
  private readonly feePayerBytes: Uint8Array;
  private feePayerKey: KeyObject | undefined;
  /** The associated token account of (payTo, asset), once derived. */
  private readonly destinations = new Map<string, Uint8Array>();

  constructor(
    private readonly ledger: Ledger,
    private readonly feePayer: KeyPairSigner,
    private readonly network: string,
  ) {
    this.feePayerBytes = bytesOf(feePayer.address);
  }

  /**
   * Settles the proof when the reference facilitator would, on this same ledger state; answers
   * undefined when it does not settle it (the caller then runs the reference facilitator).
   */
  async settle(
    payload: PaymentPayload,
    stored: PaymentRequirements,
    recordLanded?: (settlement: FastSettlement) => void,
  ): Promise<FastSettlement | undefined> {
    const destination = await this.destinationFor(stored);
    if (!destination) return undefined;
    const wire = this.verified(payload, stored, destination);
    if (!wire) return undefined;
    // The fee payer's signature is made on libuv's thread pool (node:crypto with a callback),
    // off the request thread, while the loop turns once through its timers, as it did while the
    // reference facilitator awaited WebCrypto: a request for the same payment arriving meanwhile
    // meets this one settling (409, retry shortly), and a lock another process takes on the
    // store meets it when it writes (503, retry) — a timer's wait (1 ms), not a CPU cost.
    const [signed] = await Promise.all([this.coSign(wire), new Promise((resume) => setTimeout(resume, 0))]);
    // Synchronous from here: the simulation and the submission see one ledger state. The
    // simulation says whether it runs (a transaction that fails once run is charged its fee and
    // kept by LiteSVM, so nothing is sent before); the submission checks every signature,
    // natively, as a cluster would, and refuses a bad one before charging anything.
    if (!this.simulates(signed)) return undefined;
    const payer = keyName(wire.keys[wire.instructions[2]!.accounts[3]!]!);
    const result = this.ledger.submit(
      signed,
      recordLanded && ((landed) => recordLanded({ success: true, transaction: landed.signature, payer })),
    );
    if (!result.ok) return undefined;
    return { success: true, transaction: result.signature, payer };
  }

  /** Whether the co-signed transaction runs on the ledger now (a simulation that throws: nothing was sent). */
  private simulates(signed: string): boolean {
    try {
      return this.ledger.simulate(signed, { checkSignatures: false }).ok;
    } catch {
      return false;
    }
  }

  /** The ATA the transfer must pay into (the reference derives it on every verification). */
  private async destinationFor(stored: PaymentRequirements): Promise<Uint8Array | undefined> {
    const id = `${stored.payTo}\n${stored.asset}`;
    let ata = this.destinations.get(id);
    if (ata === undefined) {
      try {
        ata = bytesOf(await associatedTokenAddress(stored.payTo, stored.asset));
      } catch {
        return undefined;
      }
      if (this.destinations.size > 64) this.destinations.clear();
      this.destinations.set(id, ata);
    }
    return ata;
  }

  /** The proof's transaction, when every rule of the reference's verification holds for it but the signatures' (the ledger's). */
  private verified(
    payload: PaymentPayload,
    stored: PaymentRequirements,
    destination: Uint8Array,
  ): WireTransaction | undefined {
    if (payload.accepted.scheme !== "exact" || stored.scheme !== "exact") return undefined;
    if (payload.accepted.network !== stored.network || stored.network !== this.network) return undefined;
    if (stored.extra.feePayer !== this.feePayer.address) return undefined;
    const tx = readWireBase64(payload.payload.transaction);
    if (!tx || tx.lookupTables !== 0 || !sameBytes(tx.keys[0]!, this.feePayerBytes)) return undefined;
    // Every signature but the fee payer's is there (the ledger checks them when it is submitted).
    if (!tx.signatures.slice(1).every(isSigned)) return undefined;
    const ixs = tx.instructions;
    if (ixs.length !== 4) return undefined;
    const program = (ix: WireInstruction) => tx.keys[ix.programIndex]!;
    const [limit, price, transfer, memo] = ixs as [WireInstruction, WireInstruction, WireInstruction, WireInstruction];
    if (!sameBytes(program(limit), PROGRAMS.computeBudget) || limit.data.length !== 5 || limit.data[0] !== 2)
      return undefined;
    if (!sameBytes(program(price), PROGRAMS.computeBudget) || price.data.length !== 9 || price.data[0] !== 3)
      return undefined;
    if (Buffer.from(price.data).readBigUInt64LE(1) > MAX_PRICE_MICROLAMPORTS) return undefined;
    if (!this.transferValid(tx, transfer, stored, destination)) return undefined;
    if (!sameBytes(program(memo), PROGRAMS.memo) || typeof stored.extra.memo !== "string") return undefined;
    if (stored.extra.memo === "" || !Buffer.from(stored.extra.memo, "utf8").equals(memo.data)) return undefined;
    return tx;
  }

  /** TransferChecked on SPL Token of the required amount of the asset into `destination`, not by the fee payer. */
  private transferValid(
    tx: WireTransaction,
    ix: WireInstruction,
    stored: PaymentRequirements,
    destination: Uint8Array,
  ): boolean {
    if (!sameBytes(tx.keys[ix.programIndex]!, PROGRAMS.token)) return false;
    if (ix.data.length !== 10 || ix.data[0] !== TRANSFER_CHECKED || ix.accounts.length !== 4) return false;
    const [, mint, to, authority] = [...ix.accounts].map((i) => tx.keys[i]!);
    if (sameBytes(authority!, this.feePayerBytes)) return false;
    if (keyName(mint!) !== stored.asset || !sameBytes(to!, destination)) return false;
    return /^\d+$/.test(stored.amount) && Buffer.from(ix.data).readBigUInt64LE(1) === BigInt(stored.amount);
  }

  /** The transaction with the fee payer's signature in its slot, as the reference signer makes it. */
  private async coSign(tx: WireTransaction): Promise<string> {
    this.feePayerKey ??= KeyObject.from(this.feePayer.keyPair.privateKey);
    const key = this.feePayerKey;
    const signature = await new Promise<Buffer>((done, fail) =>
      sign(null, tx.message, key, (e, made) => (e ? fail(e) : done(made))),
    );
    const full = Buffer.from(tx.bytes);
    // The fee payer's slot is the first of the signatures, which end where the message begins.
    full.set(signature, tx.bytes.length - tx.message.length - 64 * tx.signatures.length);
    return full.toString("base64");
  }
}
