/**
 * The ledger's snapshot file: the magic "PAMLEDG1", the sequence number (u64 LE) of the last
 * logged operation it holds, then LiteSVM's whole state. Written to a temp file, fsynced and
 * renamed, so a crash mid-write leaves the previous snapshot intact.
 */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { LiteSVM } from "litesvm";

const SNAPSHOT_MAGIC = Buffer.from("PAMLEDG1");

/** The newest snapshot and the log sequence it stops at; a fresh LiteSVM at 0 when there is none. */
export function readSnapshot(path: string): { svm: LiteSVM; fromSeq: number } {
  if (!existsSync(path)) return { svm: new LiteSVM(), fromSeq: 0 };
  const file = readFileSync(path);
  if (file.length < 16 || !file.subarray(0, 8).equals(SNAPSHOT_MAGIC)) {
    throw new Error(`ledger snapshot ${path} is not a paid-actions-mcp ledger snapshot`);
  }
  const fromSeq = Number(file.readBigUInt64LE(8));
  return { svm: LiteSVM.fromBytes(new Uint8Array(file.subarray(16))), fromSeq };
}

export function writeSnapshot(path: string, seq: bigint, bytes: Uint8Array): void {
  const header = Buffer.alloc(16);
  SNAPSHOT_MAGIC.copy(header, 0);
  header.writeBigUInt64LE(seq, 8);
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, header);
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}
