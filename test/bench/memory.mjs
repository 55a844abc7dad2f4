// `npm run bench`, section 3: what the server costs to keep running — its resident memory
// idle, after many paid calls, and its trend over the second half of them.
import { join } from "node:path";
import { INPUT, log, mcpClient, N_MEMORY, rssMb, serviceEnv, sleep, work } from "./common.mjs";

// ---- 3. Memory -------------------------------------------------------------------------

export async function memory(svc) {
  log(`3. memory: idle, then ${N_MEMORY} paid calls…`);
  const env = serviceEnv(svc.info, join(work, "mem-home"));
  const { client, pid } = await mcpClient(env);
  await client.listTools();
  await sleep(1500);
  const idle = rssMb(pid);
  const samples = [];
  for (let i = 1; i <= N_MEMORY; i++) {
    const r = await client.callTool({ name: "servers_provision", arguments: INPUT });
    if (r.isError) throw new Error(`paid call refused: ${JSON.stringify(r.structuredContent)}`);
    if (i % 100 === 0) samples.push({ calls: i, rssMb: rssMb(pid) });
  }
  await sleep(1000);
  const after = rssMb(pid);
  await client.close();
  // Trend: least-squares slope of RSS over the second half of the run, MB per 100 calls.
  const half = samples.slice(Math.floor(samples.length / 2));
  const mx = half.reduce((s, p) => s + p.calls, 0) / half.length;
  const my = half.reduce((s, p) => s + p.rssMb, 0) / half.length;
  const slope =
    half.reduce((s, p) => s + (p.calls - mx) * (p.rssMb - my), 0) /
    Math.max(
      1,
      half.reduce((s, p) => s + (p.calls - mx) ** 2, 0),
    );
  return { idleMb: idle, afterMb: after, calls: N_MEMORY, samples, slopeMbPer100Calls: slope * 100 };
}
