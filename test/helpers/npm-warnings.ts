/**
 * The `npm warn` lines npm prints when it installs or launches this package, told apart: the
 * ones docs/dependencies.md explains ("What npm says when it installs the package") and any
 * other. Explained:
 *  - ERESOLVE "overriding peer dependency" for `@solana/kit@"^5.0"`, the peer that
 *    @x402/svm's own @solana-program/compute-budget, token and token-2022 ask for beside the
 *    @solana/kit 8 this package runs: one line each when npm installs the tree, or a block
 *    naming the package when npm installs over a tree already there;
 *  - under a Node older than 22.12, EBADENGINE for commander@15, which @solana/errors 8 pins.
 */

/** The three packages whose @solana/kit peer npm cannot satisfy. */
const SVM_PEER = /^npm warn peer @solana\/kit@"\^5\.0" from @solana-program\/(compute-budget|token|token-2022)@/;
const ERESOLVE_HEAD = /^npm warn ERESOLVE overriding peer dependency$/;
/** The lines npm prints under an ERESOLVE head when it explains the conflict. */
const ERESOLVE_DETAIL =
  /^npm warn(?:$| (?:While resolving: |Found: |Could not resolve dependency:$|Conflicting peer dependency: |node_modules\/|peer |\s|\d+ more \())/;
const EBADENGINE = /^npm warn EBADENGINE /;

interface Warning {
  kind: "eresolve" | "engine" | "other";
  lines: string[];
}

/** The output's `npm warn` lines, grouped into warnings (a head and the lines that belong to it). */
function warningsOf(output: string): Warning[] {
  const out: Warning[] = [];
  for (const line of output.split("\n").filter((l) => /^npm warn/i.test(l))) {
    const last = out[out.length - 1];
    if (ERESOLVE_HEAD.test(line)) out.push({ kind: "eresolve", lines: [line] });
    else if (last?.kind === "eresolve" && ERESOLVE_DETAIL.test(line)) last.lines.push(line);
    else if (EBADENGINE.test(line) && last?.kind === "engine" && !/Unsupported engine \{$/.test(line))
      last.lines.push(line);
    else out.push({ kind: EBADENGINE.test(line) ? "engine" : "other", lines: [line] });
  }
  return out;
}

/** Whether a Node (`v20.20.2`) is older than 22.12, which commander 15 requires. */
function beforeNode22_12(nodeVersion: string): boolean {
  const [major = 0, minor = 0] = nodeVersion.replace(/^v/, "").split(".").map(Number);
  return major < 22 || (major === 22 && minor < 12);
}

function explained(w: Warning, nodeVersion: string, shortEresolves: number): boolean {
  if (w.kind === "engine") {
    const pkg = w.lines.map((l) => /package: '([^']+)'/.exec(l)?.[1]).find(Boolean);
    return beforeNode22_12(nodeVersion) && /^commander@15\./.test(pkg ?? "");
  }
  if (w.kind !== "eresolve") return false;
  if (w.lines.length === 1) return shortEresolves <= 3; // one per package, the form names none
  const at = w.lines.indexOf("npm warn Could not resolve dependency:");
  return at >= 0 && SVM_PEER.test(w.lines[at + 1] ?? "");
}

/** The `npm warn` lines of an npm run's output that docs/dependencies.md does not explain. */
export function unexplainedNpmWarnings(output: string, nodeVersion: string): string[] {
  const warnings = warningsOf(output);
  const shortEresolves = warnings.filter((w) => w.kind === "eresolve" && w.lines.length === 1).length;
  return warnings.filter((w) => !explained(w, nodeVersion, shortEresolves)).flatMap((w) => w.lines);
}
