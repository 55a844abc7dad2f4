/**
 * One sandbox per home: `sandbox.pid` names the process that runs it. The file appears whole
 * (written aside, then hard-linked into place, which fails when one exists), so a reader never
 * sees it empty. A lock whose process is gone is broken under a second lock,
 * `sandbox.pid.breaking`, held for an instant: under it the lock is read again and removed only
 * if it is still the very file found stale (same inode, same dead pid). While the stale file
 * exists nobody can link a fresh one, and only a breaker removes it, so two survivors of an
 * owner that died cannot both take the home over. A breaker whose process died is cleared.
 */
import { closeSync, fstatSync, linkSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

/** Sleeps this thread for `ms` (the lock is taken synchronously, before anything else runs). */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Clears a breaker lock left by a process that died holding it. */
function clearAbandonedBreaker(breaker: string): void {
  const held = readLock(breaker);
  if (held && Number.isInteger(held.pid) && held.pid > 0 && !isAlive(held.pid)) rmSync(breaker, { force: true });
}

/**
 * Removes the lock only if it is still the stale file found (inode and pid), under the
 * breaker lock; false when another process is breaking it (the caller tries again).
 */
function breakStale(lock: string, stale: { pid: number; ino: number }): boolean {
  const breaker = `${lock}.breaking`;
  const mine = `${breaker}.${unique()}`;
  writeFileSync(mine, String(process.pid), { mode: 0o600 });
  try {
    try {
      linkSync(mine, breaker);
    } catch (e) {
      if (code(e) !== "EEXIST") throw e;
      clearAbandonedBreaker(breaker);
      return false;
    }
    try {
      const now = readLock(lock);
      if (now && now.ino === stale.ino && Object.is(now.pid, stale.pid)) rmSync(lock, { force: true });
    } finally {
      rmSync(breaker, { force: true });
    }
    return true;
  } finally {
    rmSync(mine, { force: true });
  }
}

/** Takes the home's sandbox lock for this process; throws SandboxBusyError when a live process holds it. */
export function lockHome(home: string): string {
  const lock = join(home, "sandbox.pid");
  const mine = `${lock}.${unique()}`;
  writeFileSync(mine, String(process.pid), { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 50; attempt++) {
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
      if (!breakStale(lock, held)) pause(2);
    }
    throw new Error(`could not lock ${home}: its sandbox.pid kept changing`);
  } finally {
    rmSync(mine, { force: true });
  }
}
