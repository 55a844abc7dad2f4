/**
 * The same install and smoke run as packaging.test.ts, under Node 22 (from the npm registry,
 * cached under the temp dir): Node 22 first on PATH for `npm install` — so better-sqlite3 is
 * built for Node 22's ABI, against Node 22's own headers — and for `npx`, which launches the
 * server with it. npm prints no warning, at install or at launch.
 */
import { afterAll, describe, expect, it } from "vitest";
import {
  ensureNode22,
  installAndSmoke,
  packProject,
  readmeHostConfig,
  removeDirs,
  tempDir,
  npmWarnings,
  userEnv,
} from "../helpers/install.js";
import { expectSmokePassed } from "../helpers/smoke.js";

afterAll(() => removeDirs());

describe("the npm package under Node 22", () => {
  it("installs with Node 22 and runs as `npx -y paid-actions-mcp`: tools, one paid call in sandbox mode, doctor reporting Node 22", async () => {
    const node22 = await ensureNode22();
    const { tarball } = await packProject(tempDir("pam-pack22-"));
    const env = userEnv({ npm_config_nodedir: node22.nodedir }, [node22.binDir]);
    const s = await installAndSmoke(tarball, env, readmeHostConfig());
    expectSmokePassed(s, /\[ok {2}\] node: v22\.\d+\.\d+ \(ABI 127\)/);
    // npm's warnings: none, at install and at launch.
    expect(npmWarnings(s.install.stdout + s.install.stderr), s.install.stderr).toEqual([]);
    expect(npmWarnings(s.serverStderr), s.serverStderr).toEqual([]);
  }, 420_000);
});
