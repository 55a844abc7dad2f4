/**
 * The sandbox's home lock under contention: separate processes, released at the same
 * instant, race for a home whose `sandbox.pid` names a process that is gone (as when the
 * owner of an embedded sandbox dies and every MCP server on the home notices). Exactly one
 * may take it over each time; the others must see it held.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, PROJECT_ROOT } from "../helpers/process.js";
import { lockHome, SandboxBusyError } from "../../src/sandbox/home-lock.js";

const homes: string[] = [];
beforeAll(() => ensureBuilt(), 120_000);
afterAll(() => homes.forEach((h) => rmSync(h, { recursive: true, force: true })));

const LOCK_MODULE = pathToFileURL(join(PROJECT_ROOT, "dist", "sandbox", "home-lock.js")).href;

/**
 * One contender: says it is ready, reads the start instant, spins until it, tries the lock,
 * says how it went, and holds what it got until its stdin closes (once every contender has
 * tried, so no lock is left stale while another still races for it).
 */
const CONTENDER = `
const { lockHome } = await import(process.env.LOCK_MODULE);
const { createInterface } = await import("node:readline");
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
process.stdout.write("ready\\n");
const start = Number((await lines.next()).value);
while (Date.now() < start) {}
let outcome;
try { lockHome(process.env.HOME_DIR); outcome = "locked"; } catch (e) { outcome = e.name === "SandboxBusyError" ? "busy" : "error: " + e.message; }
process.stdout.write(outcome + "\\n");
while (!(await lines.next()).done) {}
`;

/**
 * `n` contenders on `home`, released at one instant once all of them are up (the race is
 * for that instant; no guess of how long a process takes to start), each one's outcome.
 */
async function race(home: string, n: number): Promise<string[]> {
  const children = Array.from({ length: n }, () =>
    spawn(process.execPath, ["--input-type=module", "-e", CONTENDER], {
      env: { ...process.env, LOCK_MODULE, HOME_DIR: home },
      stdio: ["pipe", "pipe", "pipe"],
    }),
  );
  const said = children.map((child) => {
    let out = "";
    let err = "";
    const waiting: Array<() => void> = [];
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
      waiting.forEach((look) => look());
    });
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    const exited = new Promise<void>((resolve, reject) => {
      child.on("error", reject);
      child.on("exit", () => resolve());
    });
    /** The child's `k`-th line, or what it printed when it ended without one. */
    const line = (k: number) =>
      new Promise<string>((resolve) => {
        const look = () => {
          const lines = out.split("\n");
          if (lines.length > k + 1) resolve(lines[k]!);
        };
        waiting.push(look);
        look();
        void exited.then(() => resolve(`no outcome: ${out}${err}`));
      });
    return { ready: line(0), outcome: line(1), exited };
  });
  await Promise.all(said.map((s) => s.ready));
  const startAt = String(Date.now() + 50);
  for (const child of children) child.stdin.write(`${startAt}\n`);
  const outcomes = await Promise.all(said.map((s) => s.outcome));
  for (const child of children) child.stdin.end();
  await Promise.all(said.map((s) => s.exited));
  return outcomes;
}

/** A pid that named a process which has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(r.stdout.toString());
}

describe("the sandbox's home lock", () => {
  it("a stale lock raced for by 6 processes at once is taken over by exactly one, every round", async () => {
    for (let round = 0; round < 6; round++) {
      const home = mkdtempSync(join(tmpdir(), "pam-home-lock-"));
      homes.push(home);
      const dead = deadPid();
      writeFileSync(join(home, "sandbox.pid"), String(dead));
      const outcomes = await race(home, 6);
      expect(
        outcomes.filter((o) => o === "locked"),
        `round ${round}: ${outcomes.join(", ")}`,
      ).toHaveLength(1);
      expect(outcomes.filter((o) => o === "busy")).toHaveLength(5);
      // The winner's pid is in the lock, and nothing was left beside it.
      expect(Number(readFileSync(join(home, "sandbox.pid"), "utf8"))).not.toBe(dead);
      expect(readdirSync(home).sort()).toEqual(["sandbox.pid"]);
    }
  }, 60_000);

  it("takes over a lock that names no process (garbage, empty) and one left by a breaker that died", () => {
    for (const content of ["not a pid", "", "-7"]) {
      const home = mkdtempSync(join(tmpdir(), "pam-home-lock-"));
      homes.push(home);
      writeFileSync(join(home, "sandbox.pid"), content);
      expect(lockHome(home)).toBe(join(home, "sandbox.pid"));
      expect(readFileSync(join(home, "sandbox.pid"), "utf8")).toBe(String(process.pid));
      expect(readdirSync(home)).toEqual(["sandbox.pid"]);
    }
    // A process died while breaking a stale lock: its breaker lock is cleared, not waited on forever.
    const home = mkdtempSync(join(tmpdir(), "pam-home-lock-"));
    homes.push(home);
    writeFileSync(join(home, "sandbox.pid"), String(deadPid()));
    writeFileSync(join(home, "sandbox.pid.breaking"), String(deadPid()));
    expect(lockHome(home)).toBe(join(home, "sandbox.pid"));
    expect(readdirSync(home)).toEqual(["sandbox.pid"]);
  });

  it("refuses a home a live process holds, and leaves its lock alone", () => {
    const home = mkdtempSync(join(tmpdir(), "pam-home-lock-"));
    homes.push(home);
    const holder = spawn(process.execPath, ["-e", "setTimeout(() => {}, 10000)"], { stdio: "ignore" });
    try {
      writeFileSync(join(home, "sandbox.pid"), String(holder.pid));
      expect(() => lockHome(home)).toThrow(SandboxBusyError);
      expect(readFileSync(join(home, "sandbox.pid"), "utf8")).toBe(String(holder.pid));
      expect(readdirSync(home)).toEqual(["sandbox.pid"]);
    } finally {
      holder.kill();
    }
  });
});
