/**
 * Action names and patterns: whether a pattern allows an action, and the "did you mean"
 * hints for a limit that names no action of the service's catalog (a misspelt key caps
 * nothing). Pure.
 */
import type { ConfigIssue } from "./config.js";

/** `*` matches any run of characters; everything else is literal. */
export function actionAllowed(patterns: readonly string[], action: string): boolean {
  return patterns.some((p) =>
    new RegExp(
      `^${p
        .split("*")
        .map((s) => s.replace(/[.+?^${}()|[\]\\-]/g, "\\$&"))
        .join(".*")}$`,
    ).test(action),
  );
}

/** Edit distance (insertions, deletions, substitutions), for "did you mean" hints. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/** The closest candidate within a distance that suggests a typo (case aside), first in order on a tie. */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  const near = Math.min(3, Math.max(1, Math.floor(word.length / 4)));
  let best: string | undefined;
  let bestDistance = near + 1;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** For a pattern matching nothing: the same pattern with each literal segment replaced by its nearest catalog segment. */
function closestPattern(pattern: string, names: readonly string[]): string | undefined {
  const segments = pattern.split(".");
  const suggestion = segments
    .map((seg, i) => {
      if (seg.includes("*")) return seg;
      const atPosition = new Set(names.map((n) => n.split(".")[i]).filter((s): s is string => s !== undefined));
      return atPosition.has(seg) ? seg : (closest(seg, atPosition) ?? seg);
    })
    .join(".");
  return suggestion !== pattern && names.some((n) => actionAllowed([suggestion], n)) ? suggestion : undefined;
}

/**
 * The `limits.perAction` keys that name no action of the service's catalog: an exact name
 * the catalog lacks (a misspelling caps nothing), or a pattern matching none. Each issue
 * suggests the nearest catalog name (or pattern) when one is close. Pure; the engine calls
 * it once it knows the catalog. Keys read `<configFile>:limits.perAction.<key>`, or
 * `limits.perAction.<key>` without a file.
 */
export function unknownPerActionKeys(
  perAction: Record<string, bigint> | string[],
  catalogActionNames: readonly string[],
  configFile?: string,
): ConfigIssue[] {
  const keys = Array.isArray(perAction) ? perAction : Object.keys(perAction);
  const catalog = new Set(catalogActionNames);
  const issues: ConfigIssue[] = [];
  for (const k of keys) {
    const key = `${configFile ? `${configFile}:` : ""}limits.perAction.${k}`;
    if (k.includes("*")) {
      if (catalogActionNames.some((n) => actionAllowed([k], n))) continue;
      const hint = closestPattern(k, catalogActionNames);
      issues.push({
        key,
        message: `matches no action of the service's catalog, so it caps nothing${hint ? `; did you mean ${hint}?` : ""}`,
      });
    } else if (!catalog.has(k)) {
      const hint = closest(k, catalogActionNames);
      issues.push({
        key,
        message: `names no action of the service's catalog, so it caps nothing${hint ? `; did you mean ${hint}?` : ""}`,
      });
    }
  }
  return issues;
}
