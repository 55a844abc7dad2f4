/**
 * The EVM ledger's contracts (src/sandbox/evm/contracts/*.sol) compile, with solc 0.6.12 and the
 * settings recorded beside the bytecode, to exactly the runtime bytecode and ABI that
 * src/sandbox/evm/contracts/artifacts.ts ships. `PAM_WRITE_EVM_ARTIFACTS=1` rewrites that file
 * from the sources instead (after a change to a .sol file), then the test compares again.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { formatAbi, type Abi } from "abitype";
import { describe, expect, it } from "vitest";
import { CONTRACTS, SOLC_SETTINGS, SOLC_VERSION } from "../../src/sandbox/evm/contracts/artifacts.js";

const DIR = join(import.meta.dirname, "../../src/sandbox/evm/contracts");
const SOURCES = { SandboxUSDC: "SandboxUSDC.sol", SandboxMulticall: "SandboxMulticall.sol" } as const;

interface SolcOutput {
  errors?: Array<{ severity: string; formattedMessage: string }>;
  contracts: Record<string, Record<string, { abi: Abi; evm: { deployedBytecode: { object: string } } }>>;
}

function compile(): Record<keyof typeof SOURCES, { abi: readonly string[]; runtime: string }> {
  const solc = createRequire(import.meta.url)("solc") as { version(): string; compile(input: string): string };
  const sources = Object.fromEntries(
    Object.values(SOURCES).map((file) => [file, { content: readFileSync(join(DIR, file), "utf8") }]),
  );
  const input = {
    language: "Solidity",
    sources,
    settings: { ...SOLC_SETTINGS, outputSelection: { "*": { "*": ["abi", "evm.deployedBytecode.object"] } } },
  };
  expect(solc.version()).toContain(SOLC_VERSION);
  const out = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const errors = (out.errors ?? []).filter((e) => e.severity === "error");
  expect(errors.map((e) => e.formattedMessage)).toEqual([]);
  const result = {} as Record<keyof typeof SOURCES, { abi: readonly string[]; runtime: string }>;
  for (const [name, file] of Object.entries(SOURCES) as Array<[keyof typeof SOURCES, string]>) {
    const c = out.contracts[file]![name]!;
    result[name] = { abi: formatAbi(c.abi), runtime: `0x${c.evm.deployedBytecode.object}` };
  }
  return result;
}

function writeArtifacts(compiled: ReturnType<typeof compile>): void {
  const path = join(DIR, "artifacts.ts");
  const text = readFileSync(path, "utf8");
  const start = text.indexOf("export const CONTRACTS");
  const body = Object.entries(compiled)
    .map(([name, c]) => `  ${name}: {\n    abi: ${JSON.stringify(c.abi)},\n    runtime: "${c.runtime}",\n  },`)
    .join("\n");
  writeFileSync(path, `${text.slice(0, start)}export const CONTRACTS = {\n${body}\n} as const;\n`);
}

describe("the EVM ledger's contracts", () => {
  it("compile from their sources to the runtime bytecode and ABI the sandbox installs", () => {
    const compiled = compile();
    if (process.env.PAM_WRITE_EVM_ARTIFACTS === "1") writeArtifacts(compiled);
    for (const name of Object.keys(SOURCES) as Array<keyof typeof SOURCES>) {
      expect(CONTRACTS[name].runtime, `${name} runtime bytecode`).toBe(compiled[name].runtime);
      expect([...CONTRACTS[name].abi], `${name} ABI`).toEqual([...compiled[name].abi]);
    }
  }, 180_000);
});
