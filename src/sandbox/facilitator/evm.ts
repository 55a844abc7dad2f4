/**
 * The facilitator's settlements on the EVM ledger (eip155:84532), kept as the Solana ones are
 * (facilitator.ts): a durable record per payment, claimed before the first send, so an
 * EIP-3009 authorization is settled (or answered as settled) at most once — across requests,
 * restarts, and other ways onto the chain. Its identity is (authorizer, nonce); the chain's
 * AuthorizationUsed event is what says it moved the money (evm/settle.ts).
 */
import type Database from "better-sqlite3";
import type { Network, PaymentRequirements, SettleResponse, VerifyResponse } from "@x402/core/types";
import type { x402Facilitator } from "@x402/core/facilitator";
import type { EvmPaymentPayload } from "../../domain/wire.js";
import { statement } from "../db.js";
import { authorizationId, parseEvmPayload, type EvmSettler } from "../evm/settle.js";
import type { DiscoveryCatalog } from "./discovery.js";
import type { FacilitatorRequest } from "./facilitator.js";

const DUPLICATE_SETTLEMENT = "duplicate_settlement";

interface Row {
  status: "settling" | "settled";
  network: string;
  pay_to: string;
  asset: string;
  amount: string;
}

const sameTerms = (row: Row, req: PaymentRequirements) =>
  row.network === req.network &&
  row.pay_to.toLowerCase() === req.payTo.toLowerCase() &&
  row.asset.toLowerCase() === req.asset.toLowerCase() &&
  row.amount === req.amount;

export class EvmFacilitatorSettlements {
  private readonly settlingNow = new Set<string>();

  constructor(
    private readonly o: {
      db: Database.Database;
      settler: EvmSettler;
      x402: x402Facilitator;
      catalog: DiscoveryCatalog;
      now: () => number;
    },
  ) {}

  private failure(r: FacilitatorRequest, errorReason: string, errorMessage?: string, payer = ""): SettleResponse {
    return {
      success: false,
      errorReason,
      ...(errorMessage ? { errorMessage } : {}),
      transaction: "",
      network: r.paymentRequirements.network as Network,
      payer,
    };
  }

  private row(id: string): Row | undefined {
    return statement(this.o.db, `SELECT * FROM facilitator_settlements WHERE message_hash = ?`).get(id) as
      Row | undefined;
  }

  /** `POST /verify`: the reference verification, except that an authorization already used on the chain is a replay. */
  async verify(r: FacilitatorRequest): Promise<VerifyResponse> {
    const payload = parseEvmPayload(r.paymentPayload);
    if (payload && (await this.o.settler.landed(payload.payload.authorization))) {
      return {
        isValid: false,
        invalidReason: DUPLICATE_SETTLEMENT,
        invalidMessage: "this payment's authorization is already settled",
        payer: payload.payload.authorization.from,
      };
    }
    return this.o.x402.verify(r.paymentPayload, r.paymentRequirements);
  }

  /** `POST /settle` on the EVM ledger: at most once per authorization (see the module's header). */
  async settle(r: FacilitatorRequest): Promise<SettleResponse> {
    const payload = parseEvmPayload(r.paymentPayload);
    // Nothing to identify: the reference scheme refuses it with its own reason.
    if (!payload) return this.o.x402.settle(r.paymentPayload, r.paymentRequirements);
    const id = authorizationId(payload.payload.authorization);
    const payer = payload.payload.authorization.from;
    const landed = this.settlingNow.has(id) ? undefined : await this.o.settler.landed(payload.payload.authorization);
    // Synchronous, in one SQLite transaction: what to answer without settling, or "send".
    const claim = this.o.db
      .transaction((): SettleResponse | "send" => {
        const row = this.row(id);
        if (row?.status === "settled" || this.settlingNow.has(id)) {
          return this.failure(r, DUPLICATE_SETTLEMENT, "this payment is already settled or being settled", payer);
        }
        if (landed) {
          // Recorded 'settling' by a request that died: it landed. Reported settled once, on its own terms.
          if (row && sameTerms(row, r.paymentRequirements)) return this.markSettled(r, id, landed, payer);
          return this.failure(
            r,
            DUPLICATE_SETTLEMENT,
            "this payment's authorization is already used on the chain",
            payer,
          );
        }
        if (!row) this.insertRow(r, id, payload);
        return "send";
      })
      .immediate();
    if (claim !== "send") return claim;
    this.settlingNow.add(id);
    let result;
    try {
      result = await this.o.settler.settle(payload, r.paymentRequirements as never, (p, q) => this.o.x402.settle(p, q));
    } finally {
      this.settlingNow.delete(id);
    }
    if (result.ok) return this.markSettled(r, id, result.transaction, result.payer);
    // Not on the chain (settle() asked it): nothing moved, and the record goes.
    statement(this.o.db, `DELETE FROM facilitator_settlements WHERE message_hash = ? AND status = 'settling'`).run(id);
    return this.failure(r, result.reason, result.message, payer);
  }

  private insertRow(r: FacilitatorRequest, id: string, payload: EvmPaymentPayload): void {
    const now = this.o.now();
    const req = r.paymentRequirements;
    statement(
      this.o.db,
      `INSERT INTO facilitator_settlements (message_hash, status, network, pay_to, asset, amount, blockhash,
           resource_url, evm_proof, created_at, updated_at)
         VALUES (?, 'settling', ?, ?, ?, ?, '', ?, ?, ?, ?)`,
    ).run(
      id,
      req.network,
      req.payTo,
      req.asset,
      req.amount,
      r.paymentPayload.resource?.url ?? null,
      JSON.stringify(payload),
      now,
      now,
    );
  }

  private markSettled(r: FacilitatorRequest, id: string, transaction: string, payer: string): SettleResponse {
    this.o.db.transaction(() => {
      statement(
        this.o.db,
        `UPDATE facilitator_settlements SET status = 'settled', transaction_sig = ?, payer = ?, updated_at = ?
           WHERE message_hash = ?`,
      ).run(transaction, payer, this.o.now(), id);
      this.o.catalog.record(r.paymentPayload, r.paymentRequirements);
    })();
    return { success: true, transaction, network: r.paymentRequirements.network as Network, payer };
  }

  /**
   * After a restart: 'settling' records are settled or forgotten by the chain; a 'settled' one
   * the chain does not hold is submitted again (the records are the truth).
   */
  async recover(log: (line: string) => void): Promise<void> {
    const rows = statement(
      this.o.db,
      `SELECT message_hash, status, evm_proof FROM facilitator_settlements WHERE evm_proof IS NOT NULL`,
    ).all() as Array<{ message_hash: string; status: string; evm_proof: string }>;
    for (const row of rows) {
      const payload = parseEvmPayload(JSON.parse(row.evm_proof));
      if (!payload) continue;
      const landed = await this.o.settler.landed(payload.payload.authorization);
      if (row.status === "settling") {
        if (landed) {
          statement(
            this.o.db,
            `UPDATE facilitator_settlements SET status = 'settled', transaction_sig = ?, payer = ?, updated_at = ?
               WHERE message_hash = ?`,
          ).run(landed, payload.payload.authorization.from, this.o.now(), row.message_hash);
        } else {
          statement(this.o.db, `DELETE FROM facilitator_settlements WHERE message_hash = ?`).run(row.message_hash);
        }
      } else if (!landed) {
        const again = await this.o.settler.resubmit(payload);
        log(
          again.ok
            ? `EVM ledger: facilitator settlement ${row.message_hash} was missing from the chain; submitted again in ${again.transaction}`
            : `EVM ledger OUT OF STEP: facilitator settlement ${row.message_hash} is recorded settled but cannot be submitted again (${again.message ?? again.reason})`,
        );
      }
    }
  }
}
