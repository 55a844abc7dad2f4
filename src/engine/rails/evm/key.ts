/**
 * The EVM rail's agent key: a file holding its private key (`0x` and 64 hex digits, one line,
 * mode 0600 — the sandbox's `evm-agent.key` is one), refused when group or others can read it,
 * as the Solana keypair file is. Problems are `wallet_invalid`, naming the file and never
 * its content.
 */
import { readFileSync, statSync } from "node:fs";
import type { Hex } from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { paidError } from "../../errors.js";

const PRIVATE_KEY = /^0x[0-9a-fA-F]{64}$/;

const invalid = (walletPath: string, reason: "missing" | "unreadable" | "malformed" | "permissions", detail: string) =>
  paidError("wallet_invalid", { walletPath, reason, detail });

/** Loads the EVM key file as a viem account; throws `wallet_invalid` on any problem. */
export function loadEvmKey(walletPath: string): PrivateKeyAccount {
  let mode: number;
  try {
    mode = statSync(walletPath).mode;
  } catch {
    throw invalid(walletPath, "missing", `EVM key file ${walletPath} does not exist`);
  }
  if ((mode & 0o077) !== 0)
    throw invalid(
      walletPath,
      "permissions",
      `EVM key file ${walletPath} is readable by group or others (mode ${(mode & 0o777).toString(8)}); run: chmod 600 ${walletPath}`,
    );
  let text: string;
  try {
    text = readFileSync(walletPath, "utf8").trim();
  } catch {
    throw invalid(walletPath, "unreadable", `EVM key file ${walletPath} cannot be read`);
  }
  if (!PRIVATE_KEY.test(text))
    throw invalid(
      walletPath,
      "malformed",
      `EVM key file ${walletPath} does not hold an EVM private key (0x and 64 hex digits, on one line)`,
    );
  try {
    return privateKeyToAccount(text as Hex);
  } catch {
    throw invalid(walletPath, "malformed", `EVM key file ${walletPath} does not hold a valid secp256k1 private key`);
  }
}
