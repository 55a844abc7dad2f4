/**
 * Configuration: environment variables and an optional JSON file (`PAID_ACTIONS_CONFIG`),
 * the environment winning, validated once. Limits are the human's: nothing an agent sends
 * can raise them. A config that does not parse is reported key by key, and every paying
 * operation fails closed on it.
 */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { parseDecimal } from "../../domain/money.js";
import { resolveNetwork, SOLANA_DEVNET, SOLANA_MAINNET, USDC_MINT } from "../../domain/networks.js";
import { closest } from "./action-names.js";

export { actionAllowed, unknownPerActionKeys } from "./action-names.js";

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
  /** A PostgreSQL journal (postgres://…) shared by several servers; absent: SQLite in the home dir. */
  journalUrl?: string;
  /** CAIP-2 id of the cluster payments are made on, and its USDC mint. */
  network: string;
  networkExplicit: boolean;
  mint: string;
  home: string;
  limits: Limits;
  http: { timeoutMs: number; maxAttempts: number };
  configFile?: string;
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
export type ConfigResult = { ok: true; config: Config } | { ok: false; issues: ConfigIssue[]; home: string; journal?: { url?: string; invalid?: true } };

/** Where the journal is, whatever the rest of the configuration says. */
export function journalOf(r: ConfigResult): { url?: string; invalid?: true } {
  return r.ok ? { url: r.config.journalUrl } : (r.journal ?? {});
}

const DEFAULT_RPC: Record<string, string> = {
  [SOLANA_MAINNET]: "https://api.mainnet-beta.solana.com",
  [SOLANA_DEVNET]: "https://api.devnet.solana.com",
};

const Amount = z.union([z.string(), z.number()]).transform(String);

const FileSchema = z.strictObject({
  baseUrl: z.string().optional(),
  apiKey: z.string().optional(),
  wallet: z.string().optional(),
  owner: z.string().optional(),
  rpcUrl: z.string().optional(),
  journalUrl: z.string().optional(),
  network: z.string().optional(),
  home: z.string().optional(),
  limits: z
    .strictObject({
      maxPerCall: Amount.optional(),
      maxPerDay: Amount.optional(),
      maxTotal: Amount.optional(),
      approvalAbove: Amount.optional(),
      allowActions: z.union([z.string(), z.array(z.string())]).optional(),
      perAction: z.record(z.string(), Amount).optional(),
      allowedPayees: z.array(z.string()).optional(),
    })
    .optional(),
  http: z
    .strictObject({
      timeoutMs: z.int().min(100).max(120_000).optional(),
      maxAttempts: z.int().min(1).max(10).optional(),
    })
    .optional(),
});

/** The keys the file may have at `path` (the root, `limits` or `http`), for "did you mean" hints. */
function knownFileKeys(path: readonly PropertyKey[]): string[] {
  if (path.length === 0) return Object.keys(FileSchema.shape);
  if (path.length === 1 && path[0] === "limits") return Object.keys(FileSchema.shape.limits.unwrap().shape);
  if (path.length === 1 && path[0] === "http") return Object.keys(FileSchema.shape.http.unwrap().shape);
  return [];
}

const ENV = {
  baseUrl: "PAID_ACTIONS_BASE_URL",
  apiKey: "PAID_ACTIONS_API_KEY",
  wallet: "PAID_ACTIONS_WALLET",
  owner: "PAID_ACTIONS_OWNER",
  rpcUrl: "SOLANA_RPC_URL",
  journalUrl: "PAID_ACTIONS_JOURNAL_URL",
  network: "PAID_ACTIONS_NETWORK",
  home: "PAID_ACTIONS_HOME",
  maxPerCall: "PAID_ACTIONS_MAX_PER_CALL",
  maxPerDay: "PAID_ACTIONS_MAX_PER_DAY",
  maxTotal: "PAID_ACTIONS_MAX_TOTAL",
  approvalAbove: "PAID_ACTIONS_APPROVAL_ABOVE",
  allowActions: "PAID_ACTIONS_ALLOW_ACTIONS",
} as const;

const ACTION_PATTERN = /^[a-z0-9*-]+(\.[a-z0-9*-]+)?$|^\*$/;
const BASE58_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

/**
 * Plain http is allowed only to this machine. Hosts are compared after WHATWG URL parsing,
 * which already normalises `127.1` and `0x7f000001` to `127.0.0.1`.
 */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * Checks an http(s) URL that must not be reachable by a network attacker: https, or plain
 * http to a loopback host. Issues name the key and the problem, never the URL's secrets.
 */
function checkSecureUrl(raw: string, key: string, issues: ConfigIssue[]): URL | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    issues.push({ key, message: `is not an http(s) URL${raw.includes("://") ? "" : " (it has no scheme such as https://)"}` });
    return undefined;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    issues.push({ key, message: "is not an http(s) URL" });
    return undefined;
  }
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname)) {
    issues.push({ key, message: "must use https (plain http is allowed only for a loopback host: 127.x.x.x, localhost, [::1])" });
  }
  return url;
}

/** TLS modes of a PostgreSQL URL that encrypt the connection. */
const TLS_SSLMODES = new Set(["require", "verify-ca", "verify-full"]);

/**
 * Checks a PostgreSQL journal URL: postgres(ql)://, a host and a database, and TLS
 * (`sslmode=require`, `verify-ca` or `verify-full`) unless the host is loopback. Issues
 * name the key and the problem, never the URL (it may carry a password).
 */
function checkJournalUrl(raw: string, key: string, issues: ConfigIssue[]): void {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    issues.push({ key, message: "is not a PostgreSQL URL such as postgres://user@host:5432/paid_actions?sslmode=verify-full" });
    return;
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    issues.push({ key, message: "must be a postgres:// (or postgresql://) URL" });
    return;
  }
  if (!url.hostname) issues.push({ key, message: "names no host" });
  if (url.pathname.replace(/^\//, "") === "") issues.push({ key, message: "names no database (postgres://host:5432/<database>)" });
  const sslmode = url.searchParams.get("sslmode");
  if (url.hostname && !isLoopbackHost(url.hostname) && !(sslmode && TLS_SSLMODES.has(sslmode))) {
    issues.push({ key, message: "must use TLS to a host that is not loopback: add sslmode=verify-full (or require) to the URL" });
  }
}

function defaultHome(env: NodeJS.ProcessEnv): string {
  return resolve(env[ENV.home] || join(homedir(), ".paid-actions-mcp"));
}

/**
 * Reads and validates the configuration. Never throws: a broken config comes back as a
 * list of issues, each naming its key.
 */
export function loadConfig(env: NodeJS.ProcessEnv, readFile: (path: string) => string = (p) => readFileSync(p, "utf8")): ConfigResult {
  const issues: ConfigIssue[] = [];
  const configFile = env.PAID_ACTIONS_CONFIG || undefined;
  let file: z.infer<typeof FileSchema> = {};
  if (configFile) {
    let text: string | undefined;
    try {
      text = readFile(configFile);
    } catch {
      issues.push({ key: "PAID_ACTIONS_CONFIG", message: `cannot read config file ${configFile}` });
    }
    if (text !== undefined) {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        issues.push({ key: configFile, message: "is not valid JSON" });
      }
      if (json !== undefined) {
        const parsed = FileSchema.safeParse(json);
        if (parsed.success) file = parsed.data;
        else {
          for (const i of parsed.error.issues) {
            if (i.code === "unrecognized_keys") {
              // One issue per unknown key, named, with the known key it most resembles.
              const known = knownFileKeys(i.path);
              for (const k of i.keys) {
                const hint = closest(k, known);
                issues.push({ key: `${configFile}:${[...i.path, k].join(".")}`, message: `is not a known key${hint ? `; did you mean ${hint}?` : ""}` });
              }
            } else issues.push({ key: `${configFile}:${i.path.join(".") || "(root)"}`, message: i.message });
          }
        }
      }
    }
  }
  const fileKey = (path: string) => `${configFile}:${path}`;
  /** The environment wins over the file. Returns [value, key-for-messages]. */
  const pick = (envName: string, fileValue: string | undefined, filePath: string): [string | undefined, string] => {
    const fromEnv = env[envName];
    if (fromEnv !== undefined && fromEnv !== "") return [fromEnv, envName];
    return [fileValue, fileKey(filePath)];
  };

  const amount = (envName: string, fileValue: string | undefined, filePath: string, fallback?: string): bigint | undefined => {
    const [raw, key] = pick(envName, fileValue, filePath);
    const text = raw ?? fallback;
    if (text === undefined) return undefined;
    const value = parseDecimal(text.trim());
    if (value === undefined) {
      issues.push({ key, message: `${JSON.stringify(text)} is not a USDC amount (a decimal such as "5" or "0.25", at most 6 decimals)` });
    }
    return value;
  };

  const home = resolve(pick(ENV.home, file.home, "home")[0] ?? defaultHome(env));
  const [baseUrlRaw, baseUrlKey] = pick(ENV.baseUrl, file.baseUrl, "baseUrl");
  let baseUrl: string | undefined;
  if (baseUrlRaw !== undefined) {
    const url = checkSecureUrl(baseUrlRaw, baseUrlKey, issues);
    if (url) {
      if (url.username || url.password) issues.push({ key: baseUrlKey, message: "must not carry credentials; use PAID_ACTIONS_API_KEY" });
      baseUrl = url.toString().replace(/\/+$/, "");
      if (!url.pathname.replace(/\/+$/, "").endsWith("/v1") || url.search || url.hash) {
        issues.push({ key: baseUrlKey, message: `must end in the version segment /v1, with no query or fragment (got the path ${url.pathname})` });
      }
    }
  }
  const mode = baseUrlRaw === undefined ? "sandbox" : "service";
  const [apiKey, apiKeyKey] = pick(ENV.apiKey, file.apiKey, "apiKey");
  if (mode === "service" && !apiKey) issues.push({ key: ENV.apiKey, message: "is required when PAID_ACTIONS_BASE_URL is set" });
  if (apiKey !== undefined && !/^[\x21-\x7e]{1,512}$/.test(apiKey)) {
    issues.push({ key: apiKeyKey, message: "must be 1-512 printable characters without spaces" });
  }
  const [walletRaw] = pick(ENV.wallet, file.wallet, "wallet");
  if (mode === "service" && !walletRaw) {
    issues.push({ key: ENV.wallet, message: "is required when PAID_ACTIONS_BASE_URL is set: the path of a Solana CLI keypair file" });
  }
  const [ownerRaw, ownerKey] = pick(ENV.owner, file.owner, "owner");
  const owner = ownerRaw?.trim();
  if (owner !== undefined && !BASE58_ADDRESS.test(owner)) issues.push({ key: ownerKey, message: `${JSON.stringify(owner.slice(0, 60))} is not a Solana address (the owner of the USDC account the agent key spends from)` });
  const [rpcRaw, rpcKey] = pick(ENV.rpcUrl, file.rpcUrl, "rpcUrl");
  // The RPC node decides whether a refused payment may be signed again, so it gets the
  // base URL's transport rule; its path and query may carry a provider's API key.
  if (rpcRaw !== undefined) checkSecureUrl(rpcRaw, rpcKey, issues);
  const [journalUrl, journalKey] = pick(ENV.journalUrl, file.journalUrl, "journalUrl");
  if (journalUrl !== undefined) checkJournalUrl(journalUrl, journalKey, issues);
  const [networkRaw, networkKey] = pick(ENV.network, file.network, "network");
  let network = mode === "sandbox" ? SOLANA_DEVNET : SOLANA_MAINNET;
  if (networkRaw !== undefined) {
    const resolved = resolveNetwork(networkRaw.trim());
    if (!resolved) {
      issues.push({ key: networkKey, message: `${JSON.stringify(networkRaw)} is not a known network; use solana, solana-devnet or a CAIP-2 id such as ${SOLANA_MAINNET}` });
    } else if (mode === "sandbox" && resolved !== SOLANA_DEVNET) {
      issues.push({
        key: networkKey,
        message: `the embedded sandbox emulates solana-devnet; unset it, or set PAID_ACTIONS_BASE_URL to a service on ${resolved}`,
      });
    } else network = resolved;
  }

  const l = file.limits ?? {};
  const maxPerCall = amount(ENV.maxPerCall, l.maxPerCall, "limits.maxPerCall", DEFAULT_LIMITS.maxPerCall);
  const maxPerDay = amount(ENV.maxPerDay, l.maxPerDay, "limits.maxPerDay", DEFAULT_LIMITS.maxPerDay);
  const maxTotal = amount(ENV.maxTotal, l.maxTotal, "limits.maxTotal");
  const approvalAbove = amount(ENV.approvalAbove, l.approvalAbove, "limits.approvalAbove", DEFAULT_LIMITS.approvalAbove);

  const [allowRaw, allowKey] = pick(ENV.allowActions, Array.isArray(l.allowActions) ? l.allowActions.join(",") : l.allowActions, "limits.allowActions");
  const allowActions = (allowRaw ?? "*").split(",").map((s) => s.trim()).filter(Boolean);
  if (allowActions.length === 0) issues.push({ key: allowKey, message: "lists no action; use * to allow all" });
  for (const p of allowActions) {
    if (!ACTION_PATTERN.test(p)) issues.push({ key: allowKey, message: `${JSON.stringify(p)} is not an action pattern such as servers.* or domains.register` });
  }
  const perAction: Record<string, bigint> = {};
  for (const [name, value] of Object.entries(l.perAction ?? {})) {
    const key = fileKey(`limits.perAction.${name}`);
    if (!ACTION_PATTERN.test(name)) {
      issues.push({ key, message: "is not an action name or pattern such as servers.provision or servers.*" });
      continue;
    }
    const v = parseDecimal(value.trim());
    if (v === undefined) issues.push({ key, message: `${JSON.stringify(value)} is not a USDC amount (a decimal such as "5" or "0.25", at most 6 decimals)` });
    else perAction[name] = v;
  }
  if (l.allowedPayees) {
    for (const p of l.allowedPayees) {
      if (!BASE58_ADDRESS.test(p)) issues.push({ key: fileKey("limits.allowedPayees"), message: `${JSON.stringify(p)} is not a Solana address` });
    }
  }

  if (issues.length > 0) {
    const journalInvalid = issues.some((i) => i.key === journalKey);
    const journal = journalUrl === undefined ? undefined : journalInvalid ? { invalid: true as const } : { url: journalUrl };
    return { ok: false, issues: withoutSecrets(issues, [apiKey, journalUrl, passwordOf(journalUrl)]), home, ...(journal ? { journal } : {}) };
  }
  return {
    ok: true,
    config: {
      mode,
      baseUrl,
      apiKey: apiKey || undefined,
      walletPath: walletRaw ? resolve(walletRaw) : undefined,
      ...(owner ? { owner } : {}),
      rpcUrl: rpcRaw ?? (mode === "service" ? DEFAULT_RPC[network] : undefined),
      journalUrl,
      network,
      networkExplicit: networkRaw !== undefined,
      mint: USDC_MINT[network]!,
      home,
      limits: {
        maxPerCall: maxPerCall!,
        maxPerDay: maxPerDay!,
        maxTotal,
        approvalAbove: approvalAbove!,
        allowActions,
        perAction,
        allowedPayees: l.allowedPayees,
      },
      http: { timeoutMs: file.http?.timeoutMs ?? 10_000, maxAttempts: file.http?.maxAttempts ?? 4 },
      configFile,
    },
  };
}

/** The password in a URL, if it has one (a secret to keep out of every message). */
export function passwordOf(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  try {
    return decodeURIComponent(new URL(raw).password) || undefined;
  } catch {
    return undefined;
  }
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
