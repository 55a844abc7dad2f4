/**
 * The same install and smoke run as packaging.test.ts, under Node 22 (from the npm registry,
 * cached under the temp dir): Node 22 first on PATH for `npm install` — so better-sqlite3 is
 * built for Node 22's ABI, against Node 22's own headers — and for `npx`, which launches the
 * server with it. Under Node 22 npm warns of nothing but @x402/svm's peer conflict, at install
 * and at launch.
 */
import { afterAll, describe, expect, it } from "vitest";
import {
  ensureNode22,
  installAndSmoke,
  packProject,
  readmeHostConfig,
  removeDirs,
  tempDir,
  unexplainedNpmWarnings,
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
    // npm's warnings: none but those docs/dependencies.md explains (no engine warning here).
    const node = /node: (v22\.\d+\.\d+)/.exec(s.doctor.stdout)![1]!;
    expect(unexplainedNpmWarnings(s.install.stdout + s.install.stderr, node), s.install.stderr).toEqual([]);
    expect(s.install.stderr).not.toMatch(/EBADENGINE/);
    expect(unexplainedNpmWarnings(s.serverStderr, node), s.serverStderr).toEqual([]);
  }, 420_000);
});
