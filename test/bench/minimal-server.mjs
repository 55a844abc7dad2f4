// The start-up baseline for `npm run bench`: the smallest v2 SDK stdio server there is, one
// tool, served with serveStdio so that it answers both eras (initialize and server/discover).
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { z } from "zod";

serveStdio(() => {
  const server = new McpServer({ name: "bench-minimal", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echoes its text back", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  return server;
});
