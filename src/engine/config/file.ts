/**
 * The optional JSON configuration file (`PAID_ACTIONS_CONFIG`): its schema, strict (an
 * unknown key is an issue, with the known key it most resembles), and reading it.
 */
import { z } from "zod";
import { closest } from "./action-names.js";
import type { ConfigIssue } from "./config.js";
import { OPEN_APPROVALS } from "./open-approvals.js";

const Amount = z.union([z.string(), z.number()]).transform(String);

export const FileSchema = z.strictObject({
  baseUrl: z.string().optional(),
  apiKey: z.string().optional(),
  wallet: z.string().optional(),
  owner: z.string().optional(),
  rpcUrl: z.string().optional(),
  evmWallet: z.string().optional(),
  evmRpcUrl: z.string().optional(),
  journalUrl: z.string().optional(),
  network: z.string().optional(),
  networks: z.union([z.string(), z.array(z.string())]).optional(),
  home: z.string().optional(),
  allowOrigins: z.union([z.string(), z.array(z.string())]).optional(),
  facilitatorUrl: z.string().optional(),
  confirmPayments: z.boolean().optional(),
  openApprovals: z.enum(OPEN_APPROVALS).optional(),
  limits: z
    .strictObject({
      maxPerCall: Amount.optional(),
      maxPerDay: Amount.optional(),
      maxTotal: Amount.optional(),
      approvalAbove: Amount.optional(),
      allowActions: z.union([z.string(), z.array(z.string())]).optional(),
      perAction: z.record(z.string(), Amount).optional(),
      perOrigin: z.record(z.string(), Amount).optional(),
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

export type FileConfig = z.infer<typeof FileSchema>;

/** The file's settings ({} when there is none or it cannot be used; each problem is an issue). */
export function readConfigFile(
  configFile: string | undefined,
  readFile: (path: string) => string,
  issues: ConfigIssue[],
): FileConfig {
  if (!configFile) return {};
  let text: string;
  try {
    text = readFile(configFile);
  } catch {
    issues.push({ key: "PAID_ACTIONS_CONFIG", message: `cannot read config file ${configFile}` });
    return {};
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    issues.push({ key: configFile, message: "is not valid JSON" });
    return {};
  }
  const parsed = FileSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  for (const i of parsed.error.issues) {
    if (i.code === "unrecognized_keys") {
      // One issue per unknown key, named, with the known key it most resembles.
      const known = knownFileKeys(i.path);
      for (const k of i.keys) {
        const hint = closest(k, known);
        issues.push({
          key: `${configFile}:${[...i.path, k].join(".")}`,
          message: `is not a known key${hint ? `; did you mean ${hint}?` : ""}`,
        });
      }
    } else issues.push({ key: `${configFile}:${i.path.join(".") || "(root)"}`, message: i.message });
  }
  return {};
}
