/**
 * A fake OS opener, the one stand-in at the OS boundary: an `xdg-open` script first on PATH
 * that records its arguments (one a line) to a file and lingers 3 s, as an opener that starts
 * a browser does — so a test can read every command line while it runs, and then open what it
 * was handed in a real browser.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { waitFor } from "./wait.js";

const SCRIPT = `#!/bin/sh
printf '%s\\n' "$@" > "$PAM_TEST_OPENER_LOG.part"
mv "$PAM_TEST_OPENER_LOG.part" "$PAM_TEST_OPENER_LOG"
sleep 3
`;

export interface FakeOpener {
  /** The folder holding `xdg-open`. */
  bin: string;
  /** PATH (the fake first) and where this run's opener records its arguments. */
  env(name: string): { PATH: string; PAM_TEST_OPENER_LOG: string };
  /** The log file of a run. */
  log(name: string): string;
  /** The arguments the opener of a run was given, once it has run (bounded wait). */
  argv(name: string, timeoutMs?: number): Promise<string[]>;
}

export function fakeOpener(root: string): FakeOpener {
  const bin = join(root, "bin");
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, "xdg-open"), SCRIPT);
  chmodSync(join(bin, "xdg-open"), 0o755);
  const log = (name: string) => join(root, `${name}.argv`);
  return {
    bin,
    log,
    env: (name) => ({ PATH: `${bin}:${process.env.PATH ?? ""}`, PAM_TEST_OPENER_LOG: log(name) }),
    async argv(name, timeoutMs = 10_000) {
      await waitFor(() => existsSync(log(name)), { timeoutMs, intervalMs: 50, what: "the opener to run" });
      return readFileSync(log(name), "utf8").split("\n").filter(Boolean);
    },
  };
}
