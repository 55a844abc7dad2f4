/**
 * A real PostgreSQL server for tests: a fresh cluster in a temp dir (initdb), a postmaster on
 * 127.0.0.1 and a free port, fsync on, password authentication with a random password that
 * holds characters a URL must escape (so tests can prove it never leaks). One per test file.
 *
 * PostgreSQL refuses to run as root; as root (this machine, CI) initdb and postgres run as
 * the `postgres` system user that Debian's package creates, through setpriv, which execs in
 * place: the pid we record is the postmaster's own.
 *
 * JavaScript (types in postgres.d.mts), so that the benchmark, which runs without a
 * TypeScript step, starts its servers the same way the tests do.
 */
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import pg from "pg";

const USER = "pam";

/** initdb and postgres: on PATH, else in the highest /usr/lib/postgresql/<version>/bin. */
/** @returns {{ initdb: string, postgres: string }} */
export function findPostgresBinaries() {
  const onPath = (name) => (process.env.PATH ?? "").split(delimiter).map((d) => join(d, name)).find((p) => p && existsSync(p));
  const initdb = onPath("initdb");
  const postgres = onPath("postgres");
  if (initdb && postgres) return { initdb, postgres };
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const bin = join(root, v, "bin");
    if (existsSync(join(bin, "initdb")) && existsSync(join(bin, "postgres"))) return { initdb: join(bin, "initdb"), postgres: join(bin, "postgres") };
  }
  throw new Error("no PostgreSQL server binaries (initdb, postgres) on PATH or in /usr/lib/postgresql/*/bin: install Debian's `postgresql` package (apt-get install postgresql)");
}

/** @returns {Promise<number>} */
async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = /** @type {import("node:net").AddressInfo} */ (s.address()).port;
      s.close(() => resolve(port));
    });
  });
}

/** As root, a command line that runs `argv` as the postgres user (setpriv execs: same pid). */
/** @param {string[]} argv @returns {string[]} */
function asServerUser(argv) {
  if (process.getuid?.() !== 0) return argv;
  try {
    execFileSync("id", ["-u", "postgres"], { stdio: "ignore" });
  } catch {
    throw new Error("running as root, and there is no `postgres` user to run PostgreSQL as: install Debian's `postgresql` package");
  }
  return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--", ...argv];
}

/** @param {string[]} argv @param {string} cwd @param {NodeJS.ProcessEnv} env */
function run(argv, cwd, env) {
  const [cmd, ...args] = asServerUser(argv);
  try {
    execFileSync(/** @type {string} */ (cmd), args, { cwd, env, stdio: "pipe", timeout: 60_000 });
  } catch (e) {
    const out = /** @type {{ stdout?: Buffer, stderr?: Buffer, message: string }} */ (e);
    throw new Error(`${argv[0]} failed: ${out.stderr?.toString() ?? ""}${out.stdout?.toString() ?? ""}${out.message}`);
  }
}

/** Resolves once a client can log in (the server is up and accepting), or rejects if it exits first. */
/** @param {import("node:child_process").ChildProcess} child @param {string} url @param {() => string} log */
async function waitUntilReady(child, url, log) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`postgres exited (${child.exitCode ?? child.signalCode}): ${log()}`);
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    try {
      await c.connect();
      await c.end();
      return;
    } catch (e) {
      await c.end().catch(() => {});
      if (Date.now() > deadline) throw new Error(`postgres did not accept connections within 30 s: ${/** @type {Error} */ (e).message}\n${log()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** @returns {Promise<import("./postgres.d.mts").TestPostgres>} */
export async function startTestPostgres() {
  const bins = findPostgresBinaries();
  const dir = mkdtempSync(join(tmpdir(), "pam-pg-"));
  const dataDir = join(dir, "data");
  // Characters a URL must escape: the tests check neither form of it ever shows.
  const password = `pw/${randomBytes(12).toString("hex")}@:%`;
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C", LC_ALL: "C" };
  if (process.getuid?.() === 0) execFileSync("chown", ["postgres:", dir]);
  chmodSync(dir, 0o700);
  const pwfile = join(dir, "pwfile");
  writeFileSync(pwfile, password + "\n");
  if (process.getuid?.() === 0) execFileSync("chown", ["postgres:", pwfile]);
  run([bins.initdb, "-D", dataDir, "-U", USER, "--auth=scram-sha-256", `--pwfile=${pwfile}`, "--encoding=UTF8", "--locale=C", "--no-sync"], dir, env);
  rmSync(pwfile);

  /** @type {import("node:child_process").ChildProcess | undefined} */
  let child;
  let port = 0;
  let log = "";
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    log = "";
    const [cmd, ...args] = asServerUser([
      bins.postgres, "-D", dataDir, "-k", dir, "-p", String(port),
      "-c", "listen_addresses=127.0.0.1", "-c", "fsync=on", "-c", "max_connections=200",
    ]);
    child = spawn(/** @type {string} */ (cmd), args, { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout?.on("data", (b) => (log += b));
    child.stderr?.on("data", (b) => (log += b));
    try {
      await waitUntilReady(child, urlFor(port, password, "postgres"), () => log);
      break;
    } catch (e) {
      child.kill("SIGKILL");
      // Another process may have taken the port between our probe and postgres's bind.
      if (attempt < 3 && /could not (bind|create listen)|already in use/i.test(log)) continue;
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
  }
  const server = child;
  const pid = /** @type {number} */ (server.pid);
  // If the test process ends without stop(), the server must not outlive it (SIGQUIT: immediate shutdown).
  const orphan = () => {
    try {
      process.kill(pid, "SIGQUIT");
    } catch {
      /* already gone */
    }
  };
  process.on("exit", orphan);

  const url = urlFor(port, password, "postgres");
  return {
    url,
    port,
    password,
    dataDir,
    pid,
    async createDatabase(name = `t_${randomBytes(6).toString("hex")}`) {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        // A linguistic default collation (ICU en-US, where "a" < "B"), as most production
        // databases have: ordering the store relies on must come from its own schema.
        await c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE template0 LOCALE 'C' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`).catch(async (/** @type {{ code?: string }} */ e) => {
          if (e.code !== "0A000" && e.code !== "42704" && e.code !== "42601") throw e; // a server without ICU
          await c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
        });
      } finally {
        await c.end();
      }
      return urlFor(port, password, name);
    },
    async stop() {
      process.off("exit", orphan);
      if (server.exitCode === null && server.signalCode === null) {
        const exited = new Promise((resolve) => server.once("exit", () => resolve()));
        process.kill(pid, "SIGINT"); // fast shutdown: roll back, disconnect, checkpoint
        const timer = setTimeout(() => process.kill(pid, "SIGQUIT"), 20_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** @param {number} port @param {string} password @param {string} db */
function urlFor(port, password, db) {
  return `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(db)}`;
}
