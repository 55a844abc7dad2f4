/** Types of postgres.mjs: a real PostgreSQL server for tests and the benchmark. */
export interface TestPostgres {
  /** The `postgres` database's URL, password included. */
  url: string;
  port: number;
  password: string;
  dataDir: string;
  pid: number;
  /** Creates a fresh, empty database (default collation ICU en-US where the server has ICU) and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  stop(): Promise<void>;
}

/** initdb and postgres: on PATH, else in the highest /usr/lib/postgresql/<version>/bin. */
export function findPostgresBinaries(): { initdb: string; postgres: string };

/** A fresh cluster in a temp dir on 127.0.0.1 and a free port; stop it with stop(). */
export function startTestPostgres(): Promise<TestPostgres>;
