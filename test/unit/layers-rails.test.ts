/**
 * The rails' layers (docs/architecture.md): in the engine and the MCP surface, only a rail's
 * own folder (src/engine/rails/<rail>/) imports a chain library — Solana's (`@solana/*`,
 * `@solana-program/*`, `@x402/svm`, `litesvm`) or EVM's (`@x402/evm`, `viem`) — or takes a
 * value from a domain/ module that loads one; a rail's folder imports no other rail's; and
 * outside rails/ only the engine's front door names a rail's own modules: the steps, the
 * reconciler, the audit and the read model reach the chain through the rail port. Each rule
 * is shown to fail when broken, on samples, then held over the whole tree.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";
import { sourcesUnder, specifiers, SRC, targets, valueSpecifiers } from "./imports.fixtures.js";

/** A chain library: Solana's (kit, its programs, x402's SVM scheme, LiteSVM) or EVM's (x402's EVM scheme, viem). */
const CHAIN_LIBRARY = /^(?:@solana\/|@solana-program\/|(?:@x402\/(?:svm|evm)|viem|litesvm)(?:\/|$))/;

/** The rail whose folder holds a src-relative file (`engine/rails/<rail>/…`), if one does. */
const railOf = (file: string) => /^engine\/rails\/([^/]+)\//.exec(file)?.[1];

/** A relative specifier of `file` (src-relative) as the src-relative .ts it names. */
const resolved = (file: string, specifier: string) =>
  relative(SRC, resolve(dirname(join(SRC, file)), specifier))
    .split(sep)
    .join("/")
    .replace(/\.js$/, ".ts");

/**
 * What breaks the rails' rules in a set of modules (src-relative path -> text): in the
 * engine and the MCP surface, a chain library imported (any kind of import) by a file
 * outside a rail's own folder, or a value taken from a domain/ module that loads one
 * (`chainDomain`); a rail's folder importing another rail's; and outside rails/, a file
 * other than the engine's front door importing from inside a rail's folder (the engine
 * reaches a rail through the port: rails/port.ts, rails/load.ts).
 */
function railViolations(files: ReadonlyMap<string, string>, chainDomain: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const [file, text] of files) {
    if (!file.startsWith("engine/") && !file.startsWith("mcp/")) continue;
    const rail = railOf(file);
    for (const { specifier, line } of specifiers(text)) {
      const at = `src/${file}:${line}`;
      if (CHAIN_LIBRARY.test(specifier)) {
        if (rail === undefined) out.push(`${at} imports the chain library ${specifier} outside a rail's folder`);
        continue;
      }
      if (!specifier.startsWith(".")) continue;
      const target = resolved(file, specifier);
      const targetRail = railOf(target);
      if (targetRail === undefined) continue;
      if (rail !== undefined && rail !== targetRail)
        out.push(`${at} imports ${specifier}: the ${rail} rail reaches into the ${targetRail} rail`);
      else if (rail === undefined && file !== "engine/index.ts" && !file.startsWith("engine/rails/"))
        out.push(`${at} imports ${specifier}: past the rail port into the ${targetRail} rail`);
    }
    if (rail !== undefined) continue;
    for (const specifier of valueSpecifiers(text).filter((sp) => sp.startsWith("."))) {
      const target = resolved(file, specifier);
      if (chainDomain.has(target))
        out.push(`src/${file} takes values from src/${target}, which loads a chain library, outside a rail's folder`);
    }
  }
  return out;
}

/** The domain/ modules that load a chain library, directly or through another of them. */
function chainDomainModules(): Set<string> {
  const domain = sourcesUnder("domain");
  const texts = new Map(domain.map((f) => [f, readFileSync(join(SRC, f), "utf8")]));
  const found = new Set(domain.filter((f) => valueSpecifiers(texts.get(f)!).some((sp) => CHAIN_LIBRARY.test(sp))));
  for (let grew = true; grew;) {
    grew = false;
    for (const f of domain)
      if (!found.has(f) && targets(f, "values").some((t) => found.has(t))) grew = found.add(f) !== undefined;
  }
  return found;
}

describe("the rails", () => {
  const all = (readdirSync(SRC, { recursive: true }) as string[])
    .filter((f) => f.endsWith(".ts"))
    .map((f) => f.split(sep).join("/"));
  const tree = new Map(all.map((f) => [f, readFileSync(join(SRC, f), "utf8")]));

  it("only a rail's own folder imports a chain library, no rail reaches into another, the engine reaches a rail through its port", () => {
    const chainDomain = chainDomainModules();
    expect([...chainDomain].sort()).toEqual(["domain/keypair.ts", "domain/token.ts"]);
    const wrong = railViolations(tree, chainDomain);
    expect(wrong, `the rails' rules broken:\n  ${wrong.join("\n  ")}\n`).toEqual([]);
    // Not vacuous: each rail's own files are where its chain libraries are loaded, and only there.
    const importers = all.filter(
      (f) => f.startsWith("engine/") && specifiers(tree.get(f)!).some((x) => CHAIN_LIBRARY.test(x.specifier)),
    );
    expect(importers).toContain("engine/rails/solana/payer.ts");
    expect(importers).toContain("engine/rails/evm/sign.ts");
    expect(importers.every((f) => f.startsWith("engine/rails/solana/") || f.startsWith("engine/rails/evm/"))).toBe(
      true,
    );
    // Each rail loads its own chain's libraries: Solana's never EVM's, EVM's never Solana's.
    const loads = (rail: string, lib: RegExp) =>
      all.filter(
        (f) => f.startsWith(`engine/rails/${rail}/`) && specifiers(tree.get(f)!).some((x) => lib.test(x.specifier)),
      );
    expect(loads("solana", /^(?:@x402\/evm|viem)(?:\/|$)/)).toEqual([]);
    expect(loads("evm", /^(?:@solana\/|@solana-program\/|@x402\/svm|litesvm)/)).toEqual([]);
  });

  it("fails on each of them put back", () => {
    const chainDomain = new Set(["domain/token.ts"]);
    const cases: Array<[string, string, RegExp]> = [
      ["engine/chain/settlement.ts", 'import { address } from "@solana/kit";', /chain library @solana\/kit outside/],
      [
        "engine/intent/steps/sign.ts",
        'const k = await import("@solana-program/token");',
        /@solana-program\/token outside/,
      ],
      ["mcp/tools/x.ts", 'import type { Hex } from "viem";', /chain library viem outside/],
      [
        "engine/audit/x.ts",
        'import { ExactEvmScheme } from "@x402/evm/exact/client";',
        /@x402\/evm\/exact\/client outside/,
      ],
      ["engine/rails/port.ts", 'import type { Rpc } from "@solana/kit";', /outside a rail's folder/],
      [
        "engine/rails/evm/rail.ts",
        'import { proofFate } from "../solana/chain.js";',
        /the evm rail reaches into the solana rail/,
      ],
      [
        "engine/chain/released-watch.ts",
        'import { watchRuling } from "../rails/solana/rules.js";',
        /past the rail port/,
      ],
      [
        "engine/chain/settlement.ts",
        'const { associatedTokenAddress } = await import("../../domain/token.js");',
        /loads a chain library/,
      ],
    ];
    for (const [file, text, problem] of cases)
      expect(railViolations(new Map([[file, text]]), chainDomain).join("\n"), file).toMatch(problem);
    const fine: Array<[string, string]> = [
      ["engine/rails/solana/rpc.ts", 'import { address } from "@solana/kit";'],
      ["engine/rails/evm/rail.ts", 'import { createPublicClient } from "viem";'],
      ["engine/index.ts", 'import type { Payer } from "./rails/solana/payer.js";'],
      ["engine/rails/load.ts", 'await import("./solana/rail.js");'],
      ["engine/error-contexts.ts", 'import type { KeypairFileError } from "../domain/keypair.js";'],
      ["engine/x.ts", 'import type { Rail } from "./rails/port.js";'],
      ["sandbox/ledger/x.ts", 'import { LiteSVM } from "litesvm";'],
    ];
    for (const [file, text] of fine) expect(railViolations(new Map([[file, text]]), chainDomain), file).toEqual([]);
  });
});
