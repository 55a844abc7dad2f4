/**
 * Group commit (src/sandbox/group-sync.ts): the sandbox's SQLite commits are not fsynced one
 * by one; nothing is answered before a shared fsync of the WAL covers it. The fsyncs here are
 * the real ones, wrapped (the sandbox's `syncFiles` hook) to hold one, count them, or record
 * what the disk holds once one completes — the image a power cut at that moment would leave.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/sandbox/db.js";
import { GroupSync, nodeSyncFiles, type SyncFiles } from "../../src/sandbox/group-sync.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { SERVER_INPUT } from "../helpers/api.js";

const homes: string[] = [];
const tempHome = () => {
  const home = mkdtempSync(join(tmpdir(), "pam-group-"));
  homes.push(home);
  return home;
};
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

/** The real fsync, counted; while `hold()` is in force each one waits until released, oldest first or all. */
function heldFiles() {
  const real = nodeSyncFiles();
  let holding = false;
  const waiting: Array<() => void> = [];
  const state = {
    syncs: 0,
    files: {
      sync: async (path: string) => {
        state.syncs++;
        if (holding) await new Promise<void>((ok) => waiting.push(ok));
        await real.sync(path);
      },
      syncNow: (path: string) => real.syncNow(path),
      close: () => real.close?.(),
    } satisfies SyncFiles,
    hold() {
      holding = true;
    },
    releaseOldest() {
      waiting.shift()?.();
    },
    release() {
      holding = false;
      for (const ok of waiting.splice(0)) ok();
    },
  };
  return state;
}

/** Whether `p` settles within `ms`. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((ok) => (timer = setTimeout(() => ok(false), ms)));
  const settled = p.then(
    () => true as const,
    () => true as const,
  );
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe("GroupSync on a real SQLite file", () => {
  const open = (files: SyncFiles) => {
    const home = tempHome();
    const db = openDatabase(join(home, "sandbox.sqlite"));
    const sync = new GroupSync(db, join(home, "sandbox.sqlite-wal"), files);
    const write = (key: string) =>
      db.prepare(`INSERT INTO meta (key, value) VALUES (?, 'x') ON CONFLICT(key) DO UPDATE SET value = 'y'`).run(key);
    return { db, sync, write };
  };

  it("a write is durable only once an fsync that began after it completes; reads of nothing new wait for none", async () => {
    const held = heldFiles();
    const { db, sync, write } = open(held.files);
    sync.syncNow(); // what opening wrote
    expect(sync.isDurable()).toBe(true);
    await sync.durable();
    expect(held.syncs).toBe(0);

    write("a");
    expect(sync.isDurable()).toBe(false);
    held.hold();
    const first = sync.durable();
    expect(await settlesWithin(first, 100)).toBe(false);
    // Written while that fsync runs: not covered by it, even once it completes.
    write("b");
    const second = sync.durable();
    held.releaseOldest();
    await first;
    expect(await settlesWithin(second, 100)).toBe(false);
    expect(sync.isDurable()).toBe(false);
    held.release();
    await second;
    expect(held.syncs).toBe(2);
    expect(sync.isDurable()).toBe(true);
    sync.close();
    db.close();
  });

  it("concurrent waiters share one fsync: many writes during one fsync need exactly one more", async () => {
    const held = heldFiles();
    const { db, sync, write } = open(held.files);
    write("first");
    held.hold();
    const waits = [sync.durable()];
    for (let i = 0; i < 50; i++) {
      write(`k${i}`);
      waits.push(sync.durable());
    }
    held.release();
    await Promise.all(waits);
    expect(held.syncs).toBe(2);
    sync.close();
    db.close();
  });

  it("a failed fsync fails every waiter and every later one: nothing is acknowledged after it", async () => {
    let fail = true;
    const real = nodeSyncFiles();
    const { db, sync, write } = open({
      sync: async (path) => {
        if (fail) throw new Error("EIO: i/o error, fsync");
        await real.sync(path);
      },
      syncNow: real.syncNow,
    });
    write("a");
    await expect(sync.durable()).rejects.toThrow(/could not be synced .*EIO.*restart the sandbox/);
    fail = false;
    write("b");
    await expect(sync.durable()).rejects.toThrow(/could not be synced/);
    expect(sync.isDurable()).toBe(false);
    expect(() => sync.syncNow()).toThrow(/could not be synced/);
    sync.close();
    db.close();
  });
});

describe("the sandbox answers only what is on disk", () => {
  let t: TestSandbox | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("a quote is not answered while the fsync covering it is held, nor is a read that follows it; both once it completes", async () => {
    const held = heldFiles();
    t = await startTestSandbox({ syncFiles: held.files });
    // Nothing written since the last fsync: answered at once, whatever is held.
    held.hold();
    expect((await t.call("GET", "/actions")).status).toBe(200);

    const quote = t.call("POST", "/quotes", {
      body: { action: "servers.provision", input: SERVER_INPUT, budget: { amount: "5", currency: "USDC" } },
    });
    expect(await settlesWithin(quote, 300)).toBe(false);
    const quoteId = (
      t.sb.db.prepare(`SELECT quote_id FROM quotes ORDER BY created_at DESC LIMIT 1`).get() as { quote_id: string }
    ).quote_id;
    const read = t.call("GET", `/quotes/${quoteId}`);
    expect(await settlesWithin(read, 200)).toBe(false);
    held.release();
    expect((await quote).status).toBe(201);
    expect((await read).status).toBe(200);
  });
});
