/**
 * What a packaging smoke run must show, whichever way the server was installed and whichever
 * Node ran it: the tools of sandbox mode, one paid call, and doctor's report.
 */
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { explain, type Smoked } from "./install.js";

/** Every tool the server lists in sandbox mode: one per catalog action, then the mirror tools. */
export const SANDBOX_TOOLS = [
  "agent_services_purchase",
  "companies_create",
  "domains_register",
  "servers_provision",
  "servers_renew",
  "storage_purchase",
  "quote_action",
  "get_execution",
  "list_executions",
  "wait_for_execution",
  "get_spending",
  "search_agent_services",
  "get_company",
  "paid_fetch",
  "search_paid_resources",
];

/** What one install-and-smoke run must show, whichever Node ran it. */
export function expectSmokePassed(s: Smoked, nodeLine: RegExp): void {
  // The tarball installed without its dev dependencies: prepare (tsc) did not run, nor was needed.
  expect(existsSync(join(s.prefix, "node_modules", "paid-actions-mcp", "dist", "cli.js"))).toBe(true);
  expect(existsSync(join(s.prefix, "node_modules", "typescript"))).toBe(false);
  expect(existsSync(join(s.prefix, "node_modules", "vitest"))).toBe(false);

  expect(s.paid.server).toMatchObject({
    name: "paid-actions-mcp",
    version: JSON.parse(readFileSync(join(s.prefix, "node_modules", "paid-actions-mcp", "package.json"), "utf8"))
      .version,
  });
  expect([...s.tools].sort()).toEqual([...SANDBOX_TOOLS].sort());
  expect(s.paid.isError, JSON.stringify(s.paid).slice(0, 600)).toBe(false);
  expect(s.paid.executionId).toMatch(/^[A-Za-z0-9_-]+$/);
  expect(s.paid.payment.amount).toBe("0.288");
  expect(typeof s.paid.payment.transaction).toBe("string");
  expect(s.paid.payment.transaction.length).toBeGreaterThan(40);
  expect(s.serverStderr).toMatch(/sandbox mode/);

  expect(s.doctor.code, explain("npx paid-actions-mcp doctor", s.doctor)).toBe(0);
  expect(s.doctor.stdout).toMatch(nodeLine);
  // The native module is the installed copy, built for this Node, not the checkout's.
  expect(s.doctor.stdout).toContain(
    `[ok  ] sqlite: better-sqlite3 loaded (${join(realpathSync(s.prefix), "node_modules", "better-sqlite3")}`,
  );
  expect(s.doctor.stdout).toMatch(/journal: sqlite at .*, 1 intent\(s\)/);
  expect(s.doctor.stdout).toContain("Ready to pay.");
}
