// A child process running the engine (built dist/), for crash and multi-process tests.
// Input (env): the engine's configuration, plus
//   CHILD_CRASH_AT   a step name: SIGKILL this process when the engine reaches it
//   CHILD_CALLS      JSON array of pay requests to run concurrently ({fetch: {...}}: a paid_fetch)
// Output (stdout): one JSON line per call: {ok, result} or {ok: false, code, message}.
import { openPaidActions } from "../../dist/app/index.js";

const crashAt = process.env.CHILD_CRASH_AT;
const calls = JSON.parse(process.env.CHILD_CALLS ?? "[]");
const pa = await openPaidActions({
  env: process.env,
  reconcile: false,
  log: (line) => process.stderr.write(`${line}\n`),
  onStep: (step) => {
    if (step === crashAt) process.kill(process.pid, "SIGKILL");
  },
});
const results = await Promise.all(
  calls.map((req) =>
    // A call with `fetch` is a paid_fetch (its answer's body left out), else a paid action.
    (req.fetch ? pa.engine.payFetch(req.fetch).then(({ result }) => result) : pa.engine.pay(req)).then(
      (result) => ({ ok: true, result }),
      (e) => ({ ok: false, code: e.code ?? "error", message: String(e.message) }),
    ),
  ),
);
for (const r of results) process.stdout.write(`${JSON.stringify(r)}\n`);
await pa.close();
