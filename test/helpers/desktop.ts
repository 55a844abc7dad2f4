/**
 * A fake desktop, the stand-ins at the OS boundary: `xdg-open` and `notify-send` scripts first
 * on PATH. Each run of either appends its arguments (one a line) and an end mark to its log,
 * so a test counts the runs and reads what each was handed; `xdg-open` then lingers 3 s, as
 * an opener that starts a browser does, so that a test can read every command line while it
 * runs. `DISPLAY` makes the environment a desktop session (app/desktop.ts's desktopSession).
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { waitFor } from "./wait.js";

const END = "--end-of-run--";

const script = (logVar: string, linger: boolean) => `#!/bin/sh
{ printf '%s\\n' "$@"; printf '%s\\n' '${END}'; } >> "$${logVar}"
${linger ? "sleep 3\n" : ""}`;

export interface FakeDesktop {
  /** The folder holding the fakes. */
  bin: string;
  /** A desktop session's environment for one run: PATH (the fakes first), DISPLAY, where the fakes log. */
  env(name: string): Record<string, string>;
  /** The arguments of each time the opener ran (so far), in order. */
  opened(name: string): string[][];
  /** The arguments of each notification shown (so far), in order. */
  notified(name: string): string[][];
  /** The opener's runs, once there are at least `count` (bounded wait). */
  waitOpened(name: string, count?: number, timeoutMs?: number): Promise<string[][]>;
}

function runs(path: string): string[][] {
  if (!existsSync(path)) return [];
  const out: string[][] = [];
  let current: string[] = [];
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line === END) {
      out.push(current);
      current = [];
    } else if (line !== "") current.push(line);
  }
  return out;
}

export function fakeDesktop(root: string): FakeDesktop {
  const bin = join(root, "desktop-bin");
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, "xdg-open"), script("PAM_TEST_OPENER_LOG", true));
  writeFileSync(join(bin, "notify-send"), script("PAM_TEST_NOTIFY_LOG", false));
  chmodSync(join(bin, "xdg-open"), 0o755);
  chmodSync(join(bin, "notify-send"), 0o755);
  const openerLog = (name: string) => join(root, `${name}.opened`);
  const notifyLog = (name: string) => join(root, `${name}.notified`);
  const d: FakeDesktop = {
    bin,
    env: (name) => ({
      PATH: `${bin}:${process.env.PATH ?? ""}`,
      DISPLAY: ":99",
      PAM_TEST_OPENER_LOG: openerLog(name),
      PAM_TEST_NOTIFY_LOG: notifyLog(name),
    }),
    opened: (name) => runs(openerLog(name)),
    notified: (name) => runs(notifyLog(name)),
    async waitOpened(name, count = 1, timeoutMs = 10_000) {
      await waitFor(() => d.opened(name).length >= count, {
        timeoutMs,
        intervalMs: 50,
        what: () => `the opener to run ${count} time(s) (ran ${d.opened(name).length})`,
      });
      return d.opened(name);
    },
  };
  return d;
}

/** Every process's command line as any local user reads it (NULs between arguments). */
export function commandLines(): string[] {
  const lines: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      lines.push(readFileSync(`/proc/${pid}/cmdline`, "latin1").replace(/\0/g, " "));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return lines;
}
