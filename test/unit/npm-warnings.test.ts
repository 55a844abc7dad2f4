/**
 * The rule the packaging tests hold npm's output to (test/helpers/npm-warnings.ts): the
 * warnings docs/dependencies.md explains pass, in both forms npm prints them, and anything
 * else is reported — another package's peer conflict, another engine warning, an explained
 * one under a Node where it has no excuse, the install-scripts review.
 * test/fixtures/npm/reinstall-node20.txt is npm 11.19.1's stderr of a warm
 * `npx -y file:…/paid-actions-mcp-0.1.0.tgz` under Node 20.20.2 (npm installs over the tree
 * it has and explains each conflict).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { unexplainedNpmWarnings } from "../helpers/npm-warnings.js";

const REINSTALL = readFileSync(join(import.meta.dirname, "..", "fixtures", "npm", "reinstall-node20.txt"), "utf8");
const ENGINE = [
  "npm warn EBADENGINE Unsupported engine {",
  "npm warn EBADENGINE   package: 'commander@15.0.0',",
  "npm warn EBADENGINE   required: { node: '>=22.12.0' },",
  "npm warn EBADENGINE   current: { node: 'v20.20.2', npm: '11.19.1' }",
  "npm warn EBADENGINE }",
];
const FIRST_INSTALL = [
  ...Array<string>(3).fill("npm warn ERESOLVE overriding peer dependency"),
  ...ENGINE,
  "",
  "added 142 packages in 1m",
].join("\n");

describe("npm's warnings: the explained ones, and the rest", () => {
  it("a first install under Node 20: three short ERESOLVE lines and commander's engine warning are explained", () => {
    expect(unexplainedNpmWarnings(FIRST_INSTALL, "v20.20.2")).toEqual([]);
  });

  it("an install over an existing tree: the three ERESOLVE blocks naming @x402/svm's packages are explained", () => {
    expect(REINSTALL.split("\n").filter((l) => l.startsWith("npm warn")).length).toBe(74);
    expect(unexplainedNpmWarnings(REINSTALL, "v20.20.2")).toEqual([]);
  });

  it("commander's engine warning under Node 22.12 or later is not explained", () => {
    expect(unexplainedNpmWarnings(FIRST_INSTALL, "v22.23.3")).toEqual(ENGINE);
    expect(unexplainedNpmWarnings(REINSTALL, "v24.21.0")).toEqual(ENGINE);
  });

  it("another package's engine warning, or a fourth short ERESOLVE, is not explained", () => {
    const other = ENGINE.map((l) => l.replace("commander@15.0.0", "undici@8.0.0"));
    expect(unexplainedNpmWarnings(other.join("\n"), "v20.20.2")).toEqual(other);
    const four = Array<string>(4).fill("npm warn ERESOLVE overriding peer dependency");
    expect(unexplainedNpmWarnings(four.join("\n"), "v20.20.2")).toEqual(four);
  });

  it("a peer conflict of another package is not explained", () => {
    const block = REINSTALL.split("npm warn ERESOLVE overriding peer dependency\n")[1]!;
    const other = `npm warn ERESOLVE overriding peer dependency\n${block.replaceAll("@solana-program/compute-budget@0.11.0", "left-pad@1.3.0")}`;
    expect(unexplainedNpmWarnings(other, "v20.20.2")).toHaveLength(other.trim().split("\n").length);
  });

  it("the install-scripts review and any other warning are not explained", () => {
    const review = [
      "npm warn install-scripts 1 package has install scripts not yet covered by allowScripts:",
      "npm warn install-scripts   better-sqlite3@12.11.1 (install: prebuild-install || node-gyp rebuild --release)",
    ];
    expect(unexplainedNpmWarnings([FIRST_INSTALL, ...review].join("\n"), "v20.20.2")).toEqual(review);
    expect(
      unexplainedNpmWarnings("npm warn deprecated glob@7.2.3: Glob versions prior to v9", "v20.20.2"),
    ).toHaveLength(1);
  });
});
