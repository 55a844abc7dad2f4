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
import { parseDecimal } from "../domain/money.js";
import { resolveNetwork, SOLANA_DEVNET, SOLANA_MAINNET, USDC_MINT } from "../domain/networks.js";

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
  walletPath?: string;
  rpcUrl?: string;
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

export type ConfigResult = { ok: true; config: Config } | { ok: false; issues: ConfigIssue[]; home: string };

const DEFAULT_RPC: Record<string, string> = {
  [SOLANA_MAINNET]: "https://api.mainnet-beta.solana.com",
  [SOLANA_DEVNET]: "https://api.devnet.solana.com",
};

const Amount = z.union([z.string(), z.number()]).transform(String);

const FileSchema = z.strictObject({
  baseUrl: z.string().optional(),
  apiKey: z.string().optional(),
  wallet: z.string().optional(),
  rpcUrl: z.string().optional(),
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
  rpcUrl: "SOLANA_RPC_URL",
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

/** `*` matches any run of characters; everything else is literal. */
export function actionAllowed(patterns: readonly string[], action: string): boolean {
  return patterns.some((p) => new RegExp(`^${p.split("*").map((s) => s.replace(/[.+?^${}()|[\]\\-]/g, "\\$&")).join(".*")}$`).test(action));
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
  const [rpcRaw, rpcKey] = pick(ENV.rpcUrl, file.rpcUrl, "rpcUrl");
  // The RPC node decides whether a refused payment may be signed again, so it gets the
  // base URL's transport rule; its path and query may carry a provider's API key.
  if (rpcRaw !== undefined) checkSecureUrl(rpcRaw, rpcKey, issues);
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

  if (issues.length > 0) return { ok: false, issues: withoutSecrets(issues, [apiKey]), home };
  return {
    ok: true,
    config: {
      mode,
      baseUrl,
      apiKey: apiKey || undefined,
      walletPath: walletRaw ? resolve(walletRaw) : undefined,
      rpcUrl: rpcRaw ?? (mode === "service" ? DEFAULT_RPC[network] : undefined),
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

/** Edit distance (insertions, deletions, substitutions), for "did you mean" hints. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/** The closest candidate within a distance that suggests a typo (case aside), first in order on a tie. */
function closest(word: string, candidates: Iterable<string>): string | undefined {
  const near = Math.min(3, Math.max(1, Math.floor(word.length / 4)));
  let best: string | undefined;
  let bestDistance = near + 1;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** For a pattern matching nothing: the same pattern with each literal segment replaced by its nearest catalog segment. */
function closestPattern(pattern: string, names: readonly string[]): string | undefined {
  const segments = pattern.split(".");
  const suggestion = segments
    .map((seg, i) => {
      if (seg.includes("*")) return seg;
      const atPosition = new Set(names.map((n) => n.split(".")[i]).filter((s): s is string => s !== undefined));
      return atPosition.has(seg) ? seg : (closest(seg, atPosition) ?? seg);
    })
    .join(".");
  return suggestion !== pattern && names.some((n) => actionAllowed([suggestion], n)) ? suggestion : undefined;
}

/**
 * The `limits.perAction` keys that name no action of the service's catalog: an exact name
 * the catalog lacks (a misspelling caps nothing), or a pattern matching none. Each issue
 * suggests the nearest catalog name (or pattern) when one is close. Pure; the engine calls
 * it once it knows the catalog. Keys read `<configFile>:limits.perAction.<key>`, or
 * `limits.perAction.<key>` without a file.
 */
export function unknownPerActionKeys(
  perAction: Record<string, bigint> | string[],
  catalogActionNames: readonly string[],
  configFile?: string,
): ConfigIssue[] {
  const keys = Array.isArray(perAction) ? perAction : Object.keys(perAction);
  const catalog = new Set(catalogActionNames);
  const issues: ConfigIssue[] = [];
  for (const k of keys) {
    const key = `${configFile ? `${configFile}:` : ""}limits.perAction.${k}`;
    if (k.includes("*")) {
      if (catalogActionNames.some((n) => actionAllowed([k], n))) continue;
      const hint = closestPattern(k, catalogActionNames);
      issues.push({ key, message: `matches no action of the service's catalog, so it caps nothing${hint ? `; did you mean ${hint}?` : ""}` });
    } else if (!catalog.has(k)) {
      const hint = closest(k, catalogActionNames);
      issues.push({ key, message: `names no action of the service's catalog, so it caps nothing${hint ? `; did you mean ${hint}?` : ""}` });
    }
  }
  return issues;
}

/** A one-line description of each issue, for errors and `doctor`. */
export function describeIssues(issues: readonly ConfigIssue[]): string {
  return issues.map((i) => `${i.key}: ${i.message}`).join("; ");
}
