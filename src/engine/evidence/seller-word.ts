/**
 * The seller's signed word on one purchase, kept as it comes (seller.ts checks it): the
 * offer for the requirement paid, read from its 402 when it is priced, and the receipt,
 * read from its paid answer's settlement — each kept in the journal with our check of it,
 * so that the purchase's result and its receipt say whether the seller signed.
 */
import type { PaymentRequirements } from "../../domain/wire.js";
import type { JournalStore } from "../journal/port.js";
import type { SellerSummary } from "../model/types.js";
import { typedDataRecovery } from "../rails/load.js";
import {
  checkOffer,
  checkReceipt,
  offerFor,
  offersOf,
  parseKeptWord,
  receiptOf,
  sellerSummary,
  type KeptWord,
  type SignedWord,
} from "./seller.js";

type Journal = Pick<JournalStore, "saveSellerWord" | "sellerWord" | "payment">;

/** The rail's EIP-712 recovery, loaded only for a part signed that way. */
const recoveryFor = async (w: SignedWord) => (w.format === "eip712" ? await typedDataRecovery() : undefined);

/**
 * Keeps the signed offer the 402 carried for `requirement` (the `index`th of its accepts),
 * checked; forgets an earlier attempt's when this 402 carries none. Returns the kept offer.
 */
export async function keepOffer(
  journal: Journal,
  intentId: string,
  o: { extensions: Record<string, unknown> | undefined; requirement: PaymentRequirements; index: number; url: string },
  now: number,
): Promise<KeptWord | undefined> {
  const signed = offerFor(offersOf(o.extensions), o.requirement, o.index);
  if (!signed) {
    if (await journal.sellerWord(intentId)) await journal.saveSellerWord(intentId, "offer", null, now);
    return undefined;
  }
  const kept = await checkOffer(signed, { requirement: o.requirement, url: o.url, at: now }, await recoveryFor(signed));
  await journal.saveSellerWord(intentId, "offer", JSON.stringify(kept), now);
  return kept;
}

/** What a paid answer's settlement is checked against: the purchase, its payment, its claimed transaction. */
export interface PaidAnswer {
  intentId: string;
  quoteId: string;
  url: string;
  network: string;
  /** The settlement's extensions (PAYMENT-RESPONSE), if it had any. */
  extensions: Record<string, unknown> | undefined;
  transaction: string | null;
}

/** Keeps the signed receipt a paid answer's settlement carried, checked against the offer kept and the payment. */
export async function keepReceipt(journal: Journal, a: PaidAnswer, now: number): Promise<KeptWord | undefined> {
  const signed = receiptOf(a.extensions);
  if (!signed) return undefined;
  const [word, payment] = [await journal.sellerWord(a.intentId), await journal.payment(a.quoteId)];
  const kept = await checkReceipt(
    signed,
    {
      offer: parseKeptWord(word?.offer),
      url: a.url,
      network: a.network,
      payer: payment?.payer ?? "",
      transaction: a.transaction,
      signedAt: payment?.signedAt ?? now,
      at: now,
    },
    await recoveryFor(signed),
  );
  await journal.saveSellerWord(a.intentId, "receipt", JSON.stringify(kept), now);
  return kept;
}

/** What a purchase's result says of its seller's word; undefined when the seller gave none. */
export async function sellerWordOf(
  journal: Pick<JournalStore, "sellerWord">,
  intentId: string,
): Promise<SellerSummary | undefined> {
  const word = await journal.sellerWord(intentId);
  const offer = parseKeptWord(word?.offer);
  const receipt = parseKeptWord(word?.receipt);
  return offer || receipt ? sellerSummary(offer, receipt) : undefined;
}
