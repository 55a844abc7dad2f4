/** `paid-actions-mcp sandbox`: run the reference service until Ctrl-C or SIGTERM. */
import { DEFAULT_PORT, startSandbox } from "../sandbox/index.js";

export interface SandboxCommandOptions {
  home: string;
  port?: number;
  apiKeys?: string[];
  providerDelayMs?: number;
  quoteTtlMs?: number;
  rateLimit?: { perSecond: number; burst: number };
}

export async function sandboxCommand(o: SandboxCommandOptions, version: string): Promise<number> {
  const sandbox = await startSandbox({ ...o, port: o.port ?? DEFAULT_PORT });
  process.stderr.write(
    [
      `paid-actions-mcp sandbox ${version} is running (Ctrl-C to stop)`,
      `  API:         ${sandbox.baseUrl}`,
      `  API key:     ${sandbox.apiKey}${sandbox.apiKeys.length > 1 ? ` (+${sandbox.apiKeys.length - 1} more)` : ""}`,
      `  Solana RPC:  ${sandbox.rpcUrl}`,
      `  Network:     ${sandbox.network} (devnet, emulated)`,
      `  USDC mint:   ${sandbox.asset}`,
      `  Wallet:      ${sandbox.walletPath}`,
      `  State:       ${sandbox.home} (sandbox.json has the above)`,
      "",
    ].join("\n"),
  );
  await new Promise<void>((done) => {
    const stop = (signal: string) => {
      process.stderr.write(`\n${signal}: stopping the sandbox…\n`);
      void sandbox.close().then(done);
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
  });
  process.stderr.write("sandbox stopped; state is saved\n");
  return 0;
}
