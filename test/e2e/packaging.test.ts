/**
 * The npm package as a user gets it: `npm pack` of the checkout, installed into an empty temp
 * dir that has no way back to the checkout (no npm_* variables naming it, none of its
 * node_modules on PATH) with npm's warnings showing, launched exactly as the README's host
 * config does (`npx -y paid-actions-mcp`) and driven by the SDK's v2 Client over stdio: the
 * tools, one paid call in sandbox mode, then `npx paid-actions-mcp doctor`. Under the Node
 * that runs the tests (20); packaging-node22.test.ts does the same under Node 22. npm prints no
 * warning at all, at install or launch. And the README's line for a tarball, run as written there.
 */
import { copyFileSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connect,
  installedPackages,
  installAndSmoke,
  nodedirOf,
  packProject,
  readmeHostConfig,
  readmeTarballCommand,
  removeDirs,
  tempDir,
  npmWarnings,
  userEnv,
  type Packed,
} from "../helpers/install.js";
import { PROJECT_ROOT } from "../helpers/process.js";
import { expectSmokePassed, SANDBOX_TOOLS } from "../helpers/smoke.js";

/**
 * Where the README-line test puts the tarball: one path, so that npx keeps one install of it
 * (in npm's own npx cache) from run to run and rebuilds no native module when only the
 * package changed.
 */
const README_TARBALL_DIR = join(tmpdir(), "paid-actions-mcp-readme-tarball");

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
    // The Solana and x402 code inside (docs/dependencies.md), with the licences it comes under.
    for (const f of ["dist/vendor/solana-kit.js", "dist/vendor/litesvm.js", "dist/vendor/THIRD-PARTY-LICENSES.md"])
      expect(files).toContain(f);
    const licences = readFileSync(join(PROJECT_ROOT, "dist", "vendor", "THIRD-PARTY-LICENSES.md"), "utf8");
    for (const p of ["@solana/kit", "@solana/errors", "@x402/svm", "litesvm", "@solana-program/token"])
      expect(licences).toMatch(
        new RegExp(`^## ${p.replace("/", "\\/")} \\d+\\.\\d+\\.\\d+ \\((MIT|Apache-2\\.0)\\)$`, "m"),
      );
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
    // npm's warnings: none, at install and at launch (the Solana and x402 code is inside dist/vendor).
    expect(npmWarnings(s.install.stdout + s.install.stderr), s.install.stderr).toEqual([]);
    expect(npmWarnings(s.serverStderr), s.serverStderr).toEqual([]);
    const installed = installedPackages(s.prefix);
    expect(installed).toEqual(expect.arrayContaining(["paid-actions-mcp", "better-sqlite3", "@x402/core"]));
    expect(
      installed.filter((p) => /^(@solana\/|@solana-program\/|@x402\/svm$|litesvm$|commander$)/.test(p)),
      installed.join(" "),
    ).toEqual([]);
  }, 360_000);

  it("the README's line for a tarball, run as written (`npx -y file:…`), answers initialize and tools/list", async () => {
    mkdirSync(README_TARBALL_DIR, { recursive: true });
    const tarball = join(README_TARBALL_DIR, basename(packed.tarball));
    const partial = `${tarball}.${process.pid}`;
    copyFileSync(packed.tarball, partial);
    renameSync(partial, tarball);
    const [command = "", ...args] = readmeTarballCommand(tarball);
    expect(command).toBe("npx");
    const env = { ...userEnv(nodedirOf(process.execPath)), PAID_ACTIONS_HOME: tempDir("pam-home-") };
    const s = await connect(command, args, { cwd: tempDir("pam-npx-"), env, timeoutMs: 300_000 });
    try {
      expect(s.client.getServerVersion()).toMatchObject({ name: "paid-actions-mcp" });
      expect((await s.client.listTools()).tools.map((t) => t.name).sort()).toEqual([...SANDBOX_TOOLS].sort());
    } finally {
      await s.close();
    }
    expect(npmWarnings(s.stderr()), s.stderr()).toEqual([]);
  }, 360_000);
});
