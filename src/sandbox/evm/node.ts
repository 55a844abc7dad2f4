/**
 * The EVM node under the sandbox's EVM ledger: anvil, from the `@foundry-rs/anvil-<platform>`
 * npm package, started on a free loopback port with the ledger's chain id and stopped with the
 * sandbox. It must never outlive the sandbox: on POSIX a tiny `sh` watchdog starts it and kills
 * it as soon as the sandbox's process is gone (a kill -9 included), and its pid is kept in
 * `evm-node.pid` so that the next start kills one a watchdog could not. The chain's state is
 * not anvil's to persist: state.ts dumps it when the ledger says so.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { isAlive } from "../home-lock.js";

/** A running anvil: where it listens, and how to stop it. */
export interface EvmNode {
  rpcUrl: string;
  /** The anvil process (not the watchdog). */
  pid: number;
  /** Resolves when the node has exited, however. */
  exited: Promise<void>;
  stop(): Promise<void>;
}

const PLATFORMS: Readonly<Record<string, string>> = {
  "linux-x64": "linux-amd64",
  "linux-arm64": "linux-arm64",
  "darwin-x64": "darwin-amd64",
  "darwin-arm64": "darwin-arm64",
  "win32-x64": "win32-amd64",
};

/** The anvil binary of this platform's optional package, or why there is none. */
export function findAnvil(): { path: string } | { missing: string } {
  const platform = PLATFORMS[`${process.platform}-${process.arch}`];
  if (!platform) return { missing: `no anvil package exists for ${process.platform}-${process.arch}` };
  const pkg = `@foundry-rs/anvil-${platform}`;
  try {
    const dir = dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`));
    const path = join(dir, "bin", process.platform === "win32" ? "anvil.exe" : "anvil");
    return existsSync(path) ? { path } : { missing: `${pkg} is installed without its binary` };
  } catch {
    return { missing: `${pkg} is not installed` };
  }
}

/**
 * Starts anvil and kills it once the process whose pid is $PPID (the sandbox) is gone, or ends
 * with it. Its first line of output names anvil's pid.
 */
const WATCHDOG = `"$0" "$@" & a=$!
echo "anvil-pid $a"
trap 'kill $a 2>/dev/null' TERM INT HUP
while kill -0 "$PPID" 2>/dev/null && kill -0 "$a" 2>/dev/null; do sleep 0.5; done
kill "$a" 2>/dev/null
wait "$a"`;

const START_TIMEOUT_MS = 20_000;

/** Kills an anvil a sandbox of this home started and left behind (its pid file names a live anvil). */
export function killStaleNode(pidFile: string): void {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, "utf8").trim());
  } catch {
    return;
  }
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid) && isAnvil(pid)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
  rmSync(pidFile, { force: true });
}

/** Whether a pid is an anvil (a pid can be reused): /proc says so where there is one. */
function isAnvil(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("anvil");
  } catch {
    return process.platform !== "linux";
  }
}

/** Starts anvil on 127.0.0.1 with `chainId`; resolves once it listens. */
export async function startNode(o: {
  binary: string;
  chainId: number;
  pidFile: string;
  log: (line: string) => void;
  /** The port to listen on (the one of the previous start: clients keep their RPC URL); 0 picks one. */
  port?: number;
}): Promise<EvmNode> {
  killStaleNode(o.pidFile);
  if (o.port) {
    try {
      return await spawnNode({ ...o, port: o.port });
    } catch {
      // taken meanwhile: any free port will do
    }
  }
  return spawnNode({ ...o, port: 0 });
}

async function spawnNode(o: {
  binary: string;
  chainId: number;
  pidFile: string;
  log: (line: string) => void;
  port: number;
}): Promise<EvmNode> {
  const args = ["--host", "127.0.0.1", "--port", String(o.port), "--chain-id", String(o.chainId), "--accounts", "0"];
  const child =
    process.platform === "win32"
      ? spawn(o.binary, args, { stdio: ["ignore", "pipe", "pipe"], windowsHide: true })
      : spawn("sh", ["-c", WATCHDOG, o.binary, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  try {
    const { port, pid } = await listening(child, process.platform === "win32" ? child.pid : undefined);
    writeFileSync(o.pidFile, `${pid}\n`, { mode: 0o600 });
    let stopping: Promise<void> | undefined;
    const stop = () => (stopping ??= halt());
    const halt = async () => {
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // already gone
      }
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
      rmSync(o.pidFile, { force: true });
    };
    // Said only when nobody asked it to stop: a stop is quiet.
    void exited.then(() => stopping ?? o.log(`EVM node (anvil, pid ${pid}) exited on its own: the EVM ledger is down`));
    return { rpcUrl: `http://127.0.0.1:${port}`, pid, exited, stop };
  } catch (e) {
    child.kill("SIGKILL");
    throw e;
  }
}

/** Reads anvil's output until it says where it listens; its later output is drained and dropped. */
function listening(child: ChildProcess, knownPid: number | undefined): Promise<{ port: number; pid: number }> {
  return new Promise((resolvePort, reject) => {
    let seen = "";
    let pid = knownPid;
    const timer = setTimeout(() => fail(new Error("anvil did not start listening within 20 s")), START_TIMEOUT_MS);
    const fail = (e: Error) => {
      clearTimeout(timer);
      reject(e);
    };
    child.stderr!.on("data", (chunk: Buffer) => {
      if (seen.length < 4_096) seen += chunk.toString("utf8");
    });
    child.once("exit", (code) =>
      fail(new Error(`anvil exited (${code}) before listening: ${seen.trim().slice(-500)}`)),
    );
    child.once("error", fail);
    let buffered = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      if (buffered === undefined) return;
      buffered += chunk.toString("utf8");
      pid ??= Number(/anvil-pid (\d+)/.exec(buffered)?.[1]) || undefined;
      const port = /Listening on 127\.0\.0\.1:(\d+)/.exec(buffered)?.[1];
      if (port && pid) {
        clearTimeout(timer);
        buffered = "";
        child.stdout!.removeAllListeners("data");
        child.stdout!.resume();
        resolvePort({ port: Number(port), pid });
      } else if (buffered.length > 65_536) {
        buffered = buffered.slice(-4_096);
      }
    });
  });
}
