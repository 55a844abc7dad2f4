/**
 * Under Node 24, better-sqlite3 12 aborts the process when the garbage collector destroys one
 * of its statements or databases (`node::ObjectWrap`'s destructor asserts a Node environment
 * the collector does not have: `Assertion failed: (env) != nullptr`). The journal and the
 * sandbox therefore keep every statement and database they make for the process's life
 * (src/sandbox/db.ts, src/engine/journal/sqlite-records.ts). This runs what sandbox mode runs
 * — the journal and the embedded sandbox on a fresh home, paid calls, close, twice in one
 * process — under Node 24.21.0 from the npm registry (cached under the temp dir), with
 * better-sqlite3 built for it from the checkout's copy (cached too), and makes garbage after
 * each close. Before the fix the child aborted every time (5 of 5); a control shows that this
 * Node and build do abort when a statement is left to the collector.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureNode,
  explain,
  PROJECT_ROOT,
  removeDirs,
  run,
  tempDir,
  userEnv,
  type SecondNode,
} from "../helpers/install.js";
import { ensureBuilt } from "../helpers/process.js";

const NODE24 = "24.21.0";
const CHILD = join(PROJECT_ROOT, "test", "helpers", "sqlite-gc-child.mjs");
const ABORT = "Assertion failed: (env) != nullptr";

/**
 * better-sqlite3 (the checkout's version, and the two packages it loads with) built for
 * `node` with node-gyp against its own headers, kept under the temp dir; its directory.
 */
async function ensureSqliteFor(node: SecondNode): Promise<string> {
  const source = join(PROJECT_ROOT, "node_modules", "better-sqlite3");
  const { version } = JSON.parse(readFileSync(join(source, "package.json"), "utf8")) as { version: string };
  const cache = join(tmpdir(), `paid-actions-mcp-better-sqlite3-${version}-node${NODE24}`);
  const built = (dir: string) => join(dir, "node_modules", "better-sqlite3");
  if (existsSync(join(built(cache), "build", "Release", "better_sqlite3.node"))) return built(cache);
  const scratch = `${cache}.${process.pid}.${Date.now()}`;
  mkdirSync(join(scratch, "node_modules"), { recursive: true });
  try {
    for (const name of ["better-sqlite3", "bindings", "file-uri-to-path"])
      cpSync(join(PROJECT_ROOT, "node_modules", name), join(scratch, "node_modules", name), {
        recursive: true,
        filter: (path) => !path.startsWith(join(source, "build")),
      });
    const allowScripts = { "better-sqlite3": true };
    writeFileSync(join(scratch, "package.json"), `${JSON.stringify({ private: true, allowScripts })}\n`);
    // Its install script: prebuild-install (not copied, so nothing is downloaded), else node-gyp.
    const r = await run("npm", ["rebuild", "better-sqlite3"], {
      cwd: scratch,
      env: userEnv({ npm_config_nodedir: node.nodedir }, [node.binDir]),
      timeoutMs: 300_000,
    });
    if (r.code !== 0 || !existsSync(join(built(scratch), "build", "Release", "better_sqlite3.node")))
      throw new Error(explain(`npm rebuild better-sqlite3 with Node ${NODE24}`, r));
    try {
      renameSync(scratch, cache);
    } catch {
      // Another run built it first: use that one.
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return built(cache);
}

let node24: SecondNode;
let sqlite: string;
beforeAll(async () => {
  ensureBuilt();
  node24 = await ensureNode(NODE24, join(tmpdir(), `paid-actions-mcp-node${NODE24}`));
  sqlite = await ensureSqliteFor(node24);
}, 540_000);
afterAll(() => removeDirs());

const child = (mode: "control" | "session") =>
  run(node24.node, [CHILD, join(PROJECT_ROOT, "dist"), sqlite, tempDir("pam-gc24-"), mode], {
    cwd: PROJECT_ROOT,
    env: userEnv(),
    timeoutMs: 120_000,
  });

describe(`Node ${NODE24} with better-sqlite3 12: nothing left to the garbage collector`, () => {
  it("control: this Node and build abort when a statement is collected", async () => {
    const r = await child("control");
    expect(r.signal, explain("control", r)).toBe("SIGABRT");
    expect(r.stderr).toContain(ABORT);
  }, 150_000);

  it("sandbox mode twice in one process (journal, sandbox, three paid calls, close), then garbage: no abort", async () => {
    const r = await child("session");
    expect(r.stderr, explain("session", r)).not.toContain(ABORT);
    expect(r.signal).toBeNull();
    expect(r.code, explain("session", r)).toBe(0);
    expect(r.stdout.split("\n").filter((l) => l.startsWith("round"))).toHaveLength(6);
    expect(r.stdout).toContain("survived");
  }, 150_000);
});
