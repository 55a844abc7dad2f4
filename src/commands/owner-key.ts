/**
 * Where the owner's keypair is, as far as this product knows, and whether the user it runs as
 * can read it. In delegate mode the chain caps what the agent key spends at the allowance the
 * owner granted; whoever can read the owner's key can grant any allowance, so an agent with a
 * shell as this user could raise its own ceiling and pay without an approval. The product
 * learns of an owner's keypair file in three places only: the embedded sandbox's demo wallet
 * (`<home>/sandbox/wallet.json`, named by sandbox.json, when it is the configured owner), an
 * agent key that is the owner's own key, and `allowance grant|revoke --owner-keypair PATH`.
 * A key elsewhere (a wallet, a file of another user) it cannot see, and says nothing of.
 */
import { accessSync, constants } from "node:fs";
import { userInfo } from "node:os";
import { resolve } from "node:path";

/** An owner's keypair file the configuration names, and how it came to be known. */
export interface OwnerKeyFile {
  path: string;
  /** How the product knows it, as a person reads it. */
  source: "sandbox" | "agent-key" | "option";
}

/** What the product knows of a setup: the owner, the embedded sandbox's demo wallet, the agent key, an --owner-keypair. */
export interface OwnerKeySetup {
  /** The configured owner (delegate mode); absent: the agent key pays from its own account. */
  owner?: string;
  sandbox?: { owner?: string; walletPath: string };
  agentKey?: { path: string; address: string };
  ownerKeypair?: string;
}

/** The owner's keypair files this setup names (pure: no file is read). */
export function ownerKeyFiles(s: OwnerKeySetup): OwnerKeyFile[] {
  if (!s.owner) return [];
  const files: OwnerKeyFile[] = [];
  if (s.sandbox?.owner === s.owner) files.push({ path: s.sandbox.walletPath, source: "sandbox" });
  if (s.agentKey?.address === s.owner) files.push({ path: s.agentKey.path, source: "agent-key" });
  if (s.ownerKeypair !== undefined && !files.some((f) => resolve(f.path) === resolve(s.ownerKeypair!)))
    files.push({ path: s.ownerKeypair, source: "option" });
  return files;
}

/** Whether the user this process runs as can read the file (its mode, its folders, ACLs, root). */
export function readableHere(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

function thisUser(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? "?"}`;
  }
}

const WHAT: Record<OwnerKeyFile["source"], string> = {
  sandbox: "the embedded sandbox's demo wallet, kept in the home",
  "agent-key": "the agent key itself: the server pays with the owner's own key",
  option: "given with --owner-keypair",
};

/**
 * The warnings for the owner's keypair files this user can read, one per file (none when the
 * setup names no file, or this user cannot read it).
 */
export function ownerKeyWarnings(s: OwnerKeySetup, readable: (path: string) => boolean = readableHere): string[] {
  return ownerKeyFiles(s)
    .filter((f) => readable(f.path))
    .map(
      (f) =>
        `the owner's keypair (${s.owner}) is ${f.path} (${WHAT[f.source]}), readable by this user (${thisUser()}): ` +
        "an agent with a shell as this user can grant itself any allowance with it and pay without an approval. " +
        "Keep the owner's key where the server's user cannot read it (a wallet: `allowance grant --unsigned`, then `allowance submit`)",
    );
}
