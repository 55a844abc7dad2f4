import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { Journal } from "../../src/engine/journal/sqlite.js";
import { ensureBuilt, PROJECT_ROOT } from "../helpers/process.js";

describe("the journal", () => {
  it("several processes opening a new journal at once all succeed: a migration runs once", async () => {
    ensureBuilt();
    const dir = mkdtempSync(join(tmpdir(), "pam-journal-"));
    const path = join(dir, "journal.sqlite");
    const journalUrl = pathToFileURL(join(PROJECT_ROOT, "dist", "engine", "journal", "sqlite.js")).href;
    const script = `const { Journal } = await import(${JSON.stringify(journalUrl)}); new Journal(${JSON.stringify(path)}).close();`;
    try {
      const codes = await Promise.all(
        Array.from({ length: 16 }, () =>
          new Promise<{ code: number | null; err: string }>((resolve) => {
            const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "ignore", "pipe"] });
            let err = "";
            child.stderr.on("data", (c: Buffer) => (err += c));
            child.on("exit", (code) => resolve({ code, err }));
          }),
        ),
      );
      for (const c of codes) expect(c.code, c.err).toBe(0);
      const j = new Journal(path);
      expect(j.schemaVersion).toBe(3);
      j.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
