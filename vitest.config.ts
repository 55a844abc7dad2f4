import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Every integration test runs real servers on 127.0.0.1 with their own temp dirs,
    // so files may run in parallel; two workers match the 2-core CI machine.
    maxWorkers: 2,
  },
});
