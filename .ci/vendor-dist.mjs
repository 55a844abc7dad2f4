// After `tsc` and prune-dist: puts the Solana, EVM (viem, @x402/evm) and x402 code the server runs inside dist/, so the
// published package does not depend on the packages it comes from.
//
// Why: installing those packages makes npm warn, and nothing we control can stop it (see
// docs/dependencies.md, "What is inside dist/vendor"): @x402/svm's own dependencies ask for
// @solana/kit 5 as a peer while the server runs kit 8 (ERESOLVE), and every @solana/errors
// that kit 8 installs pins commander 15, which refuses Node 20 (EBADENGINE). Bundled, they
// are code of this package: npm installs none of them, and says nothing.
//
// What it does:
//  1. finds every import of a vendored package (VENDORED) in the compiled dist/ files;
//  2. bundles them with esbuild into dist/vendor/: one module per imported specifier
//     (`@solana/kit` → dist/vendor/solana-kit.js), code they share in chunks, so every module
//     of a package exists once, as it does in node_modules;
//  3. points those imports at dist/vendor/;
//  4. writes dist/vendor/THIRD-PARTY-LICENSES.md: the name, version, licence and licence text
//     of every package whose code is inside.
// What stays outside, installed by npm: the package's runtime `dependencies` (better-sqlite3,
// @x402/core, …), Node's own modules, and LiteSVM's native binary, one npm package per
// platform, which package.json's optionalDependencies list at the versions litesvm names (this
// script fails the build when they drift apart).
import { build } from "esbuild";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DIST = join(ROOT, "dist");
const VENDOR = join(DIST, "vendor");
/** The packages whose code ships inside dist/vendor (with whatever they import but `dependencies`). */
const VENDORED = ["@solana/kit", "@solana-program/token", "@x402/svm", "litesvm", "@x402/evm", "viem"];
const LICENSES = "THIRD-PARTY-LICENSES.md";
/** LiteSVM's native binary: one package per platform, installed by npm (optionalDependencies). */
const NATIVE = /^litesvm-/;

const fail = (line) => {
  process.stderr.write(`vendor-dist: ${line}\n`);
  process.exit(1);
};
const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));
const pkg = readJson(join(ROOT, "package.json"));

const packageOf = (specifier) =>
  specifier
    .split("/")
    .slice(0, specifier.startsWith("@") ? 2 : 1)
    .join("/");
const vendored = (specifier) => VENDORED.includes(packageOf(specifier));
const moduleName = (specifier) => specifier.replace(/^@/, "").replaceAll("/", "-");

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
  );
}

/** `from "x"`, `import "x"`, `import("x")`: the specifier is the quoted string. */
const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)"([^"]+)"/g;
/** `import { a, b as c } from "x"`: the names a module takes from x. */
const NAMED = /\bimport\s*\{([^}]*)\}\s*from\s*"([^"]+)"/g;

function checkNatives() {
  const litesvm = readJson(join(ROOT, "node_modules", "litesvm", "package.json"));
  const want = litesvm.optionalDependencies ?? {};
  const have = pkg.optionalDependencies ?? {};
  const natives = (o) => Object.keys(o).filter((n) => NATIVE.test(n));
  const drift = [...new Set([...natives(want), ...natives(have)])].filter((n) => want[n] !== have[n]);
  if (drift.length > 0)
    fail(
      `package.json's optionalDependencies must name litesvm ${litesvm.version}'s native packages at its versions; ` +
        `differs: ${drift.map((n) => `${n} (litesvm: ${want[n] ?? "none"}, package.json: ${have[n] ?? "none"})`).join(", ")}`,
    );
}

/** The compiled files (not dist/vendor) and what each imports from the vendored packages. */
function scan() {
  const files = walk(DIST).filter((f) => f.endsWith(".js") && !f.startsWith(VENDOR + sep));
  const names = new Map(); // specifier → the names imported by name ("*" when a namespace is)
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    for (const [, , specifier] of text.matchAll(SPECIFIER)) {
      if (!vendored(specifier)) continue;
      if (!names.has(specifier)) names.set(specifier, new Set());
    }
    for (const [, list, specifier] of text.matchAll(NAMED)) {
      if (!vendored(specifier)) continue;
      for (const part of list.split(",")) {
        const name = part.trim().split(/\s+as\s+/)[0];
        if (name) names.get(specifier).add(name);
      }
    }
  }
  return { files, names };
}

async function bundle(names) {
  const entries = mkdtempSync(join(tmpdir(), "vendor-dist-"));
  const stage = join(DIST, `.vendor-${process.pid}`);
  try {
    const entryPoints = {};
    for (const [specifier, used] of names) {
      // `export *` carries an ES module's names; a CommonJS one's (litesvm) only by name.
      const named = used.size > 0 ? `export { ${[...used].join(", ")} } from "${specifier}";\n` : "";
      const file = join(entries, `${moduleName(specifier)}.mjs`);
      writeFileSync(file, `export * from "${specifier}";\n${named}`);
      entryPoints[moduleName(specifier)] = file;
    }
    const runtime = Object.keys(pkg.dependencies ?? {});
    const result = await build({
      entryPoints,
      absWorkingDir: ROOT,
      nodePaths: [join(ROOT, "node_modules")],
      bundle: true,
      splitting: true,
      format: "esm",
      platform: "node",
      target: "node20",
      outdir: stage,
      chunkNames: "chunk-[hash]",
      external: [...runtime.flatMap((d) => [d, `${d}/*`]), "litesvm-*"],
      // CommonJS code inside (litesvm) calls require: for Node's modules and the native binary.
      banner: {
        js: 'import { createRequire as __vendorRequire } from "node:module";\nconst require = __vendorRequire(import.meta.url);',
      },
      legalComments: "eof",
      metafile: true,
      logLevel: "error",
    });
    // File by file, each renamed into place: a server started from dist/ meanwhile (tests run
    // the built CLI while another process rebuilds) never finds a module missing.
    mkdirSync(VENDOR, { recursive: true });
    const built = readdirSync(stage);
    for (const name of built) renameSync(join(stage, name), join(VENDOR, name));
    for (const name of readdirSync(VENDOR)) if (!built.includes(name) && name !== LICENSES) rmSync(join(VENDOR, name));
    return result.metafile;
  } finally {
    rmSync(entries, { recursive: true, force: true });
    rmSync(stage, { recursive: true, force: true });
  }
}

function repoint(files, names) {
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    const next = text.replace(SPECIFIER, (whole, head, specifier) => {
      if (!names.has(specifier)) return whole;
      const target = relative(dirname(file), join(VENDOR, `${moduleName(specifier)}.js`))
        .split(sep)
        .join("/");
      return `${head}"${target.startsWith(".") ? target : `./${target}`}"`;
    });
    if (next !== text) writeFileSync(file, next);
  }
}

/** The package that holds a bundled input file: its nearest package.json with a name. */
function owner(input) {
  let dir = dirname(join(ROOT, input));
  // (Inside node_modules, wherever it is: esbuild names a symlinked node_modules by its target.)
  while (dir.includes(`${sep}node_modules${sep}`)) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const p = readJson(file);
      if (p.name && p.version)
        return { dir, name: p.name, version: p.version, license: p.license, repository: p.repository };
    }
    dir = dirname(dir);
  }
  return undefined;
}

/** A licence's text for a package that ships none, where the licence has one text (Apache-2.0). */
const STANDARD_TEXTS = { "Apache-2.0": join(ROOT, ".ci", "licenses", "Apache-2.0.txt") };

function section(p, standard) {
  const file = readdirSync(p.dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
  const repository = typeof p.repository === "string" ? p.repository : p.repository?.url;
  let text;
  if (file) text = "```\n" + readFileSync(join(p.dir, file), "utf8").trim() + "\n```";
  else if (STANDARD_TEXTS[p.license]) {
    standard.add(p.license);
    text = `The package ships no licence file; its package.json declares ${p.license}, whose text is at the end of this file.`;
  } else text = `The package ships no licence file; its package.json declares ${p.license ?? "no licence"}.`;
  const where = repository ? ` Source: ${repository.replace(/^git\+/, "")}.` : "";
  return `## ${p.name} ${p.version} (${p.license ?? "licence not declared"})\n\n${text}${where}\n`;
}

function licenses(metafile) {
  const packages = new Map();
  for (const input of Object.keys(metafile.inputs)) {
    const p = owner(input.split("?")[0]);
    if (p) packages.set(`${p.name}@${p.version}`, p);
  }
  const standard = new Set();
  const sections = [...packages.values()]
    .sort((a, b) => `${a.name}@${a.version}`.localeCompare(`${b.name}@${b.version}`))
    .map((p) => section(p, standard));
  const texts = [...standard].map(
    (l) => `## The ${l} licence\n\n\`\`\`\n${readFileSync(STANDARD_TEXTS[l], "utf8").trim()}\n\`\`\`\n`,
  );
  const partial = join(VENDOR, `.${LICENSES}.${process.pid}`);
  writeFileSync(
    partial,
    `# Code inside dist/vendor\n\nBuilt by .ci/vendor-dist.mjs from these ${packages.size} packages, under their licences:\n\n${[...sections, ...texts].join("\n")}`,
  );
  renameSync(partial, join(VENDOR, LICENSES));
  return packages.size;
}

checkNatives();
const { files, names } = scan();
if (names.size === 0) {
  // Run again without tsc in between: the imports already point at dist/vendor.
  if (existsSync(join(VENDOR, LICENSES))) process.exit(0);
  fail("no compiled module imports a vendored package: is dist/ built?");
}
const metafile = await bundle(names);
repoint(files, names);
const count = licenses(metafile);
if (count === 0) fail("found no package behind the bundled code: THIRD-PARTY-LICENSES.md would name none");
process.stderr.write(`vendor-dist: ${names.size} modules from ${count} packages in dist/vendor\n`);
