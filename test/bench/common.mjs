// What every section of `npm run bench` shares: the run's settings (BENCH_QUICK=1 for a
// smaller run), its work dir, timing and statistics, and the reference service started as a
// separate process, with the environment and MCP client that point a server at it.
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { connectInspector, INSPECT_FLAG, inspectorUrl } from "./inspector.mjs";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const CLI = join(ROOT, "dist", "cli.js");
export const QUICK = process.env.BENCH_QUICK === "1";
export const N_PAID = QUICK ? 40 : 200;
/** The WAN section: paid calls per client, in rounds alternating the two, 20 ms each way. */
export const N_WAN = QUICK ? 20 : 100;
export const WAN_ROUNDS = QUICK ? 2 : 5;
export const WAN_ONE_WAY_MS = 20;
export const N_MEMORY = QUICK ? 100 : 1000;
export const COLD_RUNS = QUICK ? 3 : 10;
export const RECONCILE_LEVELS = QUICK ? [10, 100] : [10, 100, 1000];
export const RECONCILE_WINDOW_MS = QUICK ? 4000 : 10_000;
export const JOURNAL_LEVELS = QUICK ? [1_000, 100_000] : [1_000, 100_000, 1_000_000];
export const SERVICE_WINDOW_MS = QUICK ? 2000 : 5000;
export const INPUT = { region: "eu-west-1", plan: "nano", durationHours: 1 };

export const log = (line) => process.stderr.write(`${line}\n`);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const work = mkdtempSync(join(tmpdir(), "pam-bench-"));
export const children = new Set();
process.on("exit", () => {
  for (const c of children) c.kill("SIGKILL");
  rmSync(work, { recursive: true, force: true });
});

/**
 * The sandbox's ledger accepts only its current blockhash and replaces it every 60 s, as a
 * cluster expires them: a proof signed just before that is refused, and signed again. The
 * benchmark does the same (the engine does it by itself), timing only the attempt that paid.
 */
export async function timed(once, samples) {
  for (let attempt = 0; attempt < 3; attempt++) {
    const t0 = performance.now();
    try {
      await once();
      samples?.push(performance.now() - t0);
      return;
    } catch (e) {
      if (attempt === 2) throw e;
    }
  }
}

export function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * (s.length - 1)))];
  return { n: s.length, median: q(0.5), p95: q(0.95), min: s[0], max: s[s.length - 1] };
}
export const ms = (v) => (v === undefined ? "-" : v < 10 ? v.toFixed(2) : v.toFixed(1));

// ---- The reference service, as a separate process --------------------------------------

/** `nodeArgs`: Node's own flags for the service's process (`--inspect=…`: `inspector` is its URL). */
export async function startSandbox(name, delayMs, nodeArgs = []) {
  const home = join(work, name);
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
      CLI,
      "sandbox",
      "--port",
      "0",
      "--home",
      home,
      "--provider-delay-ms",
      String(delayMs),
      "--rate-limit",
      "100000",
    ],
    {
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  children.add(child);
  let err = "";
  child.stderr.on("data", (c) => (err += c));
  for (let i = 0; i < 300; i++) {
    if (existsSync(join(home, "sandbox.json")) && err.includes("is running")) break;
    if (child.exitCode !== null) throw new Error(`sandbox exited: ${err}`);
    await sleep(50);
  }
  const info = JSON.parse(readFileSync(join(home, "sandbox.json"), "utf8"));
  return { info, child, home, inspector: /Debugger listening on (ws:\/\/\S+)/.exec(err)?.[1] };
}

export function serviceEnv(info, home, extra = {}) {
  return {
    PATH: process.env.PATH ?? "",
    PAID_ACTIONS_BASE_URL: info.baseUrl,
    PAID_ACTIONS_API_KEY: info.apiKey,
    PAID_ACTIONS_WALLET: info.walletPath,
    SOLANA_RPC_URL: info.rpcUrl,
    PAID_ACTIONS_NETWORK: "solana-devnet",
    PAID_ACTIONS_HOME: home,
    PAID_ACTIONS_MAX_PER_CALL: "10",
    PAID_ACTIONS_MAX_PER_DAY: "1000000",
    PAID_ACTIONS_APPROVAL_ABOVE: "1000",
    ...extra,
  };
}

/**
 * The MCP server over stdio. With `inspect`, it runs with the inspector open on loopback
 * (inspector.mjs) and `inspector` is a CDP session to it. `nodeArgs`: Node's own flags for
 * its process (the memory sections' `--server-args`, to compare a V8 setting).
 */
export async function mcpClient(env, { inspect = false, nodeArgs = [] } = {}) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...nodeArgs, ...(inspect ? [INSPECT_FLAG] : []), CLI, "serve"],
    env,
    stderr: inspect ? "pipe" : "ignore",
  });
  const url = inspect ? inspectorUrl(transport.stderr) : undefined;
  const client = new Client({ name: "bench", version: "1.0.0" });
  await client.connect(transport);
  const inspector = url && (await connectInspector(await url));
  return { client, pid: transport.pid, inspector };
}

export function rssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
}

export async function loadWallet(path) {
  return createKeyPairSignerFromBytes(Uint8Array.from(JSON.parse(readFileSync(path, "utf8"))));
}
