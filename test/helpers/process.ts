/**
 * Test helpers for the built CLI as a separate process: make sure dist/ is current, start
 * `node dist/cli.js sandbox` on a home directory and wait until it serves, stop it with a
 * signal, and pay with the x402 reference client against whatever sandbox.json says.
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createKeyPairSignerFromBytes, type KeyPairSigner } from "@solana/kit";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import type { PaymentRequirements as X402Requirements } from "@x402/core/types";
import type { SandboxInfo } from "../../src/sandbox/index.js";
import { pollUntil } from "./wait.js";

export const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const CLI_PATH = join(PROJECT_ROOT, "dist", "cli.js");

/** Every TypeScript module under src/. */
function sources(dir = join(PROJECT_ROOT, "src")): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

/** Whether dist/ holds a .js at least as new as each module under src/. */
export function distIsCurrent(): boolean {
  const src = join(PROJECT_ROOT, "src");
  for (const file of sources()) {
    const js = join(PROJECT_ROOT, "dist", relative(src, file)).replace(/\.ts$/, ".js");
    if (!existsSync(js) || statSync(js).mtimeMs < statSync(file).mtimeMs) return false;
  }
  return existsSync(CLI_PATH);
}

/**
 * Builds dist/ with `npm run build` when a module is missing or older than its source.
 */
export function ensureBuilt(): void {
  if (distIsCurrent()) return;
  try {
    execFileSync("npm", ["run", "build"], { cwd: PROJECT_ROOT, stdio: "pipe", timeout: 60_000 });
  } catch (e) {
    if (!distIsCurrent()) {
      const out = e as { stdout?: Buffer; stderr?: Buffer; message: string };
      throw new Error(`npm run build failed: ${out.stdout?.toString() ?? ""}${out.stderr?.toString() ?? out.message}`);
    }
  }
  if (!distIsCurrent()) throw new Error("npm run build did not bring dist/ up to date with src/");
}

export interface CliSandbox {
  child: ChildProcess;
  pid: number;
  info: SandboxInfo;
  /** baseUrl without /v1. */
  root: string;
  home: string;
  /** Everything the process wrote on stderr so far. */
  stderr(): string;
  /** Resolves when the process has exited (and has been reaped). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends a signal and waits (bounded) for the exit; SIGKILL if it overstays. */
  stop(signal: NodeJS.Signals, timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const live = new Set<ChildProcess>();

/** SIGKILLs every sandbox process these helpers started that is still running. */
export function killAllStarted(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  live.clear();
}

/**
 * Starts `node dist/cli.js sandbox --port 0 --home <home> ...args` and waits until its
 * pid file names it, sandbox.json was rewritten by it and GET /health answers.
 */
export async function startCliSandbox(
  home: string,
  args: string[] = [],
  opts: { nodeArgs?: string[]; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CliSandbox> {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const startedAt = Date.now();
  const child = spawn(
    process.execPath,
    [...(opts.nodeArgs ?? []), CLI_PATH, "sandbox", "--port", "0", "--home", home, ...args],
    {
      cwd: PROJECT_ROOT,
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, NODE_OPTIONS: "", ...(opts.env ?? {}) },
    },
  );
  live.add(child);
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (d: string) => {
    stderr += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });
  const stop = async (signal: NodeJS.Signals, stopTimeoutMs = 10_000) => {
    if (!hasExited) child.kill(signal);
    const timer = setTimeout(() => child.kill("SIGKILL"), stopTimeoutMs);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  };

  /** The sandbox's info once it serves, undefined until then; throws if the process died. */
  const serving = async (): Promise<SandboxInfo | undefined> => {
    if (hasExited) throw new Error(`sandbox exited before serving: ${stderr}`);
    try {
      const pid = Number(readFileSync(join(home, "sandbox.pid"), "utf8").trim());
      const infoPath = join(home, "sandbox.json");
      // sandbox.json from an earlier run may still be there: wait for this process's own.
      if (pid !== child.pid || statSync(infoPath).mtimeMs < startedAt - 1_000) return undefined;
      const info = JSON.parse(readFileSync(infoPath, "utf8")) as SandboxInfo;
      const res = await fetch(`${rootOf(info)}/health`, { signal: AbortSignal.timeout(1_000) });
      return res.status === 200 && ((await res.json()) as { ok?: boolean }).ok === true ? info : undefined;
    } catch {
      return undefined; // not yet: no pid file, a half-written sandbox.json, no listener
    }
  };
  const found = await pollUntil(serving, (info) => info !== undefined, {
    timeoutMs: timeoutMs - (Date.now() - startedAt),
    intervalMs: 50,
  });
  if (!found.value) {
    await stop("SIGKILL");
    throw new Error(`sandbox did not start within ${timeoutMs} ms: ${stderr}`);
  }
  const info = found.value;
  return { child, pid: child.pid!, info, root: rootOf(info), home, stderr: () => stderr, exited, stop };
}

const rootOf = (info: SandboxInfo) => info.baseUrl.replace(/\/v1\/?$/, "");

export interface Payer {
  wallet: KeyPairSigner;
  /** base64(JSON(x402 v2 PaymentPayload)) built by the reference client scheme. */
  proof(requirements: any): Promise<string>;
}

/** A payer using the demo wallet at info.walletPath and the sandbox's own RPC. */
export async function payerFor(info: SandboxInfo): Promise<Payer> {
  const wallet = await createKeyPairSignerFromBytes(
    Uint8Array.from(JSON.parse(readFileSync(info.walletPath, "utf8")) as number[]),
  );
  const client = new ExactSvmScheme(wallet, { rpcUrl: info.rpcUrl });
  return {
    wallet,
    async proof(requirements) {
      const result = await client.createPaymentPayload(2, requirements as X402Requirements);
      return Buffer.from(JSON.stringify({ ...result, accepted: requirements })).toString("base64");
    },
  };
}

/**
 * Fault injection for a CLI sandbox: a module to preload with `node --import <file>` that
 * SIGKILLs the process at an exact point of the first ledger submission it makes, `before`
 * the transaction is applied or right `after` it was applied and logged (committed). The
 * service code runs unchanged; only the moment of the kill -9 is chosen.
 */
export function writeKillOnSubmitPreload(dir: string, when: "before" | "after"): string {
  const ledgerUrl = pathToFileURL(join(PROJECT_ROOT, "dist", "sandbox", "ledger", "ledger.js")).href;
  const file = join(dir, `kill-${when}-submit.mjs`);
  writeFileSync(
    file,
    `import { Ledger } from ${JSON.stringify(ledgerUrl)};
const submit = Ledger.prototype.submit;
Ledger.prototype.submit = function (wire) {
  if (${JSON.stringify(when)} === "before") process.kill(process.pid, "SIGKILL");
  const result = submit.call(this, wire);
  if (result.ok) process.kill(process.pid, "SIGKILL");
  return result;
};
`,
  );
  return file;
}
