/**
 * `paid-actions-mcp serve` (the default): the MCP server over stdio. stdout carries
 * JSON-RPC only; everything for humans goes to stderr.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { openPaidActions } from "../app/index.js";
import { createMcpServer } from "../mcp/server.js";

export async function serve(env: NodeJS.ProcessEnv, version: string): Promise<number> {
  // Nothing but JSON-RPC may reach stdout: whatever a dependency prints goes to stderr.
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;
  const log = (line: string) => process.stderr.write(`[paid-actions-mcp] ${line}\n`);

  const delay = env.PAID_ACTIONS_SANDBOX_DELAY_MS;
  const providerDelayMs = delay !== undefined && /^\d{1,7}$/.test(delay) ? Number(delay) : undefined;
  // Unfinished purchases are resumed in the background: tools/list answers at once.
  const pa = await openPaidActions({ env, log, resume: "background", sandbox: providerDelayMs !== undefined ? { providerDelayMs } : {} });
  if (!pa.configResult.ok) {
    log(`configuration problems — every paying tool will refuse until they are fixed: ${pa.configResult.issues.map((i) => `${i.key}: ${i.message}`).join("; ")}`);
  }
  if (pa.sandbox) log(`sandbox mode: ${pa.sandbox.owned ? "started" : "reusing"} the embedded reference service at ${pa.sandbox.info.baseUrl}`);
  const mcp = await createMcpServer({ pa, version, log });
  log(`${mcp.catalog.entries.length} paid tool(s) from the ${mcp.catalog.source === "service" ? "service" : mcp.catalog.source === "cache" ? "cached catalog" : "(empty) catalog"}; journal in ${pa.home}`);

  const transport = new StdioServerTransport();
  let stopping: Promise<void> | undefined;
  const stop = (why: string): Promise<void> => {
    if (stopping) return stopping;
    // Assigned before anything runs: closing the server fires onclose, which calls stop again.
    let done!: () => void;
    stopping = new Promise<void>((resolve) => (done = resolve));
    log(`stopping (${why})`);
    void (async () => {
      try {
        await mcp.close();
        await pa.close();
      } finally {
        done();
      }
    })();
    return stopping;
  };
  await new Promise<void>((resolve) => {
    transport.onclose = () => void stop("the client closed the connection").then(resolve);
    process.stdin.once("end", () => void stop("stdin closed").then(resolve));
    process.once("SIGINT", () => void stop("SIGINT").then(resolve));
    process.once("SIGTERM", () => void stop("SIGTERM").then(resolve));
    void mcp.server.connect(transport);
  });
  return 0;
}
