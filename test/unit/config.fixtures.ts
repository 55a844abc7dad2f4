/**
 * What the configuration tests share: a home, a config file and a service's environment, and
 * loadConfig over an in-memory file (no real files), answering the config or its issues.
 */
import { resolve } from "node:path";
import { describeIssues, loadConfig, type Config, type ConfigIssue } from "../../src/engine/config/config.js";

export const HOME = resolve("/tmp/paid-actions-unit-home");
export const FILE = "/etc/paid-actions/config.json";
export const API_KEY = "pak_live_0123456789abcdefghijklmnopqrstuv";
export const SERVICE = {
  PAID_ACTIONS_BASE_URL: "https://actions.example.com/v1",
  PAID_ACTIONS_API_KEY: API_KEY,
  PAID_ACTIONS_WALLET: "/keys/agent.json",
};
export const ADDRESS = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin";

/** A readFile over an in-memory map: no real files. `undefined` content = unreadable. */
export function files(map: Record<string, string | undefined>): (path: string) => string {
  return (path) => {
    const text = map[path];
    if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: "ENOENT" });
    return text;
  };
}

export function load(env: Record<string, string>, file?: unknown) {
  const withFile = file === undefined ? env : { PAID_ACTIONS_CONFIG: FILE, ...env };
  const text = typeof file === "string" ? file : JSON.stringify(file);
  return loadConfig({ PAID_ACTIONS_HOME: HOME, ...withFile }, files(file === undefined ? {} : { [FILE]: text }));
}

export function ok(env: Record<string, string>, file?: unknown): Config {
  const r = load(env, file);
  if (!r.ok) throw new Error(`expected a valid config, got: ${describeIssues(r.issues)}`);
  return r.config;
}

export function issues(env: Record<string, string>, file?: unknown): ConfigIssue[] {
  const r = load(env, file);
  if (r.ok) throw new Error("expected config issues, got a valid config");
  return r.issues;
}
