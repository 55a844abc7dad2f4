/**
 * Whether the native SQLite module (better-sqlite3) loads under the Node running us. It is
 * compiled for one Node ABI at install time; a host that launches the server with another
 * Node (Claude Desktop's own, an upgraded system Node, an npx cache filled by an older Node)
 * gets a dlopen error deep in the first journal access, and the host only sees "server
 * disconnected". Checked once at process start, it becomes one line saying what to do.
 *
 * The check loads the very file better-sqlite3 loads later (Node's module cache then hands
 * it the same addon): the dlopen the journal would pay anyway, plus CommonJS resolution —
 * a few milliseconds, which the MCP server spends after its first answer (see cli.ts).
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, sep } from "node:path";

export type NativeSqlite =
  | { ok: true; binary: string }
  | {
      ok: false;
      /** Why it cannot load, in one line (no stack). */
      reason: string;
      /** What to run, in one line. */
      fix: string;
      /** The ABI the module was built for, when the failure says so. */
      builtAbi?: number;
    };

/** Node's NODE_MODULE_VERSION (the native addon ABI) of each release line. */
const NODE_OF_ABI: Readonly<Record<number, string>> = {
  93: "16",
  108: "18",
  115: "20",
  120: "21",
  127: "22",
  131: "23",
  137: "24",
  141: "25",
};

/** `Node 22 (ABI 127)`, or `ABI 999` for an ABI this table does not know. */
export function describeAbi(abi: number): string {
  const major = NODE_OF_ABI[abi];
  return major ? `Node ${major} (ABI ${abi})` : `ABI ${abi}`;
}

/** `v20.20.2 (ABI 115)`: the running Node. */
export function runningNode(): string {
  return `${process.version} (ABI ${process.versions.modules})`;
}

/**
 * The directory in which `npm rebuild better-sqlite3` finds the module: the one holding the
 * `node_modules` that contains it (a checkout, a global install, an npx cache entry).
 */
function installRoot(packageDir: string): string {
  const marker = `${sep}node_modules${sep}`;
  const at = packageDir.lastIndexOf(marker);
  return at >= 0 ? packageDir.slice(0, at) : dirname(packageDir);
}

/** The databases the check opened, never let go (see checkNativeSqlite). */
const probes: unknown[] = [];

/** Tries to load better-sqlite3's native addon; never throws. */
export function checkNativeSqlite(from: string = import.meta.url): NativeSqlite {
  const require = createRequire(from);
  let packageDir: string;
  try {
    packageDir = dirname(require.resolve("better-sqlite3/package.json"));
  } catch {
    return {
      ok: false,
      reason: "the package better-sqlite3 is not installed",
      fix: "reinstall paid-actions-mcp (npm install, or npx -y paid-actions-mcp again)",
    };
  }
  const root = installRoot(packageDir);
  const rebuild = `run \`npm rebuild better-sqlite3\` in ${root} with this Node (${process.version}), or reinstall paid-actions-mcp with it`;
  const binary = join(packageDir, "build", "Release", "better_sqlite3.node");
  try {
    if (existsSync(binary)) require(binary);
    else {
      // An unusual layout: let better-sqlite3 find its addon the way it does itself.
      const Database = require("better-sqlite3") as new (path: string) => { close(): void };
      const probe = new Database(":memory:");
      probe.close();
      // Kept: under Node 24 a better-sqlite3 database left to the garbage collector aborts the
      // process (src/sandbox/db.ts).
      probes.push(probe);
    }
    return { ok: true, binary };
  } catch (e) {
    const message = String((e as Error)?.message ?? e)
      .replace(/\s+/g, " ")
      .trim();
    const versions = /NODE_MODULE_VERSION (\d+)\..*?requires NODE_MODULE_VERSION (\d+)/.exec(message);
    if (versions) {
      const built = Number(versions[1]);
      return {
        ok: false,
        builtAbi: built,
        reason: `it was built for ${describeAbi(built)} and this is Node ${runningNode()}`,
        fix: rebuild,
      };
    }
    if (/Could not locate the bindings file|Cannot find module/.test(message)) {
      return { ok: false, reason: "its compiled addon is missing (the install did not build it)", fix: rebuild };
    }
    return { ok: false, reason: message.slice(0, 300), fix: rebuild };
  }
}

/** The one line a command prints when the module cannot load: what, why, and the fix. */
export function nativeSqliteLine(state: Extract<NativeSqlite, { ok: false }>): string {
  return `paid-actions-mcp: the native SQLite module (better-sqlite3) cannot load: ${state.reason}. Fix: ${state.fix}.`;
}

/** Commands that need SQLite whatever the journal: the sandbox's own store (demo runs one too). */
const ALWAYS_SQLITE = new Set(["sandbox", "demo"]);
/** Commands that start the embedded sandbox when no service is configured. */
const STARTS_SANDBOX = new Set(["serve", "audit", "doctor", "console"]);

/**
 * Whether `command` needs SQLite under this configuration: the sandbox and the demo always
 * (the sandbox's own store); the others when the journal is SQLite, or when they would start
 * the embedded sandbox. Reads the configuration, so only call it when the module failed.
 */
export async function sqliteNeeded(command: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  if (ALWAYS_SQLITE.has(command)) return true;
  const { journalOf, loadConfig } = await import("../engine/index.js");
  const config = loadConfig(env);
  const journal = journalOf(config);
  const onPostgres = journal.url !== undefined || journal.invalid === true;
  const sandboxMode = config.ok && config.config.mode === "sandbox";
  return !onPostgres || (sandboxMode && STARTS_SANDBOX.has(command));
}

/**
 * The line to print before `command` starts, when it needs SQLite and the native module
 * cannot load under this Node; undefined when all is well. A journal on PostgreSQL with a
 * configured service needs no SQLite, so a failure to load is no problem then (the
 * configuration is read only on that path, to keep start-up quick).
 */
export async function sqliteProblem(command: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const state = checkNativeSqlite();
  if (state.ok || !(await sqliteNeeded(command, env))) return undefined;
  return nativeSqliteLine(state);
}
