/**
 * `paid-actions-mcp allowance`: the ceiling the chain enforces in delegate mode. The agent
 * key spends the owner's USDC as its SPL Token delegate; only the owner can grant, replace
 * or revoke that allowance, with the owner's own key — never the agent key in this home.
 *
 *   allowance [--json]                                   what is left, read from the chain (per rail)
 *   allowance grant AMOUNT --owner-keypair PATH | --unsigned
 *   allowance revoke --owner-keypair PATH | --unsigned   the on-chain kill switch
 *   allowance submit BASE64                              send a wallet-signed grant or revoke
 *
 * Reads and sends go through the configured SOLANA_RPC_URL (in sandbox mode, the embedded
 * sandbox's). With an EVM network paid on, `allowance` shows each rail's ceiling: on EVM the
 * key's own balance (EIP-3009 has no delegate; there is nothing to grant or revoke there).
 * Exit 0 done; 1 it could not be done (said on stderr); 2 usage.
 */
import { openPaidActions, railsFor, rpcChain, type PaidActions } from "../app/index.js";
import {
  allowanceTransaction,
  describeFee,
  loadPayer,
  loadSigner,
  readAllowance,
  readAllowanceTransaction,
  type AllowanceChange,
  type AllowanceReading,
  type AllowanceView,
  type Payer,
} from "../engine/index.js";
import { formatDecimal } from "../domain/money.js";
import { urlOrigin } from "./audit.js";
import { ownerKeyWarnings } from "./owner-key.js";

export interface AllowanceOptions {
  json?: boolean;
  ownerKeypair?: string;
  unsigned?: boolean;
}

export type AllowanceAction =
  { kind: "show" } | { kind: "change"; change: AllowanceChange } | { kind: "submit"; transaction: string };

const out = (line = "") => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`paid-actions-mcp allowance: ${line}\n`);

class Refused extends Error {}

/** An owner-signed allowance transaction that may be sent: what it changes and what it costs. */
type Sendable = Extract<AllowanceReading, { ok: true }>;

/** How long a sent allowance transaction is waited for before the answer is "not confirmed yet". */
const CONFIRM_TIMEOUT_MS = 60_000;

export async function allowanceCommand(
  env: NodeJS.ProcessEnv,
  action: AllowanceAction,
  o: AllowanceOptions = {},
): Promise<number> {
  // In sandbox mode the embedded sandbox (whose RPC is the chain) is reused, or started for the command.
  const pa = await openPaidActions({
    env,
    log: () => undefined,
    reconcile: false,
    resume: false,
    sandbox: { providerDelayMs: 3_000 },
  });
  try {
    // With an EVM network paid on, what each rail's key may spend: EVM's is its own balance.
    if (action.kind === "show" && pa.config && pa.config.networks.some((n) => n !== pa.config!.network))
      return await showRails(pa, o.json);
    const { payer, rpcUrl } = await delegatePayer(pa);
    // With --owner-keypair, once the keypair has proved to be the owner's (change()).
    if (action.kind !== "change" || o.unsigned) warnOwnerKey(pa, payer);
    if (action.kind === "show") return show(await readAllowance(await rpcChain(pa.config!)(), payer), o.json);
    if (action.kind === "submit") return await submit(pa, payer, action.transaction);
    return await change(pa, payer, action.change, o, rpcUrl);
  } catch (e) {
    err(e instanceof Refused ? e.message : scrubUrl(pa, (e as Error).message));
    return 1;
  } finally {
    await pa.close();
  }
}

function scrubUrl(pa: PaidActions, message: string): string {
  const urls = [pa.config?.rpcUrl, pa.config?.evmRpcUrl].filter((u): u is string => u !== undefined);
  return urls.reduce((m, url) => m.split(url).join(urlOrigin(url)), message);
}

/**
 * What the chain lets each rail's key spend: on Solana, the delegate's allowance within the
 * owner's balance (or, without an owner, the key's own balance); on EVM, the key's own USDC
 * balance — EIP-3009 has no delegate, so the key is a hot wallet a person tops up.
 */
async function showRails(pa: PaidActions, json?: boolean): Promise<number> {
  const config = pa.config!;
  const rails = railsFor(config);
  const rows: Array<{ network: string; wallet: string; account: string; ceiling: string; left: string }> = [];
  for (const network of config.networks) {
    const rail = await rails.rail(network);
    const account = await rail.account();
    const c = await rail.ceiling();
    rows.push({ network, wallet: account.wallet, account: c.account, ceiling: c.kind, left: formatDecimal(c.left) });
  }
  if (json) {
    out(JSON.stringify({ rails: rows }));
    return 0;
  }
  for (const r of rows) {
    out(`${r.network}`);
    out(`  Key          ${r.wallet}`);
    if (r.ceiling === "allowance") {
      out(`  Account      ${r.account} (the owner's, this key its delegate)`);
      out(`  Allowance    ${r.left} USDC left (within the owner's balance)`);
    } else {
      out(`  Account      ${r.account}`);
      out(`  Balance      ${r.left} USDC: all the chain lets this key spend here`);
    }
  }
  if (rows.some((r) => r.network !== config.network))
    out(
      "On EVM there is no delegate (EIP-3009): the key's own balance is the ceiling. Keep in it only what the agent may spend, and top it up.",
    );
  return 0;
}

async function delegatePayer(pa: PaidActions): Promise<{ payer: Payer; rpcUrl: string }> {
  const config = pa.config;
  if (!config) {
    const issues = pa.configResult.ok ? [] : pa.configResult.issues;
    throw new Refused(
      `the configuration is invalid (${issues.map((i) => `${i.key}: ${i.message}`).join("; ")}); see: paid-actions-mcp doctor`,
    );
  }
  if (!config.owner)
    throw new Refused(
      "delegate mode is off: no owner is configured (PAID_ACTIONS_OWNER); the key in this home pays from its own account, with no allowance",
    );
  if (!config.walletPath) throw new Refused("no agent key is configured (PAID_ACTIONS_WALLET)");
  if (!config.rpcUrl) throw new Refused("no Solana RPC is configured (SOLANA_RPC_URL)");
  return {
    payer: await loadPayer(config.walletPath, { mint: config.mint, owner: config.owner }),
    rpcUrl: config.rpcUrl,
  };
}

/**
 * Says on stderr where the owner's key is when this user can read it (owner-key.ts): the files
 * the setup names, and a --owner-keypair once it has proved to be the owner's.
 */
function warnOwnerKey(pa: PaidActions, payer: Payer, ownerKeypair?: string): void {
  const agentKey = { path: pa.config!.walletPath!, address: payer.address };
  for (const w of ownerKeyWarnings({ owner: payer.owner, sandbox: pa.sandbox?.info, agentKey, ownerKeypair }))
    err(`warning: ${w}`);
}

function show(v: AllowanceView, json?: boolean): number {
  if (json) {
    out(
      JSON.stringify({
        owner: v.owner,
        delegate: v.delegate,
        tokenAccount: v.tokenAccount,
        allowance: formatDecimal(v.allowance),
        ownerBalance: formatDecimal(v.ownerBalance),
      }),
    );
    return 0;
  }
  out(`Owner          ${v.owner}`);
  out(`Agent key      ${v.delegate} (this server pays as the owner's delegate)`);
  out(`Token account  ${v.tokenAccount}${v.missing ? " (does not exist yet)" : ""}`);
  out(`Allowance      ${formatDecimal(v.allowance)} USDC left`);
  out(`Owner balance  ${formatDecimal(v.ownerBalance)} USDC`);
  if (!v.missing && v.onChainDelegate === null)
    out("The account names no delegate: nothing can be paid until the owner grants an allowance (allowance grant).");
  else if (!v.missing && v.onChainDelegate !== v.delegate)
    out(
      `The account's delegate is ${v.onChainDelegate}, not this server's key: nothing can be paid until the owner grants it one.`,
    );
  return 0;
}

/** grant / revoke: signed here with the owner's keypair file, or printed unsigned for a wallet. */
async function change(
  pa: PaidActions,
  payer: Payer,
  c: AllowanceChange,
  o: AllowanceOptions,
  rpcUrl: string,
): Promise<number> {
  const chain = await rpcChain(pa.config!)();
  const lifetime = await chain.latestBlockhash();
  const base = { account: payer.source, mint: pa.config!.mint, agent: payer.address, change: c, lifetime };
  if (o.unsigned) {
    out(await allowanceTransaction({ ...base, owner: payer.owner! }));
    process.stderr.write(
      `The transaction above ${describe(c)}. Sign it with the owner's wallet (${payer.owner}) before block height ${lifetime.lastValidHeight} ` +
        `(about a minute on a cluster: its blockhash expires), then send it: paid-actions-mcp allowance submit <signed base64>\n`,
    );
    return 0;
  }
  const owner = await loadSigner(o.ownerKeypair!);
  if (owner.address !== payer.owner)
    throw new Refused(`the keypair ${o.ownerKeypair} is ${owner.address}, not the configured owner ${payer.owner}`);
  warnOwnerKey(pa, payer, o.ownerKeypair);
  const wire = await allowanceTransaction({ ...base, owner });
  return send(pa, payer, wire, await checked(pa, payer, wire), rpcUrl);
}

/** What an owner-signed transaction changes and costs, checked before it is sent (not sent: Refused). */
async function checked(pa: PaidActions, payer: Payer, wire: string): Promise<Sendable> {
  const reading = await readAllowanceTransaction(wire, {
    owner: payer.owner!,
    account: payer.source,
    agent: payer.address,
    mint: pa.config!.mint,
  });
  if (!reading.ok) throw new Refused(`not sent: ${reading.problem}`);
  if (!reading.signed)
    throw new Refused("not sent: the transaction is not signed yet (sign it with the owner's wallet first)");
  return reading;
}

async function submit(pa: PaidActions, payer: Payer, wire: string): Promise<number> {
  return send(pa, payer, wire.trim(), await checked(pa, payer, wire.trim()), pa.config!.rpcUrl!);
}

function describe(c: AllowanceChange): string {
  return c.kind === "grant"
    ? `sets this server's allowance to ${formatDecimal(c.amount)} USDC (it replaces what is left)`
    : "revokes this server's allowance";
}

/**
 * Sends an owner-signed transaction, its fee said first, waits until our RPC confirms it (or
 * says it failed), then shows what is left.
 */
async function send(pa: PaidActions, payer: Payer, wire: string, tx: Sendable, rpcUrl: string): Promise<number> {
  const c = tx.change;
  process.stderr.write(`fee: ${describeFee(tx.fee)}, paid by the owner ${payer.owner}\n`);
  const { createSolanaRpc, signature: toSignature } = await import("@solana/kit");
  const rpc = createSolanaRpc(rpcUrl);
  const sig = await rpc
    .sendTransaction(wire as Parameters<typeof rpc.sendTransaction>[0], {
      encoding: "base64",
      preflightCommitment: "confirmed",
    })
    .send();
  process.stderr.write(`sent ${sig}: it ${describe(c)}; waiting for confirmation\n`);
  const deadline = Date.now() + CONFIRM_TIMEOUT_MS;
  for (;;) {
    const [status] = (await rpc.getSignatureStatuses([toSignature(sig)]).send()).value;
    if (status?.err)
      throw new Refused(
        `transaction ${sig} failed on chain (${JSON.stringify(status.err, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))}): nothing changed`,
      );
    if (status && (status.confirmationStatus === "confirmed" || status.confirmationStatus === "finalized")) break;
    if (Date.now() > deadline)
      throw new Refused(
        `transaction ${sig} is not confirmed after ${CONFIRM_TIMEOUT_MS / 1000} s; run \`paid-actions-mcp allowance\` to see whether it took effect`,
      );
    await new Promise((r) => setTimeout(r, 500));
  }
  out(`Confirmed: ${sig}`);
  return show(await readAllowance(await rpcChain(pa.config!)(), payer));
}
