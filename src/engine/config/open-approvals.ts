/**
 * PAID_ACTIONS_OPEN_APPROVALS / `openApprovals`: whether a server whose host cannot ask the
 * person (no elicitation declared) brings a waiting approval to the person's desktop itself —
 * a notification and the console's page for it opened in the browser. `auto` (the default):
 * only when a desktop session is there (the app layer decides that); `never`: not at all.
 */
import type { ConfigIssue } from "./config.js";

export const OPEN_APPROVALS_ENV = "PAID_ACTIONS_OPEN_APPROVALS";

export const OPEN_APPROVALS = ["auto", "never"] as const;
export type OpenApprovals = (typeof OPEN_APPROVALS)[number];

/** What config.ts's reader offers this setting. */
export interface OpenApprovalsReader {
  issues: ConfigIssue[];
  pick(envName: string, fileValue: string | undefined, filePath: string): [string | undefined, string];
}

/** The setting from the environment or the file; `auto` when neither says. */
export function openApprovalsOf(r: OpenApprovalsReader, fileValue: string | undefined): OpenApprovals {
  const [raw, key] = r.pick(OPEN_APPROVALS_ENV, fileValue, "openApprovals");
  if (raw === undefined) return "auto";
  const value = raw.trim().toLowerCase();
  const known = OPEN_APPROVALS.find((v) => v === value);
  if (known) return known;
  r.issues.push({ key, message: `${JSON.stringify(raw.slice(0, 20))} is not auto or never` });
  return "auto";
}
