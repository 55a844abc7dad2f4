/**
 * The sandbox as an x402 facilitator: `@x402/core`'s `x402Facilitator` with `@x402/svm`'s
 * exact scheme, settling on the ledger with the sandbox's own fee payer. Around the reference
 * code it keeps what the scheme keeps only in memory: a durable record of every payment it
 * settles, claimed before the first await, so a transaction is never settled (or answered as
 * settled) twice — across requests, restarts and other ways onto the ledger — and a
 * settlement that failed after its transaction was sent is answered from what the ledger
 * holds. Each settled payment that declared the Bazaar extension is catalogued (discovery.ts)
 * in the same SQLite transaction that records it settled.
 */
import type Database from "better-sqlite3";
import { x402Facilitator } from "@x402/core/facilitator";
import type {
  Network,
  PaymentPayload,
  PaymentRequirements,
  SettleResponse,
  SupportedResponse,
  VerifyResponse,
} from "@x402/core/types";
import { ExactSvmScheme } from "@x402/svm/exact/facilitator";
import { ledgerFacilitatorSigner, type ServiceKeys } from "../ledger/chain.js";
import type { LandedTransaction, Ledger } from "../ledger/ledger.js";
import { blockhashOf, decodeWireTransaction, messageHashOf } from "../ledger/tx-wire.js";
import { mayHaveBeenSent } from "../service/sent.js";
import { BAZAAR } from "./bazaar.js";
import type { DiscoveryCatalog } from "./discovery.js";
import type { FacilitatorFaults } from "./faults.js";
import { statement } from "../db.js";
import { EVM_NETWORK } from "../evm/ledger.js";
import type { EvmSettler } from "../evm/settle.js";
import { EvmFacilitatorSettlements } from "./evm.js";

export interface FacilitatorOptions {
  db: Database.Database;
  ledger: Ledger;
  keys: ServiceKeys;
  network: string;
  catalog: DiscoveryCatalog;
  now: () => number;
  log: (line: string) => void;
  /** The test hook the v1 settlement uses too (faults.ts). */
  faults?: FacilitatorFaults;
  /** The EVM ledger's settlement (absent: it is off, and only Solana is supported). */
  evm?: EvmSettler;
}

/** What `/verify` and `/settle` are given: the x402 wire request, already shape-checked. */
export interface FacilitatorRequest {
  x402Version?: number;
  paymentPayload: PaymentPayload;
  paymentRequirements: PaymentRequirements;
}

interface SettlementRow {
  message_hash: string;
  status: "settling" | "settled";
  network: string;
  pay_to: string;
  asset: string;
  amount: string;
  blockhash: string;
  transaction_sig: string | null;
  payer: string | null;
}

/** The payment a request carries, by the identity of its transaction's message. */
interface Claimed {
  messageHash: string;
  blockhash: string;
}

const sameTerms = (row: SettlementRow, req: PaymentRequirements) =>
  row.network === req.network && row.pay_to === req.payTo && row.asset === req.asset && row.amount === req.amount;

/** The reason a facilitator answers an already settled transaction with (the scheme's own word for it). */
export const DUPLICATE_SETTLEMENT = "duplicate_settlement";

export class SandboxFacilitator {
  private readonly x402 = new x402Facilitator();
  /** Message hashes a request of this process is settling right now. */
  private readonly settlingNow = new Set<string>();
  /** Settlements on the EVM ledger (evm.ts), when it is on. */
  private readonly evm: EvmFacilitatorSettlements | undefined;

  constructor(private readonly o: FacilitatorOptions) {
    const signer = ledgerFacilitatorSigner(o.ledger, o.keys.feePayer, o.network);
    const scheme = new ExactSvmScheme(o.faults ? o.faults.wrap(signer, o.ledger) : signer);
    this.x402.register(o.network as Network, scheme).registerExtension(BAZAAR);
    if (o.evm) this.x402.register(EVM_NETWORK as Network, o.evm.facilitatorScheme);
    this.evm = o.evm
      ? new EvmFacilitatorSettlements({ db: o.db, settler: o.evm, x402: this.x402, catalog: o.catalog, now: o.now })
      : undefined;
  }

  /** After a restart, before any request: the EVM ledger's settlements and the chain brought in step. */
  async recoverEvm(): Promise<void> {
    await this.evm?.recover(this.o.log);
  }

  /** `GET /supported`: the exact scheme on the sandbox's network, its fee payer, the Bazaar extension. */
  supported(): SupportedResponse {
    return this.x402.getSupported() as SupportedResponse;
  }

  /** Why the sandbox cannot take this request at all, before anything else is looked at. */
  private unsupported(r: FacilitatorRequest): string | undefined {
    if (r.paymentPayload.x402Version !== 2) return "invalid_x402_version";
    if (r.paymentRequirements.scheme !== "exact") return "unsupported_scheme";
    const network = r.paymentRequirements.network;
    if (network !== this.o.network && !(this.evm && network === EVM_NETWORK)) return "invalid_network";
    return undefined;
  }

  private identify(r: FacilitatorRequest): Claimed | undefined {
    const transaction = (r.paymentPayload.payload as { transaction?: unknown }).transaction;
    if (typeof transaction !== "string") return undefined;
    try {
      const tx = decodeWireTransaction(transaction);
      return { messageHash: messageHashOf(tx), blockhash: blockhashOf(tx) };
    } catch {
      return undefined; // the scheme rejects it with its own reason
    }
  }

  /** `POST /verify`: the reference verification, except that a transaction already on the ledger is a replay. */
  async verify(r: FacilitatorRequest): Promise<VerifyResponse> {
    const unsupported = this.unsupported(r);
    if (unsupported) return { isValid: false, invalidReason: unsupported, payer: "" };
    if (this.evm && r.paymentRequirements.network === EVM_NETWORK) {
      return this.evm.verify(r).catch((e: Error) => ({
        isValid: false,
        invalidReason: "invalid_payload",
        invalidMessage: e.message,
        payer: "",
      }));
    }
    const id = this.identify(r);
    if (id && this.o.ledger.transactionByMessageHash(id.messageHash)) {
      return {
        isValid: false,
        invalidReason: DUPLICATE_SETTLEMENT,
        invalidMessage: "this payment's transaction is already settled",
        payer: "",
      };
    }
    try {
      return await this.x402.verify(r.paymentPayload, r.paymentRequirements);
    } catch (e) {
      return { isValid: false, invalidReason: "invalid_payload", invalidMessage: (e as Error).message, payer: "" };
    }
  }

  private failure(r: FacilitatorRequest, errorReason: string, errorMessage?: string): SettleResponse {
    return {
      success: false,
      errorReason,
      ...(errorMessage ? { errorMessage } : {}),
      transaction: "",
      network: r.paymentRequirements.network as Network,
      payer: "",
    };
  }

  private row(messageHash: string): SettlementRow | undefined {
    return statement(this.o.db, `SELECT * FROM facilitator_settlements WHERE message_hash = ?`).get(messageHash) as
      SettlementRow | undefined;
  }

  /**
   * `POST /settle`. Settles at most once per transaction: one already settled (here or by
   * any other way onto the ledger) is `success: false, duplicate_settlement`, and nothing is
   * sent. A retry of a settlement that ended `settlement_pending` is answered from the
   * ledger: landed → the success it could not report then.
   */
  async settle(r: FacilitatorRequest): Promise<SettleResponse> {
    const unsupported = this.unsupported(r);
    if (unsupported) return this.failure(r, unsupported);
    if (this.evm && r.paymentRequirements.network === EVM_NETWORK) {
      return this.evm.settle(r).catch((e: Error) => this.failure(r, "unexpected_settle_error", e.message));
    }
    const id = this.identify(r);
    if (!id) {
      // Nothing to send: the scheme refuses an undecodable transaction with its own reason.
      return this.runScheme(r).catch((e: Error) => this.failure(r, "invalid_payload", e.message));
    }
    const claim = this.o.db.transaction(() => this.claim(r, id)).immediate();
    if (typeof claim !== "string") return claim;
    this.settlingNow.add(id.messageHash);
    let result: SettleResponse | undefined;
    try {
      result = await this.runScheme(r);
    } catch (e) {
      this.o.log(`facilitator settlement of ${id.messageHash} threw (the ledger decides): ${(e as Error).message}`);
    } finally {
      this.settlingNow.delete(id.messageHash);
    }
    if (result?.success) {
      this.markSettled(r, id.messageHash, result.transaction, result.payer ?? "");
      return result;
    }
    return this.afterFailure(r, id, result, claim === "resend");
  }

  /**
   * Synchronous, in one SQLite transaction: what to answer without settling, or "send" once
   * the payment is recorded 'settling' ("resend": it was, by an earlier request).
   */
  private claim(r: FacilitatorRequest, id: Claimed): SettleResponse | "send" | "resend" {
    const row = this.row(id.messageHash);
    if (row?.status === "settled" || (row && this.settlingNow.has(id.messageHash))) {
      return this.failure(r, DUPLICATE_SETTLEMENT, "this payment's transaction is already settled or being settled");
    }
    const landed = this.o.ledger.transactionByMessageHash(id.messageHash);
    if (landed) {
      // Recorded 'settling' (an earlier answer was settlement_pending, or a crash): it landed.
      // Reported settled once, and only against the requirements it was sent for.
      if (row && sameTerms(row, r.paymentRequirements)) {
        return this.markSettled(r, id.messageHash, landed.signature, this.payerOf(r, landed));
      }
      return this.failure(r, DUPLICATE_SETTLEMENT, `this payment's transaction is already on the ledger`);
    }
    // A row already there was sent before and has not landed: sending the same transaction
    // again is safe (one message, one signature: it lands at most once), and a transaction
    // whose blockhash expired is refused by the ledger before anything moves.
    if (row) return "resend";
    this.insertRow(r, id);
    return "send";
  }

  private async runScheme(r: FacilitatorRequest): Promise<SettleResponse> {
    return await this.x402.settle(r.paymentPayload, r.paymentRequirements);
  }

  /**
   * The scheme did not report success: believed when nothing was sent, by this request or
   * an earlier one; otherwise the ledger decides — landed (a success), still able to land
   * (kept, the scheme's answer passed on), or never (forgotten, the scheme's answer passed on).
   */
  private afterFailure(
    r: FacilitatorRequest,
    id: Claimed,
    result: SettleResponse | undefined,
    sentBefore: boolean,
  ): SettleResponse {
    const landed = this.o.ledger.transactionByMessageHash(id.messageHash);
    if (landed) {
      this.o.log(`facilitator: ${landed.signature} landed although the scheme said ${result?.errorReason ?? "error"}`);
      return this.markSettled(r, id.messageHash, landed.signature, this.payerOf(r, landed));
    }
    const sent = sentBefore || result === undefined || mayHaveBeenSent(result);
    if (!sent || !this.o.ledger.isBlockhashValid(id.blockhash)) this.deleteRow(id.messageHash);
    return result ?? this.failure(r, "settlement_pending", "the settlement's outcome is not known yet; retry");
  }

  /** Whose USDC a landed payment moved: the owner of the transfer's other token account than the payee's. */
  private payerOf(r: FacilitatorRequest, landed: LandedTransaction): string {
    const { asset, payTo } = r.paymentRequirements;
    return landed.preTokenBalances.find((t) => t.mint === asset && t.owner !== payTo)?.owner ?? "";
  }

  private insertRow(r: FacilitatorRequest, id: Claimed): void {
    const now = this.o.now();
    const req = r.paymentRequirements;
    statement(
      this.o.db,
      `INSERT INTO facilitator_settlements (message_hash, status, network, pay_to, asset, amount, blockhash,
           resource_url, created_at, updated_at)
         VALUES (?, 'settling', ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      id.messageHash,
      req.network,
      req.payTo,
      req.asset,
      req.amount,
      id.blockhash,
      r.paymentPayload.resource?.url ?? null,
      now,
      now,
    );
  }

  private deleteRow(messageHash: string): void {
    statement(this.o.db, `DELETE FROM facilitator_settlements WHERE message_hash = ? AND status = 'settling'`).run(
      messageHash,
    );
  }

  /** Records the payment settled and catalogs its resource, in one SQLite transaction. */
  private markSettled(r: FacilitatorRequest, messageHash: string, signature: string, payer: string): SettleResponse {
    this.o.db.transaction(() => {
      statement(
        this.o.db,
        `UPDATE facilitator_settlements SET status = 'settled', transaction_sig = ?, payer = ?, updated_at = ?
           WHERE message_hash = ?`,
      ).run(signature, payer, this.o.now(), messageHash);
      this.o.catalog.record(r.paymentPayload, r.paymentRequirements);
    })();
    return { success: true, transaction: signature, network: r.paymentRequirements.network as Network, payer };
  }
}
