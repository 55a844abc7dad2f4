// A child process for test/e2e/node24-sqlite-gc.test.ts, run by Node 24 with a better-sqlite3
// built for it: under Node 24, better-sqlite3 12 aborts the process when the garbage collector
// destroys one of its statements or databases. Every `better-sqlite3` import resolves to the
// build in argv[3] (the checkout's own is built for the Node running the tests).
// argv: dist dir, better-sqlite3 dir, home, mode:
//   control  throwaway statements of better-sqlite3 itself, then garbage: must abort here
//   session  what sandbox mode runs (journal and embedded sandbox on a fresh home, paid calls,
//            close), twice in this process, with garbage made after each: must not abort
// Output (stdout): one line per step, and "survived" at the end.
import { registerHooks } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dist, sqliteDir, home, mode] = process.argv.slice(2);
const sqliteUrl = pathToFileURL(join(sqliteDir, "lib", "index.js")).href;
registerHooks({
  resolve: (specifier, context, next) =>
    specifier === "better-sqlite3" ? { url: sqliteUrl, shortCircuit: true } : next(specifier, context),
});

/** Young garbage, enough for many scavenges: when the aborts happened. */
function garbage() {
  for (let k = 0; k < 3000; k++) {
    const junk = [];
    for (let m = 0; m < 1000; m++) junk.push({ m });
  }
}

if (mode === "control") {
  const { default: Database } = await import("better-sqlite3");
  const db = new Database(":memory:");
  for (let i = 0; i < 1000; i++) db.prepare("SELECT 1").get();
  garbage();
} else {
  const { openPaidActions } = await import(pathToFileURL(join(dist, "app", "index.js")).href);
  const input = { region: "eu-west-1", plan: "small", durationHours: 24 };
  for (const round of [1, 2]) {
    const pa = await openPaidActions({ env: { PAID_ACTIONS_HOME: home }, log: () => undefined });
    for (let i = 0; i < 3; i++) {
      const result = await pa.engine.pay({ action: "servers.provision", input }, { callId: `call_${round}_${i}` });
      process.stdout.write(`round ${round} call ${i}: ${result.status}\n`);
    }
    await pa.close();
    garbage();
  }
}
process.stdout.write("survived\n");
