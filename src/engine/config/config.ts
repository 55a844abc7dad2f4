/**
 * Configuration: environment variables and an optional JSON file (`PAID_ACTIONS_CONFIG`),
 * the environment winning, validated once. Limits are the human's: nothing an agent sends
 * can raise them. A config that does not parse is reported key by key, and every paying
 * operation fails closed on it.
 */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { parseDecimal } from "../../domain/money.js";
import { USDC_MINT } from "../../domain/networks.js";
import { chainOf } from "./chain.js";
import { NETWORK_RAILS } from "./networks.js";
import { fetchingOf } from "./fetching.js";
import { readConfigFile, type FileConfig } from "./file.js";
import { openApprovalsOf, type OpenApprovals } from "./open-approvals.js";
import { checkJournalUrl, checkSecureUrl, passwordOf } from "./urls.js";

export { actionAllowed, unknownPerActionKeys } from "./action-names.js";
export { isLoopbackHost, passwordOf } from "./urls.js";

export const DEFAULT_LIMITS = { maxPerCall: "5", maxPerDay: "25", approvalAbove: "1" } as const;

export interface Limits {
  maxPerCall: bigint;
  maxPerDay: bigint;
  maxTotal?: bigint;
  approvalAbove: bigint;
  /** Action name patterns with `*` wildcards. */
  allowActions: string[];
  /**
   * Per-action caps keyed by action name or pattern (the allowActions syntax), lower than
   * maxPerCall to matter; every key matching an action applies and the lowest wins.
   */
  perAction: Record<string, bigint>;
  /** Per-origin caps for paid_fetch, keyed by exact origin (`https://api.example.com`), lower than maxPerCall to matter. */
  perOrigin?: Record<string, bigint>;
  /** When set, only these payees may be paid. */
  allowedPayees?: string[];
}

export interface Config {
  /** "sandbox": no service configured, the embedded reference service is used. */
  mode: "sandbox" | "service";
  baseUrl?: string;
  /** Stable identity of the service in the journal (the embedded sandbox's port changes). */
  serviceId?: string;
  apiKey?: string;
  /** The agent key: signs payments (from its own token account, or as the owner's delegate). */
  walletPath?: string;
  /**
   * Delegate mode: the owner whose USDC token account the agent key pays from, as its SPL
   * Token delegate, within the allowance the owner granted on chain. Absent: the agent key
   * pays from its own account.
   */
  owner?: string;
  rpcUrl?: string;
  /**
   * The EVM rail's agent key: a file (mode 0600) holding its private key, `0x` and 64 hex
   * digits (PAID_ACTIONS_EVM_WALLET). EIP-3009 has no delegate: the key spends its own USDC.
   */
  evmWalletPath?: string;
  /** The EVM RPC we trust about money on the EVM network paid on (PAID_ACTIONS_EVM_RPC_URL). */
  evmRpcUrl?: string;
  /** A PostgreSQL journal (postgres://…) shared by several servers; absent: SQLite in the home dir. */
  journalUrl?: string;
  /**
   * CAIP-2 id of the Solana cluster payments are made on (the Solana rail's), and its USDC
   * mint: PAID_ACTIONS_NETWORK, or the Solana network PAID_ACTIONS_NETWORKS names.
   */
  network: string;
  networkExplicit: boolean;
  mint: string;
  /**
   * The networks this server pays on, CAIP-2 ids in order of preference
   * (PAID_ACTIONS_NETWORKS / `networks`; without it, `network` alone): for a challenge with
   * several ways to pay, the first of these that it offers is paid (rails/choose.ts).
   */
  networks: string[];
  home: string;
  limits: Limits;
  http: { timeoutMs: number; maxAttempts: number };
  configFile?: string;
  /** paid_fetch may pay these origins (exact, normalized), or any public one with `*`; none by default. */
  allowOrigins?: string[];
  /** The x402 facilitator whose discovery list search_paid_resources reads (sandbox mode: the sandbox's). */
  facilitatorUrl?: string;
  /**
   * Hand each proof to POST /payments/confirm before asking for the execution, for a service
   * that wants payment recorded apart from execution: one more request and commit per paid
   * call. Off by default: the proof travels with POST /executions, which settles it.
   */
  confirmPayments: boolean;
  /**
   * Whether a server whose host cannot ask the person brings a waiting approval to their
   * desktop (a notification, the console's page opened): `auto` when a desktop session is there.
   */
  openApprovals: OpenApprovals;
}

export interface ConfigIssue {
  /** The environment variable or `<file>:<path>` that is wrong. */
  key: string;
  message: string;
}

/**
 * A broken configuration still says where the journal is (`home`, and `journal` when a
 * journal URL was given): the commands that only read or approve use it, and a journal URL
 * that is itself invalid (`journal.invalid`) must not fall back to SQLite in the home.
 */
export type ConfigResult =
  | { ok: true; config: Config }
  | { ok: false; issues: ConfigIssue[]; home: string; journal?: { url?: string; invalid?: true } };

/** Where the journal is, whatever the rest of the configuration says. */
export function journalOf(r: ConfigResult): { url?: string; invalid?: true } {
  return r.ok ? { url: r.config.journalUrl } : (r.journal ?? {});
}

const ENV = {
  baseUrl: "PAID_ACTIONS_BASE_URL",
  apiKey: "PAID_ACTIONS_API_KEY",
  wallet: "PAID_ACTIONS_WALLET",
  owner: "PAID_ACTIONS_OWNER",
  journalUrl: "PAID_ACTIONS_JOURNAL_URL",
  home: "PAID_ACTIONS_HOME",
  maxPerCall: "PAID_ACTIONS_MAX_PER_CALL",
  maxPerDay: "PAID_ACTIONS_MAX_PER_DAY",
  maxTotal: "PAID_ACTIONS_MAX_TOTAL",
  approvalAbove: "PAID_ACTIONS_APPROVAL_ABOVE",
  allowActions: "PAID_ACTIONS_ALLOW_ACTIONS",
  confirmPayments: "PAID_ACTIONS_CONFIRM_PAYMENTS",
} as const;

const ACTION_PATTERN = /^[a-z0-9*-]+(\.[a-z0-9*-]+)?$|^\*$/;
const BASE58_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

function defaultHome(env: NodeJS.ProcessEnv): string {
  return resolve(env[ENV.home] || join(homedir(), ".paid-actions-mcp"));
}

/** Reads settings: the environment wins over the file; each problem becomes an issue naming its key. */
interface Reader {
  env: NodeJS.ProcessEnv;
  file: FileConfig;
  issues: ConfigIssue[];
  /** `<file>:<path>`, the key an issue of the file names. */
  fileKey(path: string): string;
  /** The value and the key to name in messages. */
  pick(envName: string, fileValue: string | undefined, filePath: string): [string | undefined, string];
  amount(envName: string, fileValue: string | undefined, filePath: string, fallback?: string): bigint | undefined;
}

function reader(
  env: NodeJS.ProcessEnv,
  file: FileConfig,
  configFile: string | undefined,
  issues: ConfigIssue[],
): Reader {
  const fileKey = (path: string) => `${configFile}:${path}`;
  const pick = (envName: string, fileValue: string | undefined, filePath: string): [string | undefined, string] => {
    const fromEnv = env[envName];
    if (fromEnv !== undefined && fromEnv !== "") return [fromEnv, envName];
    return [fileValue, fileKey(filePath)];
  };
  const amount = (
    envName: string,
    fileValue: string | undefined,
    filePath: string,
    fallback?: string,
  ): bigint | undefined => {
    const [raw, key] = pick(envName, fileValue, filePath);
    const text = raw ?? fallback;
    if (text === undefined) return undefined;
    const value = parseDecimal(text.trim());
    if (value === undefined)
      issues.push({
        key,
        message: `${JSON.stringify(text)} is not a USDC amount (a decimal such as "5" or "0.25", at most 6 decimals)`,
      });
    return value;
  };
  return { env, file, issues, fileKey, pick, amount };
}

/** The v1 service: its base URL (absent: the embedded sandbox) and bearer key. */
function serviceOf(r: Reader) {
  const [baseUrlRaw, baseUrlKey] = r.pick(ENV.baseUrl, r.file.baseUrl, "baseUrl");
  let baseUrl: string | undefined;
  if (baseUrlRaw !== undefined) {
    const url = checkSecureUrl(baseUrlRaw, baseUrlKey, r.issues);
    if (url) {
      if (url.username || url.password)
        r.issues.push({ key: baseUrlKey, message: "must not carry credentials; use PAID_ACTIONS_API_KEY" });
      baseUrl = url.toString().replace(/\/+$/, "");
      if (!url.pathname.replace(/\/+$/, "").endsWith("/v1") || url.search || url.hash) {
        r.issues.push({
          key: baseUrlKey,
          message: `must end in the version segment /v1, with no query or fragment (got the path ${url.pathname})`,
        });
      }
    }
  }
  const mode: Config["mode"] = baseUrlRaw === undefined ? "sandbox" : "service";
  const [apiKey, apiKeyKey] = r.pick(ENV.apiKey, r.file.apiKey, "apiKey");
  if (mode === "service" && !apiKey)
    r.issues.push({ key: ENV.apiKey, message: "is required when PAID_ACTIONS_BASE_URL is set" });
  if (apiKey !== undefined && !/^[\x21-\x7e]{1,512}$/.test(apiKey))
    r.issues.push({ key: apiKeyKey, message: "must be 1-512 printable characters without spaces" });
  return { mode, baseUrl, apiKey };
}

/**
 * Who pays on Solana: the agent key's file (required with a service, when a Solana network
 * is paid on), and the owner whose account it spends in delegate mode.
 */
function walletOf(r: Reader, mode: Config["mode"], paysOnSolana: boolean) {
  const [walletRaw] = r.pick(ENV.wallet, r.file.wallet, "wallet");
  if (mode === "service" && paysOnSolana && !walletRaw) {
    r.issues.push({
      key: ENV.wallet,
      message: "is required when PAID_ACTIONS_BASE_URL is set: the path of a Solana CLI keypair file",
    });
  }
  const [ownerRaw, ownerKey] = r.pick(ENV.owner, r.file.owner, "owner");
  const owner = ownerRaw?.trim();
  if (owner !== undefined && !BASE58_ADDRESS.test(owner)) {
    r.issues.push({
      key: ownerKey,
      message: `${JSON.stringify(owner.slice(0, 60))} is not a Solana address (the owner of the USDC account the agent key spends from)`,
    });
  }
  return { walletPath: walletRaw ? resolve(walletRaw) : undefined, owner };
}

/** The human's limits (undefined where an amount is wrong: its issue says so). */
function limitsOf(r: Reader) {
  const l = r.file.limits ?? {};
  const maxPerCall = r.amount(ENV.maxPerCall, l.maxPerCall, "limits.maxPerCall", DEFAULT_LIMITS.maxPerCall);
  const maxPerDay = r.amount(ENV.maxPerDay, l.maxPerDay, "limits.maxPerDay", DEFAULT_LIMITS.maxPerDay);
  const maxTotal = r.amount(ENV.maxTotal, l.maxTotal, "limits.maxTotal");
  const approvalAbove = r.amount(
    ENV.approvalAbove,
    l.approvalAbove,
    "limits.approvalAbove",
    DEFAULT_LIMITS.approvalAbove,
  );
  const [allowRaw, allowKey] = r.pick(
    ENV.allowActions,
    Array.isArray(l.allowActions) ? l.allowActions.join(",") : l.allowActions,
    "limits.allowActions",
  );
  const allowActions = (allowRaw ?? "*")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (allowActions.length === 0) r.issues.push({ key: allowKey, message: "lists no action; use * to allow all" });
  for (const p of allowActions) {
    if (!ACTION_PATTERN.test(p))
      r.issues.push({
        key: allowKey,
        message: `${JSON.stringify(p)} is not an action pattern such as servers.* or domains.register`,
      });
  }
  for (const p of l.allowedPayees ?? []) {
    if (!BASE58_ADDRESS.test(p) && !EVM_ADDRESS.test(p))
      r.issues.push({
        key: r.fileKey("limits.allowedPayees"),
        message: `${JSON.stringify(p)} is not a Solana or EVM address`,
      });
  }
  return {
    maxPerCall: maxPerCall!,
    maxPerDay: maxPerDay!,
    maxTotal,
    approvalAbove: approvalAbove!,
    allowActions,
    perAction: perActionOf(r, l.perAction ?? {}),
    allowedPayees: l.allowedPayees,
  };
}

function perActionOf(r: Reader, entries: Record<string, string>): Record<string, bigint> {
  const perAction: Record<string, bigint> = {};
  for (const [name, value] of Object.entries(entries)) {
    const key = r.fileKey(`limits.perAction.${name}`);
    if (!ACTION_PATTERN.test(name)) {
      r.issues.push({ key, message: "is not an action name or pattern such as servers.provision or servers.*" });
      continue;
    }
    const v = parseDecimal(value.trim());
    if (v === undefined)
      r.issues.push({
        key,
        message: `${JSON.stringify(value)} is not a USDC amount (a decimal such as "5" or "0.25", at most 6 decimals)`,
      });
    else perAction[name] = v;
  }
  return perAction;
}

/** PAID_ACTIONS_CONFIRM_PAYMENTS (true/false, 1/0) or the file's confirmPayments; off when neither says. */
function confirmPaymentsOf(r: Reader): boolean {
  const fromFile = r.file.confirmPayments === undefined ? undefined : String(r.file.confirmPayments);
  const [raw, key] = r.pick(ENV.confirmPayments, fromFile, "confirmPayments");
  if (raw === undefined) return false;
  const on = ["true", "1"].includes(raw.trim().toLowerCase());
  if (!on && !["false", "0"].includes(raw.trim().toLowerCase()))
    r.issues.push({ key, message: `${JSON.stringify(raw.slice(0, 20))} is not true or false` });
  return on;
}

/**
 * Reads and validates the configuration. Never throws: a broken config comes back as a
 * list of issues, each naming its key.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv,
  readFile: (path: string) => string = (p) => readFileSync(p, "utf8"),
): ConfigResult {
  const issues: ConfigIssue[] = [];
  const configFile = env.PAID_ACTIONS_CONFIG || undefined;
  const file = readConfigFile(configFile, readFile, issues);
  const r = reader(env, file, configFile, issues);
  const home = resolve(r.pick(ENV.home, file.home, "home")[0] ?? defaultHome(env));
  const service = serviceOf(r);
  // The chain's issues follow the wallet's (as they always have), but whether a Solana key is
  // needed at all depends on the networks paid on.
  const chainIssues: ConfigIssue[] = [];
  const chain = chainOf({ ...r, issues: chainIssues }, service.mode);
  const wallet = walletOf(
    r,
    service.mode,
    chain.networks.some((n) => NETWORK_RAILS[n] === "solana"),
  );
  issues.push(...chainIssues);
  const [journalUrl, journalKey] = r.pick(ENV.journalUrl, file.journalUrl, "journalUrl");
  if (journalUrl !== undefined) checkJournalUrl(journalUrl, journalKey, issues);
  const fetching = fetchingOf(r);
  const limits = { ...limitsOf(r), perOrigin: fetching.perOrigin };
  const confirmPayments = confirmPaymentsOf(r);
  const openApprovals = openApprovalsOf(r, file.openApprovals);
  if (issues.length > 0) {
    const journalInvalid = issues.some((i) => i.key === journalKey);
    const journal =
      journalUrl === undefined ? undefined : journalInvalid ? { invalid: true as const } : { url: journalUrl };
    return {
      ok: false,
      issues: withoutSecrets(issues, [service.apiKey, journalUrl, passwordOf(journalUrl), chain.evmRpcUrl]),
      home,
      ...(journal ? { journal } : {}),
    };
  }
  const config: Config = {
    mode: service.mode,
    baseUrl: service.baseUrl,
    apiKey: service.apiKey || undefined,
    walletPath: wallet.walletPath,
    ...(wallet.owner ? { owner: wallet.owner } : {}),
    ...chain,
    journalUrl,
    mint: USDC_MINT[chain.network]!,
    home,
    limits,
    http: { timeoutMs: file.http?.timeoutMs ?? 10_000, maxAttempts: file.http?.maxAttempts ?? 4 },
    configFile,
    allowOrigins: fetching.allowOrigins,
    ...(fetching.facilitatorUrl ? { facilitatorUrl: fetching.facilitatorUrl } : {}),
    confirmPayments,
    openApprovals,
  };
  return { ok: true, config };
}

/**
 * Defence in depth: messages are written not to echo secrets, but a value a human put in
 * the wrong key (the API key as a limit, say) is echoed by the generic checks.
 */
function withoutSecrets(issues: ConfigIssue[], secrets: ReadonlyArray<string | undefined>): ConfigIssue[] {
  const present = secrets.filter((s): s is string => s !== undefined && s.length >= 4);
  if (present.length === 0) return issues;
  const scrub = (text: string) => present.reduce((t, s) => t.split(s).join("[redacted]"), text);
  return issues.map((i) => ({ key: scrub(i.key), message: scrub(i.message) }));
}

/** A one-line description of each issue, for errors and `doctor`. */
export function describeIssues(issues: readonly ConfigIssue[]): string {
  return issues.map((i) => `${i.key}: ${i.message}`).join("; ");
}
