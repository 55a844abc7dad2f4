/**
 * The Solana rail (rails/port.ts): x402 "exact" on one Solana cluster, in its USDC. It owns
 * everything Solana about a payment — the agent key and its token account (or the owner's,
 * in delegate mode), the blockhash a proof is signed with (lifetimes.ts), the allowance
 * that caps delegate mode (allowance.ts), the memo searches of the wallet's history
 * (memo-scan.ts, memo-resume.ts) and what they say of money (truth.ts) — all through the
 * user's own RPC (rpc.ts). The key and the RPC load on first use, each once (a failed load
 * is tried again on the next use).
 */
import type { PaymentRequirements } from "../../../domain/wire.js";
import { checkChallenge, feePayerDrift } from "../../budget/policy.js";
import { paidError } from "../../errors.js";
import { pickRequirement } from "../../x402-http/challenge.js";
import type { Rail } from "../port.js";
import { AllowanceGate, readAllowance } from "./allowance.js";
import type { ChainPort } from "./chain.js";
import { scanWalletHistory } from "./history.js";
import { Lifetimes } from "./lifetimes.js";
import { MemoScans } from "./memo-resume.js";
import { loadPayer, type Payer } from "./payer.js";
import { createRpcChain } from "./rpc.js";
import { solanaReceipts } from "./receipts.js";
import { ataOf, solanaTruth } from "./truth.js";
import { once } from "../once.js";

export interface SolanaRailOptions {
  /** The cluster (CAIP-2) and its USDC mint. */
  network: string;
  mint: string;
  /** Delegate mode: the owner of the token account the agent key pays from. */
  owner?: string;
  /** The agent key's keypair file, read when the key is first needed. */
  walletPath: () => string | undefined;
  /** Our Solana RPC, read for every request (the embedded sandbox's may move). */
  rpcUrl: () => string | undefined;
  now: () => number;
  /** RPC reads to use instead of the configured RPC's (tests script the chain with it). */
  chain?: () => Promise<ChainPort>;
}

/** What the rail's parts share: its settings, its key and RPC (loaded on first use), its saved memo searches. */
export interface SolanaDeps {
  o: SolanaRailOptions;
  payer: () => Promise<Payer>;
  chain: () => Promise<ChainPort>;
  scans: MemoScans;
  /** Associated token accounts, derived once per owner and mint (truth.ts ataOf). */
  ata: (owner: string, mint: string) => Promise<string>;
}

function depsOf(o: SolanaRailOptions): SolanaDeps {
  const payer = once<Payer>(async () => {
    const walletPath = o.walletPath();
    if (!walletPath)
      throw paidError("config_invalid", {
        issues: [{ key: "PAID_ACTIONS_WALLET", message: "names no keypair file: there is no key to pay with" }],
      });
    return loadPayer(walletPath, o.rpcUrl, { mint: o.mint, owner: o.owner });
  });
  const rpcUrl = () => {
    const url = o.rpcUrl();
    if (!url) throw paidError("config_invalid", { key: "SOLANA_RPC_URL" });
    return url;
  };
  const chain = once<ChainPort>(
    o.chain ??
      (async () => {
        rpcUrl();
        return createRpcChain(rpcUrl);
      }),
  );
  return { o, payer, chain, scans: new MemoScans(), ata: ataOf() };
}

type Paying = Omit<
  Rail,
  "kind" | "network" | "terms" | "fate" | "verifySettlement" | "refundInflow" | "watch" | "evidence" | "signReceipt"
>;

/** The port's checks, ceiling, lifetime, signature and history read, on Solana. */
function paying(d: SolanaDeps): Paying {
  const { o, payer, chain } = d;
  const lifetimes = new Lifetimes(async () => (await chain()).latestBlockhash(), o.now);
  const allowance = new AllowanceGate(o.now);
  return {
    accepts: (r) => pickRequirement({ x402Version: 2, accepts: [r] }, { network: o.network, mint: o.mint }).ok,
    async vet(r) {
      const key = await payer();
      return feePayerDrift(r.extra.feePayer, { wallet: key.address, owner: key.owner }) ? "fee_payer" : undefined;
    },
    async check(priced, accepts, now) {
      const key = await payer();
      return checkChallenge(
        priced,
        accepts,
        { network: o.network, mint: o.mint, wallet: key.address, owner: key.owner },
        now,
      );
    },
    async admit(amount) {
      const key = await payer();
      // Delegate mode: a price the allowance left on chain cannot cover is refused unsigned.
      if (key.owner) await allowance.admit(await chain(), key, amount);
    },
    async ceiling() {
      const key = await payer();
      const rpc = await chain();
      if (!key.owner)
        return { kind: "balance", left: (await rpc.tokenAccount(key.source))?.amount ?? 0n, account: key.source };
      const v = await readAllowance(rpc, key);
      const left = v.allowance < v.ownerBalance ? v.allowance : v.ownerBalance;
      return { kind: "allowance", left, account: key.source };
    },
    warm: () => lifetimes.warm(),
    async lifetime() {
      // Ours: a blockhash our own RPC gave (fetched beside the quote), never the challenge's hint.
      const l = await lifetimes.take().catch((e: unknown) => {
        const detail = (e as Error).message.slice(0, 200);
        throw paidError("payment_failed", { problem: "rpc", what: "blockhash", detail });
      });
      return { rail: "solana", blockhash: l.blockhash, lastValidHeight: l.lastValidHeight };
    },
    dropLifetime: () => lifetimes.drop(),
    async sign(requirement: PaymentRequirements, lifetime, opts) {
      if (lifetime.rail !== "solana") throw new Error("a Solana proof is signed with a Solana lifetime");
      const key = await payer();
      const { proof } = await key.createProof(requirement, lifetime, opts);
      const { blockhash, lastValidHeight } = lifetime;
      const record = { network: o.network, payer: key.address, mint: o.mint, source: key.source };
      return { proof, record: { ...record, blockhash, lastValidHeight } };
    },
    async account() {
      const key = await payer();
      return { wallet: key.address, account: key.source, asset: o.mint };
    },
    async scanHistory(fromMs, opts) {
      const key = await payer();
      return scanWalletHistory(await chain(), key.source, fromMs, opts);
    },
  };
}

export function createSolanaRail(o: SolanaRailOptions): Rail {
  const d = depsOf(o);
  return {
    kind: "solana",
    network: o.network,
    terms: `exact on ${o.network} in USDC ${o.mint}`,
    ...paying(d),
    ...solanaTruth(d),
    ...solanaReceipts(d),
  };
}
