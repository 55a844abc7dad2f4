// The engine (the build's `openPaidActions`) in a process of its own, driven over Node's IPC
// channel by the alternation section (alternation.mjs), so its CPU can be read from /proc
// apart from the bench's. Configured from its environment as the MCP server would be, plus
//   BENCH_RECONCILE  "1": the background reconciler runs (verifies each settlement after the
//                    call, as in the MCP server); anything else: it does not
//   BENCH_INPUT      the paid action's input, JSON
// Messages in: {calls: n} → n paid calls one after another, each with a call id as the MCP
// server gives every tool call; answered {samples: [ms, …]} or {error}. {close: true} → closes.
import { openPaidActions } from "../../dist/app/index.js";

const input = JSON.parse(process.env.BENCH_INPUT ?? "{}");
const pa = await openPaidActions({
  env: process.env,
  reconcile: process.env.BENCH_RECONCILE === "1",
  log: () => undefined,
});
let n = 0;
process.on("message", async (m) => {
  if (m.close) {
    await pa.close();
    process.exit(0);
  }
  const samples = [];
  try {
    for (let i = 0; i < m.calls; i++) {
      const t0 = performance.now();
      await pa.engine.pay({ action: "servers.provision", input }, { callId: `call_bench${n++}` });
      samples.push(performance.now() - t0);
    }
    process.send({ samples });
  } catch (e) {
    process.send({ error: `${e.code ?? "error"}: ${e.message}` });
  }
});
process.send({ ready: true });
