// `npm run bench`, section 2: how long the server takes from spawn to its tools/list answer,
// with 6 actions and with 500 (a stub catalog), first start and with the catalog cached,
// against what bounds it (a bare Node process, one that only loads the MCP SDK), and the
// embedded sandbox's restart.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { join } from "node:path";
import { CLI, COLD_RUNS, children, ROOT, serviceEnv, stats, work, log } from "./common.mjs";

// ---- 2. Cold start ---------------------------------------------------------------------

/** A catalog of `count` generated actions on 127.0.0.1, standing in for a service with a large one. */
export async function stubCatalog(count) {
  const names = Array.from({ length: count }, (_, i) => `bench${Math.floor(i / 10)}.action-${i}`);
  const detail = (name) => ({
    name,
    description: `Generated action ${name}`,
    supportsAsync: true,
    inputSchema: {
      type: "object",
      properties: { size: { type: "integer", minimum: 1, maximum: 100 }, note: { type: "string", maxLength: 200 } },
      required: ["size"],
      additionalProperties: false,
    },
    pricing: { model: "per_unit", currency: "USDC", unit: "size", formula: "0.01 x size" },
    budgetHints: { typical: "0.10", max: "1.00" },
  });
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    let body;
    if (url.pathname === "/v1/actions") body = { items: names.map((n) => ({ name: n, supportsAsync: true })) };
    else if (url.pathname.startsWith("/v1/actions/")) body = detail(decodeURIComponent(url.pathname.slice(12)));
    else body = { error: { code: "not_found", message: "not here" } };
    res.writeHead(body.error ? 404 : 200, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, close: () => new Promise((r) => server.close(r)) };
}

/** Process spawn to the tools/list answer on stdout, speaking raw JSON-RPC as a host does. */
async function coldStart(env) {
  const t0 = performance.now();
  const child = spawn(process.execPath, [CLI, "serve"], { env, stdio: ["pipe", "pipe", "ignore"] });
  children.add(child);
  const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
  send({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
  });
  let buf = "";
  const { elapsed, tools } = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no tools/list answer within 30 s")), 30_000);
    child.stdout.on("data", (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const msg = JSON.parse(line);
        if (msg.id === 1) {
          send({ jsonrpc: "2.0", method: "notifications/initialized" });
          send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
        } else if (msg.id === 2) {
          clearTimeout(timer);
          resolve({ elapsed: performance.now() - t0, tools: msg.result.tools.length });
        }
      }
    });
  });
  child.stdin.end();
  await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
  children.delete(child);
  return { elapsed, tools };
}

/** Section 2's figures; `stub` is the 500-action catalog (stubCatalog(500)). */
export async function coldStarts(svc, stub) {
  log("2. cold start to tools/list…");
  const out = {};
  for (const [label, makeEnv] of [
    ["6 actions", async (i) => serviceEnv(svc.info, join(work, `cold6-${i}`))],
    [
      "500 actions",
      async (i) => ({ ...serviceEnv(svc.info, join(work, `cold500-${i}`)), PAID_ACTIONS_BASE_URL: stub.url }),
    ],
  ]) {
    const first = [];
    const cached = [];
    let tools = 0;
    for (let i = 0; i < COLD_RUNS; i++) {
      const env = await makeEnv(i);
      const a = await coldStart(env); // a new home: the catalog is fetched
      const b = await coldStart(env); // the same home: the cached catalog answers
      first.push(a.elapsed);
      cached.push(b.elapsed);
      tools = b.tools;
    }
    out[label] = { firstStart: stats(first), cachedCatalog: stats(cached), tools };
  }
  // What bounds it: a bare Node process, and one that only loads the MCP SDK the server is
  // built on (v2, and zod with it).
  const spawnTime = async (args) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { stdio: "ignore", cwd: ROOT });
    await new Promise((r) => child.once("exit", r));
    return performance.now() - t0;
  };
  const bare = [];
  const sdkOnly = [];
  for (let i = 0; i < COLD_RUNS; i++) {
    bare.push(await spawnTime(["-e", "0"]));
    sdkOnly.push(
      await spawnTime([
        "--input-type=module",
        "-e",
        "await import('@modelcontextprotocol/server'); await import('@modelcontextprotocol/server/stdio')",
      ]),
    );
  }
  out["floor: node -e 0"] = { restart: stats(bare) };
  out["floor: node loading the MCP SDK"] = { restart: stats(sdkOnly) };
  // The sandbox default (no service configured): the embedded reference service starts in-process.
  const embedded = [];
  for (let i = 0; i < Math.min(COLD_RUNS, 5); i++) {
    const env = { PATH: process.env.PATH ?? "", PAID_ACTIONS_HOME: join(work, `coldsb-${i}`) };
    await coldStart(env); // genesis of the embedded sandbox
    embedded.push((await coldStart(env)).elapsed);
  }
  out["embedded sandbox"] = { restart: stats(embedded) };
  return out;
}
