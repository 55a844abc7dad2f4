/**
 * The SQLite file's WAL checkpoints, made on a worker thread instead of the request thread.
 *
 * SQLite's automatic checkpoint runs inside whichever commit crosses its threshold (1,000
 * pages): that commit copies the WAL's pages into the database file and fsyncs both, blocking
 * the event loop for milliseconds every few dozen settlements. Here the request thread's
 * connection never checkpoints (`wal_autocheckpoint = 0`) and a worker thread with its own
 * connection to the same file runs `PRAGMA wal_checkpoint(PASSIVE)` every CHECKPOINT_EVERY_MS
 * while the WAL has frames to copy (less often when idle): the same checkpoint SQLite would
 * make, with the same syncs (synchronous=NORMAL syncs the WAL before it and the database
 * after it), on the machine's other core. A passive checkpoint takes no lock a writer waits
 * for, and the request thread's next commit after a complete one restarts the WAL, as before.
 *
 * Nothing about durability moves: a commit is in the WAL whoever copies it later, and what the
 * group fsync (group-sync.ts) covers is the WAL. Should the worker fail to start, fail a
 * checkpoint or exit, the request thread's own automatic checkpoints are switched back on
 * (said once in the log): the WAL never grows without bound.
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type Database from "better-sqlite3";

/** How often the worker checkpoints while the WAL has frames to copy. */
export const CHECKPOINT_EVERY_MS = 50;
/** At most this long between checkpoints when nothing was written. */
const IDLE_CHECKPOINT_MS = 400;
/** SQLite's own threshold, restored when the worker is gone. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1000;
/** How long closing waits for the worker to close its connection. */
const CLOSE_WAIT_MS = 2000;

/**
 * The worker, run as a CommonJS script (`eval`): it needs nothing but better-sqlite3, whose
 * path the request thread resolves, so it runs the same from src/ under the tests and from
 * dist/. Every statement is prepared once and kept (db.ts says why).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const closed = new Int32Array(workerData.closed);
const db = new Database(workerData.path);
db.exec("PRAGMA busy_timeout = " + workerData.busyTimeoutMs);
db.exec("PRAGMA synchronous = NORMAL");
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
let timer;
let wait = workerData.everyMs;
// The WAL's length in frames at the last checkpoint: any change (frames added, or the WAL
// restarted by a writer) means writes go on, and the next checkpoint comes soon.
let lastLog = -1;
function tick() {
  let result;
  try {
    result = checkpoint.get();
  } catch (e) {
    parentPort.postMessage({ failed: String(e && e.message) });
    return;
  }
  const writing = result.log !== lastLog || result.log > result.checkpointed || result.busy;
  lastLog = result.log;
  wait = writing ? workerData.everyMs : Math.min(wait * 2, workerData.idleMs);
  timer = setTimeout(tick, wait);
}
parentPort.on("message", (m) => {
  if (m !== "stop") return;
  clearTimeout(timer);
  try {
    db.close();
  } finally {
    Atomics.store(closed, 0, 1);
    Atomics.notify(closed, 0);
    parentPort.close();
  }
});
timer = setTimeout(tick, wait);
`;

export interface CheckpointOptions {
  /** The database file the request thread's connection `db` has open. */
  path: string;
  busyTimeoutMs?: number;
  log: (line: string) => void;
  /** The worker's script (tests: one that fails); the real one by default. */
  workerSource?: string;
  everyMs?: number;
}

export interface Checkpoints {
  /** Whether the worker is checkpointing (false: SQLite's own checkpoints are back on). */
  readonly offThread: boolean;
  /** Stops the worker once its connection is closed (a checkpoint under way finishes first). */
  close(): void;
}

/** Moves `db`'s WAL checkpoints to a worker thread (above). */
export function startCheckpoints(db: Database.Database, o: CheckpointOptions): Checkpoints {
  const closed = new SharedArrayBuffer(4);
  let offThread = false;
  let stopping = false;
  let worker: Worker | undefined;
  const fallBack = (why: string) => {
    if (!offThread) return;
    offThread = false;
    try {
      db.exec(`PRAGMA wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
    } catch {
      // The connection is closed: nothing left to checkpoint from it.
    }
    o.log(`WAL checkpoints are back on the request thread: ${why}`);
  };
  try {
    worker = new Worker(o.workerSource ?? WORKER_SOURCE, {
      eval: true,
      workerData: {
        driver: createRequire(import.meta.url).resolve("better-sqlite3"),
        path: o.path,
        busyTimeoutMs: Math.max(0, Math.floor(o.busyTimeoutMs ?? 5000)),
        everyMs: o.everyMs ?? CHECKPOINT_EVERY_MS,
        idleMs: Math.max(o.everyMs ?? CHECKPOINT_EVERY_MS, IDLE_CHECKPOINT_MS),
        closed,
      },
    });
  } catch (e) {
    o.log(`WAL checkpoints stay on the request thread: no worker thread (${(e as Error).message})`);
    return { offThread: false, close: () => undefined };
  }
  db.exec("PRAGMA wal_autocheckpoint = 0");
  offThread = true;
  worker.unref();
  worker.on("message", (m: { failed?: string }) => {
    if (m.failed === undefined) return;
    fallBack(`a checkpoint failed (${m.failed})`);
    void worker?.terminate();
  });
  worker.on("error", (e) => fallBack(`the worker failed (${e.message})`));
  worker.on("exit", (code) => {
    if (!stopping) fallBack(`the worker exited (code ${code})`);
  });
  return {
    get offThread() {
      return offThread;
    },
    close() {
      if (stopping || !worker) return;
      stopping = true;
      if (offThread) {
        worker.postMessage("stop");
        // Closing is synchronous (the sandbox's cleanups are): the request thread waits for the
        // worker to let go of the file, so the last connection closed is this thread's.
        Atomics.wait(new Int32Array(closed), 0, 0, CLOSE_WAIT_MS);
      }
      void worker.terminate();
    },
  };
}
