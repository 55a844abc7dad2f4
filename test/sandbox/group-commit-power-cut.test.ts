/**
 * A power cut under group commit (src/sandbox/group-sync.ts), for real: the sandbox runs
 * paid traffic with its real fsyncs, and each time one completes the test keeps the image
 * of the SQLite files as they were when it began — what the disk is sure to hold. At the cut,
 * one fsync is held in flight with requests committed behind it and not answered; the image
 * of the last completed fsync and the ledger snapshot file then on disk are opened by a new
 * sandbox, which must hold every quote, payment and execution any client was told about,
 * with the ledger and the service's records agreeing to the atomic unit.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { nodeSyncFiles, type SyncFiles } from "../../src/sandbox/group-sync.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";
import { waitFor } from "../helpers/wait.js";

const USDC = 1_000_000n;
const WORKERS = 8;
const SQLITE_FILES = ["sandbox.sqlite", "sandbox.sqlite-wal"];
const UNLIMITED = { perSecond: 1_000_000, burst: 1_000_000 };

const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});
const tempHome = () => {
  const home = mkdtempSync(join(tmpdir(), "pam-power-cut-"));
  homes.push(home);
  return home;
};

interface Ack {
  quoteId: string;
  executionId: string;
  transaction: string;
  amount: bigint;
}

/**
 * The real fsync; each completed one records the image it made durable. The first fsync to
 * begin once `holdWhen()` says so is held, and every one after it, until `release()`.
 */
function imagingFiles(home: string, holdWhen: () => boolean) {
  const real = nodeSyncFiles();
  let taken = 0;
  let gate: Promise<void> | undefined;
  let open = () => undefined as void;
  const state = {
    image: undefined as Map<string, Buffer> | undefined,
    imageNo: 0,
    held: false,
    release() {
      gate = undefined;
      open();
    },
  };
  const take = () => {
    const no = ++taken;
    const files = new Map<string, Buffer>();
    for (const f of SQLITE_FILES) if (existsSync(join(home, f))) files.set(f, readFileSync(join(home, f)));
    return () => {
      if (no > state.imageNo) Object.assign(state, { image: files, imageNo: no });
    };
  };
  const files: SyncFiles = {
    async sync(path) {
      const keep = take();
      if (!state.held && holdWhen()) {
        state.held = true;
        gate = new Promise<void>((ok) => (open = ok));
      }
      if (gate) await gate;
      await real.sync(path);
      keep();
    },
    syncNow(path) {
      const keep = take();
      real.syncNow(path);
      keep();
    },
    close: () => real.close?.(),
  };
  return { state, files };
}

const snapshotSeq = (bytes: Buffer) => Number(bytes.readBigUInt64LE(8));
const snapshotSeqOf = (home: string) => snapshotSeq(readFileSync(join(home, "ledger.snapshot")).subarray(0, 16));

function countRows(path: string): number {
  const db = new Database(path, { readonly: true });
  try {
    const one = (table: string) => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
    return one("quotes") + one("payments") + one("executions");
  } finally {
    db.close();
  }
}

/** Paid traffic from `WORKERS` clients until `stop()` says so; every answered execution is acknowledged. */
async function traffic(t: TestSandbox, acks: Ack[], stop: () => boolean, errors: string[]): Promise<void> {
  let seq = 0;
  const worker = async () => {
    while (!stop()) {
      const i = seq++;
      const input = { region: "eu-west-1", plan: "nano", durationHours: 1 + (i % 50), image: `cut-${i}` };
      const q = await t.call("POST", "/quotes", {
        body: { action: "servers.provision", input, budget: { amount: "5", currency: "USDC" } },
      });
      if (q.status !== 201) return void errors.push(`quote ${q.status} ${q.text}`);
      const proof = await t.proof(q.body.paymentRequirement.accepts[0]);
      const e = await t.call("POST", "/executions", {
        body: { action: "servers.provision", input },
        headers: { "x-quote-id": q.body.quoteId, "x-payment-proof": proof, "idempotency-key": `cut-${i}` },
      });
      if (stop()) return; // answered after the cut: not counted
      if (e.status !== 201) return void errors.push(`execution ${e.status} ${e.text}`);
      const settled = JSON.parse(Buffer.from(e.headers["payment-response"]!, "base64").toString()) as {
        transaction: string;
      };
      const amount = BigInt(q.body.paymentRequirement.accepts[0].amount as string);
      acks.push({ quoteId: q.body.quoteId, executionId: e.body.executionId, transaction: settled.transaction, amount });
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, worker));
}

describe("a power cut under group commit", () => {
  it("loses no acknowledged write, with requests committed behind an fsync in flight", async () => {
    const home = tempHome();
    const start = { seq: Infinity };
    // The cut comes with the first fsync after a ledger snapshot taken under traffic: the
    // snapshot is as new as it can be against the durable log.
    const { state, files } = imagingFiles(home, () => snapshotSeqOf(home) > start.seq);
    const t = await startTestSandbox({ home, syncFiles: files, providerDelayMs: 600_000, rateLimit: UNLIMITED });
    start.seq = snapshotSeqOf(home);
    const acks: Ack[] = [];
    const errors: string[] = [];
    let stopped = false;
    const run = traffic(t, acks, () => stopped, errors);
    await waitFor(() => state.held || errors.length > 0, { timeoutMs: 150_000, intervalMs: 5, what: "an fsync held" });
    // That fsync stays in flight; the requests behind it commit and wait for it.
    await waitFor(() => !t.sb.sync.isDurable() || errors.length > 0, {
      intervalMs: 5,
      what: "a write committed behind the held fsync",
    });
    const pendingWrites = !t.sb.sync.isDurable();
    stopped = true;
    const cut = {
      image: state.image!,
      snapshot: readFileSync(join(home, "ledger.snapshot")),
      acked: [...acks],
      liveRows: (
        t.sb.db
          .prepare(
            `SELECT (SELECT COUNT(*) FROM quotes) + (SELECT COUNT(*) FROM payments) + (SELECT COUNT(*) FROM executions) AS n`,
          )
          .get() as { n: number }
      ).n,
    };
    state.release();
    await run;
    await t.close();
    expect(errors).toEqual([]);
    expect(pendingWrites, "writes were committed and not yet synced at the cut").toBe(true);
    expect(snapshotSeq(cut.snapshot), "a ledger snapshot was taken under traffic").toBeGreaterThan(start.seq);
    expect(cut.acked.length).toBeGreaterThan(100);

    // ---- the disk after the cut, opened by a new sandbox ------------------------------------
    const after = tempHome();
    for (const f of readdirSync(home)) {
      if (f.startsWith("sandbox.sqlite") || f.startsWith("sandbox.pid") || f === "ledger.snapshot") continue;
      writeFileSync(join(after, f), readFileSync(join(home, f)), { mode: 0o600 });
    }
    for (const [f, bytes] of cut.image) writeFileSync(join(after, f), bytes, { mode: 0o600 });
    writeFileSync(join(after, "ledger.snapshot"), cut.snapshot, { mode: 0o600 });
    expect(countRows(join(after, "sandbox.sqlite")), "the cut lost unacknowledged writes").toBeLessThan(cut.liveRows);

    const r = await startTestSandbox({ home: after, providerDelayMs: 600_000, rateLimit: UNLIMITED });
    try {
      for (const ack of cut.acked) {
        expect((await r.call("GET", `/quotes/${ack.quoteId}`)).status).toBe(200);
        const execution = await r.call("GET", `/executions/${ack.executionId}`);
        expect(execution.status).toBe(200);
        expect(execution.body.quoteId).toBe(ack.quoteId);
        expect(r.sb.ledger.transaction(ack.transaction), `transaction of ${ack.quoteId}`).toBeDefined();
      }
      // The ledger and the service's records agree: every settled payment, and nothing else, moved money.
      const settled = r.sb.db
        .prepare(`SELECT amount, transaction_sig FROM payments WHERE status = 'settled'`)
        .all() as Array<{ amount: string; transaction_sig: string }>;
      // A payment cut off mid-settlement may still be 'settling' (its transaction could land until its
      // blockhash expires, as after any crash): it moved nothing.
      const settling = r.sb.db.prepare(`SELECT message_hash FROM payments WHERE status = 'settling'`).all() as Array<{
        message_hash: string;
      }>;
      for (const p of settling) expect(r.sb.ledger.transactionByMessageHash(p.message_hash)).toBeUndefined();
      const paid = settled.reduce((sum, p) => sum + BigInt(p.amount), 0n);
      for (const p of settled) expect(r.sb.ledger.transaction(p.transaction_sig)).toBeDefined();
      expect(paid).toBeGreaterThanOrEqual(cut.acked.reduce((sum, a) => sum + a.amount, 0n));
      const treasury = await r.usdc(r.sb.keys.treasury.address);
      expect(treasury).toBe(paid);
      expect((await r.usdc(r.wallet.address)) + treasury).toBe(1000n * USDC);
    } finally {
      await r.close();
    }
  }, 180_000);
});
