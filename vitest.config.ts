import { configDefaults, defineConfig } from "vitest/config";

/** The integration projects: real servers on 127.0.0.1 with their own temp dirs, in forked workers. */
const common = {
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: "forks",
} as const;

/**
 * The engine's behaviour tests that go through the journal, run a second time on a
 * PostgreSQL journal: test/helpers/engine.ts reads PAM_TEST_JOURNAL and gives each fixture
 * a fresh database on one test server per file. (test/engine/journal.test.ts is about the
 * SQLite file alone; the PostgreSQL store's own contract is test/engine/journal-pg-intents.test.ts
 * and journal-pg-reads.test.ts.)
 */
const ENGINE_ON_POSTGRES = [
  "test/engine/paid-call.test.ts",
  "test/engine/paid-call-refusals.test.ts",
  "test/engine/paid-call-seller.test.ts",
  "test/engine/fast-path.test.ts",
  "test/engine/paid-fetch.test.ts",
  "test/engine/concurrency.test.ts",
  "test/engine/crash.test.ts",
  "test/engine/reconciler-pass.test.ts",
  "test/engine/audit.test.ts",
  "test/engine/evm-rail.test.ts",
  "test/engine/secrets.test.ts",
  "test/hostile/money-truth-payments.test.ts",
  "test/hostile/money-truth-drivers.test.ts",
  "test/hostile/money-truth-fast-path.test.ts",
  "test/hostile/money-truth-refunds.test.ts",
  "test/hostile/future-blockhash.test.ts",
  "test/hostile/evm-kept-proofs.test.ts",
  "test/hostile/x402-seller-lies.test.ts",
  "test/engine/freeze.test.ts",
  "test/console/refund.test.ts",
  "test/console/freeze.test.ts",
  "test/console/purchases.test.ts",
  "test/engine/passkey-approvals.test.ts",
];

export default defineConfig({
  test: {
    // Files may run in parallel, across the projects; two workers match the 2-core CI machine.
    maxWorkers: 2,
    projects: [
      // The pure tables (no server, no child process, no network, no global state):
      // `npm run test:unit` runs them alone in seconds. Threads start faster than forks, and
      // without isolation each worker imports src/ once rather than once per file (half the
      // time): so a unit test that changes global state (fake timers, mocks) puts it back.
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          pool: "threads",
          isolate: false,
          testTimeout: 10_000,
        },
      },
      {
        test: {
          ...common,
          name: "sqlite",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, "test/unit/**"],
        },
      },
      {
        test: {
          ...common,
          name: "engine on postgres",
          include: ENGINE_ON_POSTGRES,
          env: { PAM_TEST_JOURNAL: "postgres" },
        },
      },
    ],
  },
});
