/**
 * A host whose Node does not match the native SQLite module: the checkout's dist/cli.js
 * (its better-sqlite3 built for the Node running the tests, 20) launched with Node 22's
 * binary. Every command that needs SQLite says why and what to do in one line on stderr,
 * writes nothing on stdout (a host reads it as JSON-RPC) and exits non-zero — at once, even
 * when the host sends nothing (serve checks a turn after it starts listening, so that the
 * first answer never waits for the module's load); doctor reports it as a FAIL line; and a server whose journal
 * is on PostgreSQL, with a service configured, needs no SQLite and serves.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connect,
  ensureNode22,
  PROJECT_ROOT,
  removeDirs,
  run,
  tempDir,
  userEnv,
  type SecondNode,
} from "../helpers/install.js";
import { CLI_PATH, ensureBuilt } from "../helpers/process.js";

let node22: SecondNode;
beforeAll(async () => {
  ensureBuilt();
  node22 = await ensureNode22();
}, 240_000);
afterAll(() => removeDirs());

const BUILT_ABI = process.versions.modules;
/** The one line: the module, both ABIs with their Node versions, and both fixes. */
const ONE_LINE = new RegExp(
  `^paid-actions-mcp: the native SQLite module \\(better-sqlite3\\) cannot load: it was built for Node 20 \\(ABI ${BUILT_ABI}\\) and this is Node v22\\.\\d+\\.\\d+ \\(ABI 127\\)\\. ` +
    "Fix: run `npm rebuild better-sqlite3` in \\S+ with this Node \\(v22\\.\\d+\\.\\d+\\), or reinstall paid-actions-mcp with it\\.\\n$",
);

/**
 * Spawns node22 dist/cli.js with stdin left open (a host that sends nothing, or only `send`),
 * until it exits.
 */
function launchSilent(
  args: string[],
  env: Record<string, string>,
  send?: string,
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const child = spawn(node22.node, [CLI_PATH, ...args], { cwd: PROJECT_ROOT, env, stdio: ["pipe", "pipe", "pipe"] });
    if (send !== undefined) child.stdin.write(send);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

describe("a Node whose ABI does not match the built native module", () => {
  it("serve (the default command) prints one line with the fix on stderr, nothing on stdout, and exits non-zero at once", async () => {
    expect(BUILT_ABI).toBe("115"); // the build under test is Node 20's
    const home = tempDir("pam-abi-");
    for (const args of [[], ["serve"]]) {
      const r = await launchSilent(args, userEnv({ PAID_ACTIONS_HOME: home }));
      expect(r.stdout).toBe("");
      expect(r.stderr).toMatch(ONE_LINE);
      expect(r.code).toBe(1);
      expect(r.ms).toBeLessThan(10_000);
    }
  });

  it("serve checks a turn after it listens: a host that opens at once may get its handshake answered, then the line, and exit 1", async () => {
    const initialize = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "host", version: "1" } },
    };
    const r = await launchSilent(
      [],
      userEnv({ PAID_ACTIONS_HOME: tempDir("pam-abi-") }),
      `${JSON.stringify(initialize)}\n`,
    );
    expect(r.stderr).toMatch(ONE_LINE);
    expect(r.code).toBe(1);
    // stdout stays JSON-RPC: at most the answer to the handshake.
    for (const line of r.stdout.split("\n").filter(Boolean))
      expect(JSON.parse(line)).toMatchObject({ jsonrpc: "2.0", id: 1 });
  });

  it("the other commands that open the journal or run the sandbox say the same and exit non-zero", async () => {
    const home = tempDir("pam-abi-");
    for (const args of [
      ["executions"],
      ["transcript"],
      ["audit"],
      ["sandbox", "--port", "0", "--home", tempDir("pam-abi-sb-")],
    ]) {
      const r = await launchSilent(args, userEnv({ PAID_ACTIONS_HOME: home }));
      expect(r.stderr, args.join(" ")).toMatch(ONE_LINE);
      expect(r.stdout, args.join(" ")).toBe("");
      expect(r.code, args.join(" ")).toBe(1);
    }
    // --help needs no SQLite.
    const help = await launchSilent(["executions", "--help"], userEnv({ PAID_ACTIONS_HOME: home }));
    expect(help.code).toBe(0);
    expect(help.stderr).toContain("Usage: paid-actions-mcp executions");
  });

  it("doctor reports the running Node and the module it cannot load, with the fix, and exits 1", async () => {
    const r = await run(node22.node, [CLI_PATH, "doctor"], {
      cwd: PROJECT_ROOT,
      env: userEnv({ PAID_ACTIONS_HOME: tempDir("pam-abi-") }),
      timeoutMs: 30_000,
    });
    expect(r.stdout).toMatch(/^\[ok {2}\] node: v22\.\d+\.\d+ \(ABI 127\)$/m);
    expect(r.stdout).toMatch(
      new RegExp(
        `^\\[FAIL\\] sqlite: better-sqlite3 cannot load: it was built for Node 20 \\(ABI ${BUILT_ABI}\\) and this is Node v22\\.\\d+\\.\\d+ \\(ABI 127\\); fix: run \`npm rebuild better-sqlite3\` in `,
        "m",
      ),
    );
    expect(r.stdout).toContain("1 problem(s) to fix before anything can be paid.");
    expect(r.code).toBe(1);
  });

  it("a server whose journal is on PostgreSQL, with a service configured, needs no SQLite: it answers the handshake", async () => {
    const s = await connect(node22.node, [CLI_PATH], {
      cwd: PROJECT_ROOT,
      env: userEnv({
        PAID_ACTIONS_HOME: tempDir("pam-abi-pg-"),
        PAID_ACTIONS_BASE_URL: "https://actions.example.com/v1",
        PAID_ACTIONS_API_KEY: "test-key-not-used",
        PAID_ACTIONS_WALLET: "/nonexistent/wallet.json",
        PAID_ACTIONS_JOURNAL_URL: "postgres://pam@127.0.0.1:9/nothing_here",
      }),
      timeoutMs: 20_000,
    });
    try {
      expect(s.client.getServerVersion()?.name).toBe("paid-actions-mcp");
      expect(s.stderr()).not.toContain("cannot load");
    } finally {
      await s.close();
    }
  });
});
