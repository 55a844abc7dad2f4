#!/usr/bin/env node
// `npm run bundle`: the Claude Desktop extension (an MCP Bundle, .mcpb) of this checkout.
//
//   node .ci/bundle.mjs [--out DIR] [--rebuild]      (npm run bundle builds dist/ first)
//
// Stages exactly what `npm pack` would publish (dist/, README.md, mcp.json, package.json)
// plus manifest.json, installs the production dependencies at the lock file's versions
// (`npm ci --omit=dev`), and packs the directory with @anthropic-ai/mcpb into
// DIR/paid-actions-mcp-<version>.mcpb (default DIR: .bundle/, git-ignored).
//
// The bundle carries one native module, better-sqlite3, compiled for one platform and one
// Node ABI: this machine's and the Node running this script. The staged manifest says so
// (compatibility.platforms and runtimes.node narrowed to them), so build the bundle on the
// platform, and with the Node major, it will run on. The addon is the checkout's own
// (node_modules/better-sqlite3, same version, built by `npm ci` for this Node) when it loads
// here; otherwise, or with --rebuild, it is compiled in the staging dir.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { values } = parseArgs({ options: { out: { type: "string" }, rebuild: { type: "boolean" } } });
const out = resolve(values.out ?? join(ROOT, ".bundle"));
const stage = join(out, "stage");
const say = (line) => process.stderr.write(`bundle: ${line}\n`);
const fail = (line) => {
  process.stderr.write(`bundle: ${line}\n`);
  process.exit(1);
};
const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));

// npm run sets npm_* variables naming this checkout as the project; the staging dir is its own.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
const sh = (command, args, cwd) =>
  execFileSync(command, args, {
    cwd,
    env,
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
    shell: process.platform === "win32",
  });

const pkg = readJson(join(ROOT, "package.json"));
const manifest = readJson(join(ROOT, "manifest.json"));
if (manifest.version !== pkg.version)
  fail(`manifest.json says version ${manifest.version} and package.json ${pkg.version}: make them one`);
if (!existsSync(join(ROOT, "dist", "cli.js"))) fail("dist/ is not built: run npm run bundle (or npm run build first)");

rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });

// 1. What npm would publish, unpacked.
const packed = JSON.parse(sh("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", out], ROOT));
const tarball = join(out, packed[0].filename);
sh("tar", ["-xzf", tarball, "-C", stage, "--strip-components=1"], ROOT);
rmSync(tarball);

// 2. The manifest, narrowed to what this build can run on; the lock file; what not to pack.
const major = Number(process.versions.node.split(".")[0]);
const nodeRange = major === 20 ? ">=20.18.1 <21" : `>=${major} <${major + 1}`;
const staged = {
  ...manifest,
  compatibility: {
    ...manifest.compatibility,
    platforms: [process.platform],
    runtimes: { ...manifest.compatibility?.runtimes, node: nodeRange },
  },
};
writeFileSync(join(stage, "manifest.json"), `${JSON.stringify(staged, null, 2)}\n`);
copyFileSync(join(ROOT, "package-lock.json"), join(stage, "package-lock.json"));
if (existsSync(join(ROOT, ".mcpbignore"))) copyFileSync(join(ROOT, ".mcpbignore"), join(stage, ".mcpbignore"));

// 3. Production dependencies at the lock file's versions; install scripts only where needed.
say(`installing production dependencies in ${stage}`);
sh("npm", ["ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel", "error"], stage);

// 4. The native SQLite module for this Node.
const stagedSqlite = join(stage, "node_modules", "better-sqlite3");
const ownSqlite = join(ROOT, "node_modules", "better-sqlite3");
const addon = join("build", "Release", "better_sqlite3.node");
const loadsHere = (file) => {
  try {
    createRequire(import.meta.url)(file);
    return true;
  } catch {
    return false;
  }
};
const sameVersion =
  existsSync(join(ownSqlite, "package.json")) &&
  readJson(join(ownSqlite, "package.json")).version === readJson(join(stagedSqlite, "package.json")).version;
if (!values.rebuild && sameVersion && existsSync(join(ownSqlite, addon)) && loadsHere(join(ownSqlite, addon))) {
  mkdirSync(join(stagedSqlite, "build", "Release"), { recursive: true });
  copyFileSync(join(ownSqlite, addon), join(stagedSqlite, addon));
  say(`better-sqlite3: the checkout's addon, built for Node ${process.version} (ABI ${process.versions.modules})`);
} else {
  say("better-sqlite3: compiling for this Node (npm rebuild)");
  sh("npm", ["rebuild", "better-sqlite3", "--foreground-scripts", "--loglevel", "error"], stage);
}
if (!existsSync(join(stagedSqlite, addon))) fail(`better-sqlite3's addon is missing from ${stagedSqlite}`);

// 5. The .mcpb.
const mcpb = join(ROOT, "node_modules", "@anthropic-ai", "mcpb"); // a dev dependency
if (!existsSync(join(mcpb, "package.json")))
  fail("@anthropic-ai/mcpb is not installed: run npm install (it is a dev dependency)");
const mcpbCli = join(mcpb, readJson(join(mcpb, "package.json")).bin);
const file = join(out, `${pkg.name}-${pkg.version}.mcpb`);
rmSync(file, { force: true });
const packLog = sh(process.execPath, [mcpbCli, "pack", stage, file], ROOT);
if (!existsSync(file)) fail(`mcpb pack made no ${file}:\n${packLog}`);
rmSync(stage, { recursive: true, force: true });
say(
  `${file} (${(statSync(file).size / 1e6).toFixed(1)} MB) for ${process.platform}-${process.arch}, Node ${nodeRange}`,
);
process.stdout.write(`${file}\n`);
