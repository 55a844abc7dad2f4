/**
 * The built CLI under a pseudo-terminal, as a person at a terminal runs it: util-linux
 * `script -qfec <command> /dev/null` gives the child a pty whose input is what the test
 * types (written to script's stdin) and whose screen is script's stdout.
 */
import { spawn } from "node:child_process";
import { CLI_PATH, PROJECT_ROOT } from "../helpers/process.js";

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export interface PtyRun {
  /** Everything the terminal showed so far (CR removed). */
  screen(): string;
  /** Waits until the screen shows `text` (after what earlier waits consumed). */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** Types text at the terminal (add "\r" for Enter). */
  type(text: string): void;
  /** The exit code and the whole screen. */
  exit: Promise<{ code: number | null; screen: string }>;
}

export function runInPty(args: string[], env: Record<string, string | undefined>, timeoutMs = 30_000): PtyRun {
  const command = [process.execPath, CLI_PATH, ...args].map(quote).join(" ");
  const child = spawn("script", ["-qfec", command, "/dev/null"], {
    cwd: PROJECT_ROOT,
    env: { ...env, SHELL: "/bin/sh", TERM: "dumb" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let screen = "";
  let consumed = 0;
  const waiters = new Set<() => void>();
  const onOutput = (c: Buffer) => {
    screen += c.toString("utf8").replace(/\r/g, "");
    for (const w of [...waiters]) w();
  };
  child.stdout.on("data", onOutput);
  child.stderr.on("data", onOutput);
  const killer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const exit = new Promise<{ code: number | null; screen: string }>((resolve) =>
    child.on("close", (code) => {
      clearTimeout(killer);
      for (const w of [...waiters]) w();
      resolve({ code, screen });
    }),
  );
  let exited = false;
  void exit.then(() => (exited = true));
  return {
    screen: () => screen,
    type(text) {
      child.stdin.write(text);
    },
    waitFor(text, ms = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const rest = screen.slice(consumed);
          const at = typeof text === "string" ? rest.indexOf(text) : rest.search(text);
          if (at >= 0) {
            consumed += at + (typeof text === "string" ? text.length : (rest.match(text)?.[0].length ?? 0));
            done();
            resolve();
          } else if (exited) {
            done();
            reject(new Error(`the command ended without showing ${String(text)}; screen:\n${screen}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out waiting for ${String(text)}; screen:\n${screen}`));
        }, ms);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    exit,
  };
}
