/**
 * A narrowly scoped test hook on the facilitator's signer: it makes the next settlements
 * end the way they can on a real cluster after the transaction was sent — confirmation
 * times out, or the transaction is still in flight — so the x402 reference facilitator
 * answers `{success: false, errorReason: "settlement_pending"}` from its own code path.
 * Verification, signing and (unless held) sending are the real ones.
 *
 * Off unless `SandboxOptions.facilitatorFaults` is given; never set by the CLI.
 */
import type { FacilitatorSvmSigner } from "@x402/svm";
import type { Ledger, SubmitResult } from "../ledger/ledger.js";
import { decodeWireTransaction, signatureOf } from "../ledger/tx-wire.js";

export class FacilitatorFaults {
  private pendingAfterSendLeft = 0;
  private holdLeft = 0;
  private readonly unconfirmed = new Set<string>();
  private readonly held = new Map<string, string>();
  private ledger: Ledger | undefined;

  /**
   * The next `n` settlements send their transaction to the ledger (it lands: the money
   * moves) but confirming it fails, so the facilitator reports `settlement_pending`.
   */
  pendingAfterSend(n = 1): this {
    this.pendingAfterSendLeft += n;
    return this;
  }

  /**
   * The next `n` settlements' transactions are signed and "sent" but stay in flight: they
   * are not on the ledger yet, and the facilitator reports `settlement_pending`. They land
   * when `landHeld()` is called — or never, once the ledger's blockhash moves on.
   */
  holdInFlight(n = 1): this {
    this.holdLeft += n;
    return this;
  }

  /** Signatures of the transactions held in flight. */
  heldSignatures(): string[] {
    return [...this.held.keys()];
  }

  /** Sends every held transaction to the ledger now, as the network would, late. */
  landHeld(): SubmitResult[] {
    if (!this.ledger) throw new Error("these faults are not attached to a sandbox");
    const results = [...this.held.values()].map((wire) => this.ledger!.submit(wire));
    this.held.clear();
    return results;
  }

  /** Forgets the held transactions: lost in flight, they never land. */
  dropHeld(): void {
    this.held.clear();
  }

  /** Whether a fault is waiting for the next settlements (they must then take the reference facilitator's path). */
  armed(): boolean {
    return this.pendingAfterSendLeft > 0 || this.holdLeft > 0;
  }

  /** Clears every pending fault. */
  reset(): void {
    this.pendingAfterSendLeft = 0;
    this.holdLeft = 0;
    this.unconfirmed.clear();
    this.held.clear();
  }

  /** Wraps the ledger-backed facilitator signer (called once by the sandbox). */
  wrap(signer: FacilitatorSvmSigner, ledger: Ledger): FacilitatorSvmSigner {
    this.ledger = ledger;
    return {
      ...signer,
      sendTransaction: async (wire, network) => {
        if (this.holdLeft > 0) {
          this.holdLeft--;
          const signature = signatureOf(decodeWireTransaction(wire));
          this.held.set(signature, wire);
          return signature;
        }
        const failConfirm = this.pendingAfterSendLeft > 0;
        if (failConfirm) this.pendingAfterSendLeft--;
        const signature = await signer.sendTransaction(wire, network);
        if (failConfirm) this.unconfirmed.add(signature);
        return signature;
      },
      confirmTransaction: async (signature, network) => {
        if (this.unconfirmed.delete(signature))
          throw new Error(`confirmation of ${signature} timed out (sandbox fault)`);
        return signer.confirmTransaction(signature, network);
      },
    };
  }
}
