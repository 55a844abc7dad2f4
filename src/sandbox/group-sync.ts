/**
 * Group commit for the sandbox's SQLite file. Transactions commit as they always did (WAL,
 * `synchronous=NORMAL`: the commit writes its frames but does not fsync), and whatever tells
 * the outside world about them — an HTTP answer, a webhook delivery, a ledger snapshot —
 * first waits for `durable()`: an fsync of the WAL file that began after the last write the
 * connection made. Concurrent requests share one fsync, run off the event loop, instead of
 * paying one each on it.
 *
 * Why this is as safe as `synchronous=FULL` for anything acknowledged: a commit is written
 * (the write(2) calls return) before it returns, so an fsync that starts later covers it; and
 * SQLite's WAL checksums make recovery keep a prefix of commits whatever reached the disk, so
 * a crash before the fsync loses only writes nobody was told about, whole, newest first.
 * Checkpoints still sync as under FULL.
 *
 * Writes are counted with SQLite's `total_changes()` (rows changed by this connection): a
 * request that changed nothing since the last fsync began is answered at once.
 */
import { closeSync, fdatasync, fdatasyncSync, fstatSync, openSync, statSync } from "node:fs";
import type Database from "better-sqlite3";
import { statement } from "./db.js";

/** The file operations a sync makes: node:fs by default; a test may wrap them to hold a sync. */
export interface SyncFiles {
  /** fsyncs the file, off the event loop; a missing file is nothing to sync. */
  sync(path: string): Promise<void>;
  /** The same, blocking. */
  syncNow(path: string): void;
  /** Lets go of what the syncs keep open. */
  close?(): void;
}

/**
 * node:fs, the file kept open between syncs (each open and close would be one more hop to
 * the thread pool): reopened when the path names another file than the one held. A sync is
 * fdatasync(2): the WAL's data, and its size when it grew — all that reading it back after a
 * crash needs — without its timestamps, whose journal commit each full fsync would add to
 * every sync of a WAL that SQLite rewrites in place once checkpointed.
 */
export function nodeSyncFiles(): SyncFiles {
  let held: { path: string; fd: number; ino: number } | undefined;
  const release = () => {
    if (held) closeSync(held.fd);
    held = undefined;
  };
  const descriptor = (path: string): number | undefined => {
    const ino = statSync(path, { throwIfNoEntry: false })?.ino;
    if (ino === undefined) {
      release();
      return undefined;
    }
    if (held?.path === path && held.ino === ino) return held.fd;
    release();
    // Opened for writing: Windows flushes a file only through a handle that may write it.
    const fd = openSync(path, "r+");
    held = { path, fd, ino: fstatSync(fd).ino };
    return fd;
  };
  return {
    sync: (path) =>
      new Promise<void>((done, fail) => {
        const fd = descriptor(path);
        if (fd === undefined) return done();
        fdatasync(fd, (e) => (e ? fail(e) : done()));
      }),
    syncNow: (path) => {
      const fd = descriptor(path);
      if (fd !== undefined) fdatasyncSync(fd);
    },
    close: release,
  };
}

interface Batch {
  promise: Promise<void>;
  resolve: () => void;
  reject: (e: Error) => void;
}

function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  // A batch nobody waits for must not become an unhandled rejection.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

export class GroupSync {
  private readonly changes: Database.Statement;
  /** Changes covered by the last fsync that completed. */
  private synced: number;
  /** The fsync running now, and the changes it covers. */
  private running: { upTo: number; batch: Batch } | undefined;
  /** Waiters for the fsync after the running one. */
  private next: Batch | undefined;
  private failed: Error | undefined;
  /** fsyncs started, for tests and the benchmark. */
  syncs = 0;

  constructor(
    db: Database.Database,
    private readonly walPath: string,
    private readonly files: SyncFiles = nodeSyncFiles(),
  ) {
    this.changes = statement(db, `SELECT total_changes()`).pluck();
    // Nothing is known to be on disk yet: what opening wrote (migrations) is synced by the first sync.
    this.synced = -1;
  }

  private count(): number {
    return Number(this.changes.get());
  }

  /** Whether every write made so far is on disk already. */
  isDurable(): boolean {
    return this.failed === undefined && this.count() <= this.synced;
  }

  /**
   * Resolves once every write this connection made before the call is on disk; rejects for
   * good once an fsync failed (what reached the disk is unknown then: restart the sandbox).
   */
  durable(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const mark = this.count();
    if (mark <= this.synced) return Promise.resolve();
    if (this.running && mark <= this.running.upTo) return this.running.batch.promise;
    this.next ??= newBatch();
    const waiting = this.next.promise;
    if (!this.running) this.start();
    return waiting;
  }

  private start(): void {
    const batch = this.next ?? newBatch();
    this.next = undefined;
    const upTo = this.count();
    this.running = { upTo, batch };
    this.syncs++;
    this.files.sync(this.walPath).then(
      () => {
        this.synced = Math.max(this.synced, upTo);
        this.running = undefined;
        batch.resolve();
        if (this.next) this.start();
      },
      (e: Error) => {
        this.failed = new Error(`the sandbox's storage could not be synced (${e.message}); restart the sandbox`);
        this.running = undefined;
        batch.reject(this.failed);
        this.next?.reject(this.failed);
        this.next = undefined;
      },
    );
  }

  /** Lets go of the file, once the fsync running now (if any) is done. */
  close(): void {
    const closeFiles = () => this.files.close?.();
    if (this.running) void this.running.batch.promise.then(closeFiles, closeFiles);
    else closeFiles();
  }

  /** Makes every write so far durable now, blocking (start-up, before a ledger snapshot). */
  syncNow(): void {
    if (this.failed) throw this.failed;
    const upTo = this.count();
    if (upTo <= this.synced) return;
    this.files.syncNow(this.walPath);
    this.synced = Math.max(this.synced, upTo);
  }
}
