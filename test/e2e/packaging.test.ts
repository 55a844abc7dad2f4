/**
 * The npm package as a user gets it: `npm pack` of the checkout, installed into an empty temp
 * dir that has no way back to the checkout (no npm_* variables naming it, none of its
 * node_modules on PATH), launched exactly as the README's host config does
 * (`npx -y paid-actions-mcp`) and driven by the SDK's v2 Client over stdio: the tools, one
 * paid call in sandbox mode, then `npx paid-actions-mcp doctor`. Under the Node that runs the
 * tests (20); packaging-node22.test.ts does the same under Node 22.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  installAndSmoke,
  nodedirOf,
  packProject,
  readmeHostConfig,
  removeDirs,
  tempDir,
  userEnv,
  type Packed,
} from "../helpers/install.js";
import { expectSmokePassed } from "../helpers/smoke.js";

let packed: Packed;
beforeAll(async () => {
  packed = await packProject(tempDir("pam-pack-"));
}, 120_000);
afterAll(() => removeDirs());

describe("the npm package", () => {
  it("holds the built server (with the console's assets), README, mcp.json and package.json, and nothing of src/ or test/", () => {
    const files = packed.files;
    for (const f of [
      "package.json",
      "README.md",
      "mcp.json",
      "dist/cli.js",
      "dist/commands/serve.js",
      "dist/sandbox/index.js",
    ])
      expect(files).toContain(f);
    expect(files.some((f) => f.startsWith("dist/console/assets/"))).toBe(true);
    expect(files.filter((f) => /^(src|test)\//.test(f) || f.endsWith(".ts") || f.endsWith(".map"))).toEqual([]);
    expect(files.filter((f) => !/^(dist\/|package\.json$|README\.md$|mcp\.json$|LICENSE)/.test(f))).toEqual([]);
  });

  it("the README's host config is the one-line npx form", () => {
    expect(readmeHostConfig()).toMatchObject({ command: "npx", args: ["-y", "paid-actions-mcp"] });
  });

  it("installs into an empty directory and runs as `npx -y paid-actions-mcp`: tools, one paid call in sandbox mode, doctor", async () => {
    const s = await installAndSmoke(packed.tarball, userEnv(nodedirOf(process.execPath)), readmeHostConfig());
    expectSmokePassed(
      s,
      new RegExp(`\\[ok  \\] node: ${process.version.replace(/\./g, "\\.")} \\(ABI ${process.versions.modules}\\)`),
    );
  }, 360_000);
});
