/**
 * The EVM ledger's state file, `evm-state.bin`: what anvil's `anvil_dumpState` returns (its
 * gzipped JSON of accounts, storage, blocks and transactions), written aside, fsynced and
 * renamed, so a crash mid-write leaves the previous state whole. Dumps are taken in turn,
 * and one asked for while another runs is served by the next, which starts after it: a
 * caller's dump always holds what the chain held when it asked.
 */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";

/** The one JSON-RPC call the state file needs, injected (the ledger's client). */
export type RawRpc = (method: string, params: unknown[]) => Promise<unknown>;

export function readState(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  return `0x${readFileSync(path).toString("hex")}`;
}

function writeDurably(path: string, bytes: Buffer): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  // The rename itself is durable only once the directory is.
  const dir = openSync(dirname(path), "r");
  try {
    fsyncSync(dir);
  } catch {
    // some platforms cannot fsync a directory
  } finally {
    closeSync(dir);
  }
}

/** Dumps the chain to `path` on demand: `persist()` resolves once a dump taken after the call is on disk. */
export class StateFile {
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  constructor(
    private readonly path: string,
    private readonly rpc: RawRpc,
  ) {}

  persist(): Promise<void> {
    if (this.queued) return this.queued;
    if (!this.running) return (this.running = this.dump());
    const next = this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return (this.running = this.dump());
      });
    this.queued = next;
    return next;
  }

  private async dump(): Promise<void> {
    try {
      const hex = await this.rpc("anvil_dumpState", []);
      if (typeof hex !== "string" || !/^0x[0-9a-fA-F]*$/.test(hex))
        throw new Error("anvil_dumpState returned no bytes");
      writeDurably(this.path, Buffer.from(hex.slice(2), "hex"));
    } finally {
      this.running = undefined;
    }
  }
}
