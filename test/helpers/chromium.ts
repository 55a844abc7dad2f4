/**
 * Which Chromium the browser tests drive. playwright-core downloads no browser, so it is
 * handed one: the system's (Debian's /usr/bin/chromium, which .ci/run installs, or another
 * Chromium or Chrome in /usr/bin; on macOS Google Chrome through playwright's "chrome"
 * channel) when present, else the headless Chromium the devDependency @sparticuz/chromium
 * ships for Linux x64 and arm64, so that `npm install && npm test` needs no browser on the
 * machine. PAM_TEST_BROWSER=npm forces npm's (to test that path where the system has one),
 * =system refuses npm's.
 *
 * npm's Chromium comes brotli-compressed with the few shared libraries it needs (NSS, NSPR,
 * expat, as built for Amazon Linux 2023), SwiftShader and a font. The package's own
 * executablePath() is not used: it inflates into fixed /tmp paths (shared by every user and
 * version, and read by a second test process while the first is still writing them), adds
 * the libraries only on AWS, and its fonts.conf names /tmp/fonts. Here they are inflated once
 * into node_modules/.cache/paid-actions-mcp/, built in a scratch folder and renamed into
 * place, so a parallel test process sees all of it or nothing.
 */
import {
  accessSync,
  constants,
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { Writable } from "node:stream";
import { createBrotliDecompress } from "node:zlib";
import type { LaunchOptions } from "playwright-core";
import { PROJECT_ROOT } from "./process.js";

export type BrowserSource = "auto" | "system" | "npm";

export interface FoundBrowser {
  source: "system" | "npm";
  /** What to show a person: a path, or the channel's name. */
  name: string;
  /** What chromium.launch() needs besides the project's own flags. */
  launchOptions(): Promise<Pick<LaunchOptions, "executablePath" | "channel" | "env">>;
}

/** The system's Chromium or Chrome, in the order they are looked for. */
const SYSTEM_BROWSERS = [
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome",
  "/usr/bin/google-chrome-stable",
];
/** Where playwright's "chrome" channel finds Google Chrome on macOS. */
const MAC_CHROME = "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome";
const NPM_PACKAGE = "@sparticuz/chromium";

const HOW_TO_GET_ONE =
  "install Chromium or Google Chrome (Debian: apt-get install chromium; .ci/run does this in CI), " +
  `or on Linux x64/arm64 run \`npm install\` for the devDependency ${NPM_PACKAGE}`;

/** PAM_TEST_BROWSER: "system", "npm", or unset ("auto": the system's when present, else npm's). */
export function browserSourceFromEnv(): BrowserSource {
  const v = process.env.PAM_TEST_BROWSER;
  if (v === undefined || v === "" || v === "auto") return "auto";
  if (v === "system" || v === "npm") return v;
  throw new Error(
    `PAM_TEST_BROWSER=${v}: expected "system", "npm" or nothing (the system's browser when present, else npm's)`,
  );
}

/** Whether a program is there to run (a path that exists but cannot run is no browser). */
function runnable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function systemBrowser(): FoundBrowser | undefined {
  const path = SYSTEM_BROWSERS.find(runnable);
  if (path) return { source: "system", name: path, launchOptions: async () => ({ executablePath: path }) };
  if (process.platform === "darwin" && runnable(MAC_CHROME)) {
    return {
      source: "system",
      name: "Google Chrome (channel chrome)",
      launchOptions: async () => ({ channel: "chrome" }),
    };
  }
  return undefined;
}

/** @sparticuz/chromium's folder (holding bin/), or why it cannot be used here. */
function npmPackageDir(): { dir: string; version: string } | { why: string } {
  if (process.platform !== "linux" || (process.arch !== "x64" && process.arch !== "arm64")) {
    return { why: `${NPM_PACKAGE} has no Chromium for ${process.platform}-${process.arch}` };
  }
  let entry: string;
  try {
    entry = createRequire(import.meta.url).resolve(NPM_PACKAGE);
  } catch {
    return { why: `${NPM_PACKAGE} is not installed` };
  }
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (!existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, "utf8")) as { name?: string; version?: string };
    if (pkg.name === NPM_PACKAGE) return { dir, version: pkg.version ?? "unknown" };
  }
  return { why: `${NPM_PACKAGE}'s folder was not found from ${entry}` };
}

/**
 * The browser the tests will drive, found without starting or unpacking anything; throws,
 * saying how to get one, when there is none (the tests fail rather than skip).
 */
export function findChromium(want: BrowserSource = browserSourceFromEnv()): FoundBrowser {
  if (want !== "npm") {
    const sys = systemBrowser();
    if (sys) return sys;
    if (want === "system") {
      throw new Error(
        `PAM_TEST_BROWSER=system, and there is no Chromium or Chrome at ${SYSTEM_BROWSERS.join(", ")}: ${HOW_TO_GET_ONE}`,
      );
    }
  }
  const pkg = npmPackageDir();
  if ("why" in pkg) {
    const none =
      want === "npm"
        ? `PAM_TEST_BROWSER=npm, and ${pkg.why}`
        : `the browser tests found no Chromium or Chrome (${SYSTEM_BROWSERS.join(", ")}), and ${pkg.why}`;
    throw new Error(`${none}: ${HOW_TO_GET_ONE}`);
  }
  const cache = join(
    PROJECT_ROOT,
    "node_modules",
    ".cache",
    "paid-actions-mcp",
    `chromium-${pkg.version}-${process.arch}`,
  );
  return {
    source: "npm",
    name: join(cache, "chromium"),
    async launchOptions() {
      await inflateOnce(join(pkg.dir, "bin"), cache);
      return {
        executablePath: join(cache, "chromium"),
        env: {
          ...process.env,
          // Its own NSS, NSPR and expat first: the machine may have none, or other versions.
          LD_LIBRARY_PATH: [join(cache, "lib"), process.env.LD_LIBRARY_PATH].filter(Boolean).join(":"),
          FONTCONFIG_PATH: cache,
        },
      };
    },
  };
}

/** One inflation per process; two processes at once each inflate a scratch copy, and the later one keeps the earlier one's. */
const inflating = new Map<string, Promise<void>>();
function inflateOnce(bin: string, cache: string): Promise<void> {
  let p = inflating.get(cache);
  if (!p) {
    p = inflate(bin, cache);
    inflating.set(cache, p);
    p.catch(() => inflating.delete(cache));
  }
  return p;
}

async function inflate(bin: string, cache: string): Promise<void> {
  if (existsSync(join(cache, "chromium"))) return;
  mkdirSync(dirname(cache), { recursive: true });
  sweepStaleScratch(dirname(cache));
  const scratch = `${cache}.part-${process.pid}-${Date.now()}`;
  mkdirSync(scratch, { recursive: true });
  try {
    // The package's own tar extractor (its dependency, resolved from its folder).
    const tar = createRequire(join(bin, "..", "package.json"))("tar-fs") as { extract(dir: string): Writable };
    const unbrotli = (name: string, to: Writable) =>
      pipeline(createReadStream(join(bin, name)), createBrotliDecompress(), to);
    await unbrotli("chromium.br", createWriteStream(join(scratch, "chromium"), { mode: 0o755 }));
    // Beside the binary, as Chromium looks for them: libEGL, libGLESv2, SwiftShader's Vulkan.
    await unbrotli("swiftshader.tar.br", tar.extract(scratch));
    await unbrotli("al2023.tar.br", tar.extract(scratch)); // lib/: NSS, NSPR, expat
    await unbrotli("fonts.tar.br", tar.extract(scratch)); // fonts/: Open Sans
    // Its fonts plus the system's, if any; fontconfig's cache stays inside the folder.
    writeFileSync(
      join(scratch, "fonts.conf"),
      `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n` +
        `  <dir>${join(cache, "fonts")}</dir>\n  <dir>/usr/share/fonts</dir>\n` +
        `  <cachedir>${join(cache, "fontconfig-cache")}</cachedir>\n</fontconfig>\n`,
    );
    try {
      renameSync(scratch, cache);
    } catch (e) {
      // Another test process put its copy in place first: that one is as good.
      if (!existsSync(join(cache, "chromium"))) throw e;
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** A scratch copy left by a process killed while inflating (about 200 MB): gone after 10 minutes. */
function sweepStaleScratch(dir: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (/\.part-\d+-\d+$/.test(name) && Date.now() - statSync(path).mtimeMs > 10 * 60_000)
      rmSync(path, { recursive: true, force: true });
  }
}
