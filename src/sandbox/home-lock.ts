/**
 * One sandbox per home: `sandbox.pid` names the process that runs it. The file appears whole
 * (written aside, then hard-linked into place, which fails when one exists), so a reader never
 * sees it empty. A lock whose process is gone is broken only if it is still the very file
 * found stale: it is renamed aside and its inode compared, and a fresh lock another process
 * took meanwhile is put back. Two survivors of an owner that died therefore cannot both take
 * the home over.
 */
import {
  closeSync,
  fstatSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";

export class SandboxBusyError extends Error {
  constructor(
    readonly home: string,
    readonly pid: number,
  ) {
    super(`a sandbox already runs for ${home} (pid ${pid}); stop it first or use another --home`);
    this.name = "SandboxBusyError";
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

const code = (e: unknown) => (e as NodeJS.ErrnoException).code;
const unique = () => `${process.pid}.${randomBytes(4).toString("hex")}`;

/** The pid a lock file names and its inode, read through one descriptor; undefined when it is gone. */
function readLock(lock: string): { pid: number; ino: number } | undefined {
  let fd: number;
  try {
    fd = openSync(lock, "r");
  } catch (e) {
    if (code(e) === "ENOENT") return undefined;
    throw e;
  }
  try {
    return { pid: Number(readFileSync(fd, "utf8").trim()), ino: fstatSync(fd).ino };
  } finally {
    closeSync(fd);
  }
}

/** Removes the lock only if it is still the file (inode) found stale. */
function breakStale(lock: string, staleIno: number): void {
  const aside = `${lock}.stale.${unique()}`;
  try {
    renameSync(lock, aside);
  } catch (e) {
    if (code(e) === "ENOENT") return; // another process broke it first
    throw e;
  }
  try {
    if (statSync(aside).ino === staleIno) return;
    // Another process took the home between our read and the rename: its lock goes back.
    try {
      linkSync(aside, lock);
    } catch (e) {
      if (code(e) !== "EEXIST") throw e;
    }
  } finally {
    rmSync(aside, { force: true });
  }
}

/** Takes the home's sandbox lock for this process; throws SandboxBusyError when a live process holds it. */
export function lockHome(home: string): string {
  const lock = join(home, "sandbox.pid");
  const mine = `${lock}.${unique()}`;
  writeFileSync(mine, String(process.pid), { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        linkSync(mine, lock);
        return lock;
      } catch (e) {
        if (code(e) !== "EEXIST") throw e;
      }
      const held = readLock(lock);
      if (!held) continue;
      if (Number.isInteger(held.pid) && held.pid > 0 && held.pid !== process.pid && isAlive(held.pid))
        throw new SandboxBusyError(home, held.pid);
      breakStale(lock, held.ino);
    }
    throw new Error(`could not lock ${home}: its sandbox.pid kept changing`);
  } finally {
    rmSync(mine, { force: true });
  }
}
