/**
 * An EVM payment's transaction as a receipt carries it (ChainEvidence.wire), and its checks
 * with no RPC: the signed transaction's bytes (which hash to its id, and whose signature
 * recovers its sender — for x402, the facilitator that settled), and the EIP-3009
 * authorization it submitted — from, to, value, validity, nonce and the payer's EIP-712
 * signature, read out of its calldata — which must recover to the payer over USDC's domain.
 * On EVM the payer never signs the transaction: its authorization is its signature.
 */
import {
  decodeFunctionData,
  getAddress,
  keccak256,
  parseAbi,
  parseTransaction,
  recoverTransactionAddress,
  recoverTypedDataAddress,
  serializeSignature,
  type Hex,
  type TransactionSerialized,
} from "viem";
import { z } from "zod";
import { EVM_USDC } from "../../../domain/networks.js";
import { canonicalJson } from "../../../domain/wire.js";
import type { StatedPayment, WireCheck } from "../port.js";
import { AUTHORIZATION_TYPES, EVM_ADDRESS, sameAddress } from "./assets.js";
import { usdcDomain } from "./sign.js";

/** The two forms of EIP-3009's transferWithAuthorization (a 65-byte signature as v, r, s; any other as bytes). */
const EIP3009_ABI = parseAbi([
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
]);

const Uint = z.string().regex(/^(0|[1-9][0-9]{0,77})$/);
const HexText = z.string().regex(/^0x[0-9a-f]*$/);

/** The authorization a transaction submitted, as the receipt states it (numbers as decimal strings). */
export const Authorization = z.strictObject({
  from: z.string().regex(EVM_ADDRESS),
  to: z.string().regex(EVM_ADDRESS),
  value: Uint,
  validAfter: Uint,
  validBefore: Uint,
  nonce: z.string().regex(/^0x[0-9a-f]{64}$/),
});
export type Authorization = z.infer<typeof Authorization>;

/** ChainEvidence.wire on EVM: canonical JSON of this; the authorization null when the calldata is no direct call. */
export const EvmWire = z.strictObject({
  raw: HexText,
  token: z.string().regex(EVM_ADDRESS).nullable(),
  authorization: Authorization.nullable(),
  signature: HexText.nullable(),
});
export type EvmWire = z.infer<typeof EvmWire>;

/**
 * The authorization a signed transaction submits when it calls transferWithAuthorization on
 * a contract directly (x402's facilitator does, for an ordinary key), with the contract
 * called; nulls for any other call.
 */
export function authorizationIn(raw: Hex): Pick<EvmWire, "token" | "authorization" | "signature"> {
  const none = { token: null, authorization: null, signature: null };
  let to: string | null | undefined;
  let data: Hex | undefined;
  try {
    ({ to, data } = parseTransaction(raw));
  } catch {
    return none;
  }
  if (!to || !data) return none;
  try {
    const call = decodeFunctionData({ abi: EIP3009_ABI, data });
    const [from, payee, value, validAfter, validBefore, nonce] = call.args;
    const signature =
      call.args.length === 9
        ? serializeSignature({
            r: call.args[7],
            s: call.args[8],
            v: BigInt(call.args[6] < 27 ? call.args[6] + 27 : call.args[6]),
          })
        : call.args[6];
    return {
      token: getAddress(to),
      authorization: {
        from: getAddress(from),
        to: getAddress(payee),
        value: value.toString(),
        validAfter: validAfter.toString(),
        validBefore: validBefore.toString(),
        nonce: nonce.toLowerCase(),
      },
      signature: signature.toLowerCase(),
    };
  } catch {
    return none;
  }
}

/** The wire a receipt carries for the signed transaction `raw`. */
export const evmWireOf = (raw: string): string =>
  canonicalJson({ raw: raw.toLowerCase(), ...authorizationIn(raw as Hex) });

/** The chain id a CAIP-2 `eip155:N` network names, or undefined. */
export function chainIdOf(network: string): number | undefined {
  const m = /^eip155:([1-9][0-9]{0,15})$/.exec(network);
  return m ? Number(m[1]) : undefined;
}

/** The payer an authorization's EIP-712 signature recovers to over the asset's USDC domain, or why none. */
async function authorizationSigner(
  w: EvmWire,
  stated: StatedPayment,
): Promise<{ signer: string } | { problem: string }> {
  const usdc = EVM_USDC[stated.network];
  if (!usdc || !sameAddress(usdc.address, stated.asset))
    return {
      problem: `${stated.asset} is not the USDC this build knows on ${stated.network}: its EIP-712 domain is unknown`,
    };
  const a = w.authorization!;
  try {
    const signer = await recoverTypedDataAddress({
      domain: usdcDomain(usdc),
      types: AUTHORIZATION_TYPES,
      primaryType: "TransferWithAuthorization",
      message: {
        from: getAddress(a.from),
        to: getAddress(a.to),
        value: BigInt(a.value),
        validAfter: BigInt(a.validAfter),
        validBefore: BigInt(a.validBefore),
        nonce: a.nonce as Hex,
      },
      signature: w.signature as Hex,
    });
    return { signer };
  } catch (e) {
    return { problem: `the authorization's signature does not recover (${(e as Error).message.slice(0, 120)})` };
  }
}

/** What the authorization states against the stated payment: from the payer, to the payee, the amount, the nonce. */
function authorizationProblems(a: Authorization, stated: StatedPayment): string[] {
  const out: string[] = [];
  if (!sameAddress(a.from, stated.payer))
    out.push(`its authorization is from ${a.from}, not the payer ${stated.payer}`);
  if (!sameAddress(a.to, stated.payee)) out.push(`its authorization pays ${a.to}, not the payee ${stated.payee}`);
  if (a.value !== stated.amount.toString())
    out.push(`its authorization moves ${a.value} atomic units, not ${stated.amount}`);
  if (a.nonce !== stated.memo.toLowerCase()) out.push(`its authorization's nonce is ${a.nonce}, not ${stated.memo}`);
  return out;
}

/**
 * The transaction a receipt carries, checked against what it states (RailVerifier.checkWire
 * on EVM): its bytes hash to the stated transaction and are for the stated chain, its
 * sender's signature recovers, the authorization it carries is the one in its calldata, sent
 * to the asset, stating this payment — and signed by the payer over USDC's EIP-712 domain.
 */
export async function checkEvmWire(wire: string, stated: StatedPayment): Promise<WireCheck> {
  let w: EvmWire;
  try {
    w = EvmWire.parse(JSON.parse(wire));
  } catch {
    return { transaction: null, signatures: [], problems: ["the wire transaction does not decode"] };
  }
  const id = keccak256(w.raw as Hex);
  const problems: string[] = [];
  const signatures: WireCheck["signatures"] = [];
  if (id !== stated.transaction.toLowerCase())
    problems.push(`the wire transaction is ${id}, not ${stated.transaction}`);
  try {
    const tx = parseTransaction(w.raw as Hex);
    if (tx.chainId !== undefined && tx.chainId !== chainIdOf(stated.network))
      problems.push(`it is for chain ${tx.chainId}, not ${stated.network}`);
    signatures.push({
      signer: await recoverTransactionAddress({ serializedTransaction: w.raw as TransactionSerialized }),
      valid: true,
    });
  } catch {
    problems.push("the wire transaction's signature does not recover");
  }
  const inCalldata = authorizationIn(w.raw as Hex);
  if (
    canonicalJson(inCalldata) !==
    canonicalJson({ token: w.token, authorization: w.authorization, signature: w.signature })
  )
    problems.push("the authorization the receipt carries is not the one in the transaction's calldata");
  // A settlement through another contract carries no authorization to check offline: the logs (--rpc) say who authorized it.
  if (!w.authorization || !w.signature) return { transaction: id, signatures, problems };
  if (!sameAddress(w.token, stated.asset)) problems.push(`it calls ${w.token}, not the asset ${stated.asset}`);
  problems.push(...authorizationProblems(w.authorization, stated));
  const recovered = await authorizationSigner(w, stated);
  if ("problem" in recovered) problems.push(recovered.problem);
  else {
    const valid = sameAddress(recovered.signer, stated.payer);
    signatures.push({ signer: valid ? getAddress(stated.payer) : recovered.signer, valid });
    if (!valid) problems.push(`the authorization is signed by ${recovered.signer}, not the payer ${stated.payer}`);
  }
  return { transaction: id, signatures, problems };
}
