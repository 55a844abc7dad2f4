/**
 * Checking a receipt (receipt.ts) without our journal: its shape, each section against the
 * digest it was signed with (a changed one is named), its own signature by the payer, the
 * requirement against the payment, the wire transaction it carries (every signature, its id,
 * its transfer: the rail's checks, RailVerifier), the approval's passkey assertion and the
 * terms it signed, the seller's signed offer and receipt, and — given an RPC — the transfer
 * on chain as stated. Every check is reported, named, whether it holds or not.
 */
import { parseAtomic, parseDecimal } from "../../domain/money.js";
import { PaymentRequirements } from "../../domain/wire.js";
import type { RailVerifier, StatedPayment } from "../rails/port.js";
import { verifyKept } from "./kept.js";
import { digestsOf, ReceiptDocument, SECTIONS, signedBytes } from "./receipt.js";
import { checkOffer, checkReceipt, type KeptWord, type RecoverTypedData } from "./seller.js";

/** One named check and what it found: `holds` false with what does not. */
export interface ReceiptCheck {
  check: string;
  holds: boolean;
  detail: string;
}

export interface VerifyDeps {
  /** The rail's checks for the receipt's network (rails/load.ts railVerifier); undefined: no rail of this build knows it. */
  verifier: (network: string) => Promise<RailVerifier | undefined>;
  /** An RPC of the receipt's network to check the transfer on, when given. */
  rpcUrl?: string;
}

export interface Verdict {
  holds: boolean;
  checks: ReceiptCheck[];
}

const ok = (check: string, detail: string): ReceiptCheck => ({ check, holds: true, detail });
const no = (check: string, detail: string): ReceiptCheck => ({ check, holds: false, detail });

/** One account or asset: the same text, or the same EVM address whatever the case of its hex letters. */
const sameParty = (a: unknown, b: string) =>
  a === b || (typeof a === "string" && /^0x[0-9a-fA-F]{40}$/.test(b) && a.toLowerCase() === b.toLowerCase());

/** The requirement as received, against the payment and the quote: the same amount, payee, network and asset. */
function requirementChecks(doc: ReceiptDocument): ReceiptCheck[] {
  const r = doc.requirement;
  const out: ReceiptCheck[] = [];
  const paid = parseDecimal(doc.payment.amount);
  const asked = parseAtomic(r.amount);
  if (paid === undefined || asked === undefined || paid !== asked)
    out.push(
      no("payment.amount", `${doc.payment.amount} USDC is not the requirement's ${String(r.amount)} atomic units`),
    );
  if (doc.quote.amount !== doc.payment.amount)
    out.push(no("quote.amount", `the quote says ${doc.quote.amount} USDC, the payment ${doc.payment.amount}`));
  for (const [field, key] of [
    ["payee", "payTo"],
    ["network", "network"],
    ["asset", "asset"],
  ] as const)
    if (!sameParty(r[key], doc.payment[field]))
      out.push(
        no(`payment.${field}`, `${doc.payment[field]} is not the requirement's ${String(r[key]).slice(0, 100)}`),
      );
  return out.length > 0 ? out : [ok("requirement", "the payment is the requirement's: amount, payee, network, asset")];
}

/** Every section against the digest signed with it. */
function digestChecks(doc: ReceiptDocument): ReceiptCheck[] {
  const now = digestsOf(doc);
  const changed = SECTIONS.filter((s) => now[s] !== doc.digests[s]);
  if (changed.length === 0) return [ok("digests", "every section is as it was signed")];
  return changed.map((s) => no(s, `the ${s} section is not what was signed (its digest differs)`));
}

/** The stated payment a rail checks the transaction against (undefined when no transaction is stated). */
function statedOf(doc: ReceiptDocument): StatedPayment | undefined {
  const p = doc.payment;
  const amount = parseDecimal(p.amount);
  if (!p.transaction || amount === undefined) return undefined;
  return { ...p, transaction: p.transaction, amount };
}

/** The receipt's own signature, the wire transaction, and the transfer on chain: the rail's checks. */
async function railChecks(doc: ReceiptDocument, d: VerifyDeps, rail: RailVerifier): Promise<ReceiptCheck[]> {
  const out: ReceiptCheck[] = [];
  const { signature, payment } = doc;
  if (signature.signer !== payment.payer)
    out.push(no("signature", `signed by ${signature.signer}, not by the payer ${payment.payer}`));
  else if (!(await rail.verifyMessage(signature.scheme, signedBytes(doc), signature.signer, signature.value)))
    out.push(
      no("signature", `the receipt's signature by ${signature.signer} does not verify: it was changed after signing`),
    );
  else out.push(ok("signature", `signed by the payer ${signature.signer}`));
  const stated = statedOf(doc);
  if (!stated) {
    out.push(ok("transaction", "no transaction is stated: nothing on chain to check"));
    return out;
  }
  if (!doc.chain) out.push(ok("transaction", `the chain was not read (${doc.chainUnread ?? "not said"})`));
  else {
    const wire = await rail.checkWire(doc.chain.wire, stated);
    if (wire.problems.length > 0) out.push(no("payment.transaction", wire.problems.join("; ")));
    else
      out.push(
        ok(
          "transaction",
          `${stated.transaction}: signed by ${wire.signatures.map((s) => s.signer).join(", ")}; it moves ${payment.amount} USDC from ${payment.payer} to ${payment.payee}`,
        ),
      );
  }
  if (d.rpcUrl) out.push(await onChainCheck(doc, rail, stated, d.rpcUrl));
  return out;
}

async function onChainCheck(doc: ReceiptDocument, rail: RailVerifier, stated: StatedPayment, rpcUrl: string) {
  const read = await rail.onChain(rpcUrl, stated);
  if (read.kind === "missing") return no("on chain", `the RPC does not have transaction ${stated.transaction}`);
  if (read.kind === "unknown") return no("on chain", `the RPC could not tell: ${read.why}`);
  const e = read.evidence;
  const problems = [...e.problems];
  if (doc.chain && doc.chain.wire !== e.wire)
    problems.push("the transaction on chain is not the one the receipt carries");
  const where = rail.kind === "evm" ? "block" : "slot";
  if (doc.chain && doc.chain.slot !== e.slot.toString())
    problems.push(`it is in ${where} ${e.slot}, not ${doc.chain.slot}`);
  if (doc.chain && doc.chain.blockHash !== e.blockHash)
    problems.push(`it is in block ${e.blockHash ?? "(no hash)"}, not ${doc.chain.blockHash ?? "(no hash)"}`);
  if (problems.length > 0) return no("on chain", problems.join("; "));
  return ok(
    "on chain",
    `${stated.transaction} is on chain in ${where} ${e.slot} (${e.finality ?? "finality not said"}), as stated`,
  );
}

/** The passkey's assertion, and that the terms it signed are this purchase's. */
function approvalChecks(doc: ReceiptDocument): ReceiptCheck[] {
  const a = doc.approval;
  if (!a) return [ok("approval", "no approval was needed")];
  if (!a.evidence) return [ok("approval", `approved by a person (${a.channel}); no passkey evidence to check`)];
  const checked = verifyKept(a.evidence);
  if (!checked.ok) return [no("approval.evidence", `the passkey's assertion does not hold (${checked.problem})`)];
  let terms: Record<string, unknown>;
  try {
    terms = JSON.parse(a.evidence.terms) as Record<string, unknown>;
  } catch {
    return [no("approval.evidence", "the terms it signed are not JSON")];
  }
  const want: Array<[string, unknown, unknown]> = [
    ["approval.approvalId", terms.approvalId, a.approvalId],
    ["quote.amount", terms.amount, doc.quote.amount],
    ["bought.inputDigest", terms.inputDigest, doc.bought.inputDigest],
    ["payment.payee", terms.payee ?? doc.payment.payee, doc.payment.payee],
    ["payment.network", terms.network ?? doc.payment.network, doc.payment.network],
    ["payment.asset", terms.asset ?? doc.payment.asset, doc.payment.asset],
  ];
  const wrong = want.filter(([, signed, stated]) => signed !== stated);
  if (wrong.length > 0)
    return wrong.map(([field, signed, stated]) =>
      no(field, `the passkey signed ${String(signed)}, the receipt says ${String(stated)}`),
    );
  const owner = checked.owner === "bound" ? `, bound to the owner ${a.evidence.credential.owner}` : "";
  return [ok("approval", `approved with a passkey over these terms${owner}`)];
}

/** The seller's parts, checked again as received: what the receipt says of each must be what they are. */
async function sellerChecks(doc: ReceiptDocument, recover: RecoverTypedData | undefined): Promise<ReceiptCheck[]> {
  const s = doc.seller;
  if (!s) return [ok("seller", "the seller gave no signed offer or receipt")];
  const out: ReceiptCheck[] = [];
  const url = doc.bought.request?.url ?? "";
  const requirement = PaymentRequirements.safeParse(doc.requirement);
  let offer: KeptWord | undefined;
  if (s.offer?.signed && !requirement.success) out.push(no("requirement", "it is not an x402 payment requirement"));
  else if (s.offer?.signed && requirement.success) {
    const at = Date.parse(doc.quote.quotedAt);
    offer = await checkOffer(s.offer.signed, { requirement: requirement.data, url, at }, recover);
    out.push(stateCheck("seller.offer", s.offer.state, offer));
  }
  if (s.receipt?.signed) {
    const receipt = await checkReceipt(
      s.receipt.signed,
      {
        offer,
        url,
        network: doc.payment.network,
        payer: doc.payment.payer,
        transaction: doc.payment.transaction,
        signedAt: Date.parse(doc.payment.signedAt),
        at: Date.parse(doc.madeAt),
      },
      recover,
    );
    out.push(stateCheck("seller.receipt", s.receipt.state, receipt));
  }
  return out.length > 0
    ? out
    : [ok("seller", "the seller's signed parts were withheld (their URLs carry query values)")];
}

function stateCheck(name: string, stated: string, found: KeptWord): ReceiptCheck {
  if (found.state !== stated)
    return no(name, `the receipt says ${stated}, it is ${found.state}: ${found.problems.join("; ")}`);
  const by = found.signer ? ` by ${found.signer}` : "";
  return ok(name, `${found.state}${by}${found.problems.length > 0 ? ` (${found.problems.join("; ")})` : ""}`);
}

/** Checks a receipt's JSON; every check named, `holds` when all of them hold. */
export async function verifyReceipt(json: unknown, d: VerifyDeps, recover?: RecoverTypedData): Promise<Verdict> {
  const parsed = ReceiptDocument.safeParse(json);
  if (!parsed.success) {
    const checks = parsed.error.issues
      .slice(0, 20)
      .map((i) => no(i.path.join(".") || "receipt", `not a paid-actions/1 receipt here: ${i.message}`));
    return { holds: false, checks };
  }
  const doc = parsed.data;
  const rail = await d.verifier(doc.payment.network);
  const checks = [...digestChecks(doc), ...requirementChecks(doc)];
  if (!rail) checks.push(no("payment.network", `no rail of this build checks ${doc.payment.network}`));
  else checks.push(...(await railChecks(doc, d, rail)));
  checks.push(...approvalChecks(doc), ...(await sellerChecks(doc, recover)));
  for (const r of doc.outcome.refunds)
    if (r.state === "verified" && r.seenOnChain === null)
      checks.push(no("outcome.refunds", "a refund is said verified with nothing seen on chain"));
  return { holds: checks.every((c) => c.holds), checks };
}
