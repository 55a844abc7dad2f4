// The journal's SQLite work on two drivers, for the decision in docs/dependencies.md
// ("The journal's SQLite driver"): better-sqlite3 (what the journal uses) and Node's built-in
// node:sqlite. Not part of `npm run bench`: it needs a Node with node:sqlite (22.13 or later)
// and a better-sqlite3 built for that same Node.
//
//   BETTER_SQLITE3_FROM=<dir whose node_modules holds better-sqlite3 built for this Node> \
//     node test/bench/sqlite-drivers.mjs [commits per round, default 2000] [rounds, default 5]
//
// Each round is one child process per driver, the drivers alternated, on a fresh file with the
// journal's settings (WAL, synchronous=FULL, a 10 s busy timeout). A commit is what the
// journal's writes look like: BEGIN IMMEDIATE; the day's SUM read as a bigint; one row
// inserted (a 600-byte proof), one upserted with named parameters; COMMIT. Reported per
// driver: the module's load time, commits/s, ms per commit, and whether loading it wrote
// anything to stderr (Node 22's ExperimentalWarning).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const SCHEMA = `CREATE TABLE intents (id TEXT PRIMARY KEY, state TEXT, budget_amount TEXT, budget_at INTEGER, updated_at INTEGER);
  CREATE TABLE payments (quote_id TEXT PRIMARY KEY, intent_id TEXT, amount TEXT, signed_at INTEGER, proof TEXT);
  CREATE INDEX intents_budget ON intents (budget_at);`;
const SUM = "SELECT COALESCE(SUM(CAST(budget_amount AS INTEGER)), 0) AS n FROM intents WHERE budget_at > ?";
const INSERT = "INSERT INTO payments VALUES (?, ?, ?, ?, ?)";
const UPSERT =
  "INSERT INTO intents VALUES (@id, 'signed', @amount, @at, @at) ON CONFLICT(id) DO UPDATE SET state = 'signed', updated_at = @at";
const PROOF = "x".repeat(600);

/** better-sqlite3 as the journal drives it: pragma(), safeIntegers, transaction().immediate(). */
function openBetter(path) {
  const t0 = performance.now();
  const Database = createRequire(join(process.env.BETTER_SQLITE3_FROM ?? process.cwd(), "x.js"))("better-sqlite3");
  const loadMs = performance.now() - t0;
  const db = new Database(path);
  db.pragma("busy_timeout = 10000");
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec(SCHEMA);
  const [sum, insert, upsert] = [db.prepare(SUM).safeIntegers(true), db.prepare(INSERT), db.prepare(UPSERT)];
  const commit = db.transaction((i) => {
    sum.get(0);
    insert.run(`q${i}`, `i${i}`, "288000", i, PROOF);
    upsert.run({ id: `i${i}`, amount: "288000", at: i });
  });
  return { loadMs, commit: (i) => commit.immediate(i), close: () => db.close() };
}

/** node:sqlite: the busy timeout as an option, setReadBigInts, BEGIN IMMEDIATE by hand. */
async function openBuiltin(path) {
  const t0 = performance.now();
  const { DatabaseSync } = await import("node:sqlite");
  const loadMs = performance.now() - t0;
  const db = new DatabaseSync(path, { timeout: 10_000 });
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;");
  db.exec(SCHEMA);
  const [sum, insert, upsert] = [db.prepare(SUM), db.prepare(INSERT), db.prepare(UPSERT)];
  sum.setReadBigInts(true);
  const commit = (i) => {
    db.exec("BEGIN IMMEDIATE");
    try {
      sum.get(0);
      insert.run(`q${i}`, `i${i}`, "288000", i, PROOF);
      upsert.run({ id: `i${i}`, amount: "288000", at: i });
      db.exec("COMMIT");
    } catch (e) {
      db.exec("ROLLBACK");
      throw e;
    }
  };
  return { loadMs, commit, close: () => db.close() };
}

/** One round of one driver (in this process): its figures as a JSON line on stdout. */
async function round(driver, commits) {
  const dir = mkdtempSync(join(tmpdir(), "pam-drivers-"));
  try {
    const db =
      driver === "better-sqlite3" ? openBetter(join(dir, "j.sqlite")) : await openBuiltin(join(dir, "j.sqlite"));
    const t0 = performance.now();
    for (let i = 0; i < commits; i++) db.commit(i);
    const ms = performance.now() - t0;
    db.close();
    process.stdout.write(`${JSON.stringify({ loadMs: db.loadMs, perSecond: commits / (ms / 1000) })}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

if (process.argv[2] === "--round") {
  await round(process.argv[3], Number(process.argv[4]));
} else {
  const commits = Number(process.argv[2] ?? 2000);
  const rounds = Number(process.argv[3] ?? 5);
  const hasBuiltin = await import("node:sqlite").then(
    () => true,
    () => false,
  );
  if (!hasBuiltin)
    console.log(`Node ${process.version} has no node:sqlite (22.13 and later do): better-sqlite3 alone.`);
  const runs = hasBuiltin ? { "better-sqlite3": [], "node:sqlite": [] } : { "better-sqlite3": [] };
  let stderrOf = {};
  for (let r = 0; r < rounds; r++) {
    for (const driver of Object.keys(runs)) {
      const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--round", driver, String(commits)], {
        encoding: "utf8",
      });
      if (child.status !== 0) throw new Error(`${driver}: ${child.stderr}`);
      runs[driver].push(JSON.parse(child.stdout));
      stderrOf = { ...stderrOf, [driver]: child.stderr.trim().split("\n")[0] ?? "" };
    }
  }
  console.log(`Node ${process.version}, ${rounds} rounds of ${commits} commits each, median (min–max):`);
  for (const [driver, rs] of Object.entries(runs)) {
    const per = rs.map((x) => x.perSecond);
    console.log(
      `${driver}: load ${median(rs.map((x) => x.loadMs)).toFixed(1)} ms; ${median(per).toFixed(0)} commits/s ` +
        `(${Math.min(...per).toFixed(0)}–${Math.max(...per).toFixed(0)}); ${(1000 / median(per)).toFixed(2)} ms a commit; ` +
        `stderr: ${stderrOf[driver] ? JSON.stringify(stderrOf[driver]) : "nothing"}`,
    );
  }
}
