/**
 * `paid-actions-mcp passkey`: the passkeys approvals need once one is registered.
 *
 *   passkey add [--label NAME] [--owner-keypair PATH | --unsigned]   at a terminal, in the console
 *   passkey list [--json]
 *   passkey remove CREDENTIAL_ID                                     at a terminal, with a passkey
 *   passkey submit CREDENTIAL_ID SIGNATURE                           the owner wallet's signature
 *
 * `add` and `remove` start a console of their own that offers their ceremony on its passkey
 * page (no other console registers or removes a passkey), print its one-time link on the
 * console's localhost name (WebAuthn takes no IP address), and wait for the person. The owner
 * binding is the allowance's pattern: signed here with the owner's keypair file, or printed
 * for the owner's wallet to sign and handed back with `submit`.
 */
import { randomBytes } from "node:crypto";
import { openJournal } from "../app/index.js";
import type { PasskeyCeremony, PasskeyDesk } from "../console/deps.js";
import { assertionOf } from "../console/passkeys-api.js";
import { ApiError } from "../console/respond.js";
import { startConsole } from "../console/server.js";
import { readKeypairFile } from "../domain/keypair.js";
import {
  addressOfKeypair,
  bindOwner,
  newChallenge,
  passkeyStatement,
  registeredPasskeys,
  registerPasskey,
  removalChallenge,
  removePasskey,
  RP_ID,
  signStatement,
  type PasskeyRecord,
} from "../engine/index.js";
import { consoleDeps, openBrowser } from "./console.js";
import { interactive, NO_TTY } from "./tty.js";

export type PasskeyAction =
  | { kind: "add"; label?: string; ownerKeypair?: string; unsigned?: boolean }
  | { kind: "list"; json?: boolean }
  | { kind: "remove"; credentialId: string }
  | { kind: "submit"; credentialId: string; signature: string };

export interface PasskeyOptions {
  port?: number;
  open?: boolean;
}

const out = (line = "") => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`paid-actions-mcp passkey: ${line}\n`);

type Opened = Awaited<ReturnType<typeof openJournal>>;

/** How long a ceremony waits for the person (the console's one-time link lives as long). */
const CEREMONY_MS = 10 * 60_000;

/** How long the console stays up after a ceremony is done, for the page to get its answer. */
const ANSWERED_MS = 500;

/** What a refused ceremony tells the person on the page. */
const REFUSED: Record<string, string> = {
  format: "the browser's answer is malformed",
  type: "the browser answered another ceremony",
  challenge: "the answer was made for another request: reload the page and try again",
  origin: "the answer was made on another page than this console's",
  rp_id: "the passkey is for another site",
  user_presence: "no person was present at the authenticator",
  user_verification: "the authenticator did not verify you (a PIN or biometric is required)",
  signature: "the signature is not the passkey's",
  credential: "that passkey is not registered here",
  counter: "the passkey's counter did not advance (a replayed answer)",
  algorithm: "the passkey's key is of a kind not accepted (ES256, EdDSA or RS256)",
  already_registered: "that passkey is registered already",
  not_registered: "that passkey is not registered (any more)",
};

export async function passkeyCommand(
  env: NodeJS.ProcessEnv,
  action: PasskeyAction,
  o: PasskeyOptions = {},
): Promise<number> {
  if ((action.kind === "add" || action.kind === "remove") && !interactive()) {
    err(`${NO_TTY(action.kind === "add" ? "registering a passkey" : "removing a passkey", false)}; nothing changed`);
    return 2;
  }
  const j = await openJournal(env);
  try {
    if (action.kind === "list") return await list(j, action.json === true);
    if (action.kind === "submit") return await submit(j, action.credentialId, action.signature);
    if (action.kind === "remove") return await remove(j, env, action.credentialId, o);
    return await add(j, env, action, o);
  } finally {
    await j.close();
  }
}

/** The wallet's owner a passkey is bound to: the delegate mode's owner, else the agent key's own address. */
function ownerOf(j: Opened): string {
  const config = j.configResult.ok ? j.configResult.config : undefined;
  if (config?.owner) return config.owner;
  if (!config?.walletPath)
    throw new Error("no owner (PAID_ACTIONS_OWNER) and no agent key (PAID_ACTIONS_WALLET) are configured to bind to");
  return addressOfKeypair(readKeypairFile(config.walletPath));
}

async function list(j: Opened, json: boolean): Promise<number> {
  const items = await j.journal.passkeys();
  const view = (p: PasskeyRecord) => ({
    credentialId: p.credentialId,
    label: p.label,
    algorithm: p.algorithm,
    createdAt: new Date(p.createdAt).toISOString(),
    removedAt: p.removedAt === null ? null : new Date(p.removedAt).toISOString(),
    owner: p.ownerSignature ? p.owner : null,
  });
  if (json) {
    out(JSON.stringify({ items: items.map(view) }, null, 2));
    return 0;
  }
  if (items.length === 0) {
    out("No passkey is registered: approvals are given as before (terminal, console, host's prompt).");
    return 0;
  }
  for (const p of items.map(view)) {
    out(
      `${p.credentialId}  ${p.label ?? "(no label)"}  registered ${p.createdAt}${p.removedAt ? `, removed ${p.removedAt}` : ""}`,
    );
    out(`  owner: ${p.owner ?? "not bound (passkey add --owner-keypair, or --unsigned then passkey submit)"}`);
  }
  return 0;
}

async function submit(j: Opened, credentialId: string, signature: string): Promise<number> {
  const owner = ownerOf(j);
  const r = await bindOwner(j.journal, credentialId, owner, signature);
  if (r === "bound") {
    out(`Passkey ${credentialId} is bound to the owner ${owner}: receipts show it belongs to the wallet's owner.`);
    return 0;
  }
  err(
    r === "not_registered"
      ? `no registered passkey ${credentialId}; nothing changed`
      : `that is not ${owner}'s signature of the passkey's statement (passkey add --unsigned prints it); nothing changed`,
  );
  return 1;
}

/**
 * Runs one ceremony: a console offering it, its link (on localhost) printed and the browser
 * opened unless --no-open, until the desk says it is done, Ctrl-C, or the link expires.
 */
async function ceremony<T>(
  j: Opened,
  env: NodeJS.ProcessEnv,
  desk: PasskeyDesk,
  done: Promise<T>,
  o: PasskeyOptions,
): Promise<T | undefined> {
  const handle = await startConsole({ ...consoleDeps(j, env), passkeyDesk: desk }, { port: o.port });
  try {
    const login = handle.login("/passkeys");
    const url = new URL(login.url);
    url.hostname = "localhost";
    out(`Passkey page: ${url.href}`);
    out("Open it in your browser (it works once, for 10 minutes); Ctrl-C stops.");
    if (o.open !== false) openBrowser((await login.page()).path);
    let timer: NodeJS.Timeout | undefined;
    let onSignal: (() => void) | undefined;
    const stopped = new Promise<undefined>((resolve) => {
      onSignal = () => resolve(undefined);
      process.once("SIGINT", onSignal);
      process.once("SIGTERM", onSignal);
      timer = setTimeout(() => resolve(undefined), CEREMONY_MS);
    });
    try {
      return await Promise.race([done, stopped]);
    } finally {
      clearTimeout(timer);
      process.off("SIGINT", onSignal!);
      process.off("SIGTERM", onSignal!);
    }
  } finally {
    await handle.close();
  }
}

/** A registration's parts from the page's body, or an ApiError. */
function registrationOf(body: Record<string, unknown>) {
  const { attestationObject, clientDataJSON } = body;
  if (typeof attestationObject !== "string" || typeof clientDataJSON !== "string")
    throw new ApiError(400, "invalid_input", "a registration is attestationObject and clientDataJSON, each base64url");
  return { attestationObject, clientDataJSON };
}

async function add(
  j: Opened,
  env: NodeJS.ProcessEnv,
  a: Extract<PasskeyAction, { kind: "add" }>,
  o: PasskeyOptions,
): Promise<number> {
  // Before the ceremony: a binding that cannot be made should not leave a half-done passkey.
  const owner = a.ownerKeypair !== undefined || a.unsigned ? ownerOf(j) : undefined;
  const keypair = a.ownerKeypair !== undefined ? readKeypairFile(a.ownerKeypair) : undefined;
  if (keypair && addressOfKeypair(keypair) !== owner) {
    err(`the keypair ${a.ownerKeypair} is ${addressOfKeypair(keypair)}, not the owner ${owner}; nothing changed`);
    return 1;
  }
  const challenge = newChallenge();
  const existing = (await registeredPasskeys(j.journal)).map((p) => p.credentialId);
  let registered: ((p: PasskeyRecord) => void) | undefined;
  const done = new Promise<PasskeyRecord>((resolve) => (registered = resolve));
  let finished = false;
  const offer: PasskeyCeremony = {
    kind: "add",
    challenge,
    rpId: RP_ID,
    user: {
      id: randomBytes(16).toString("base64url"),
      name: `paid-actions-mcp ${j.home}`,
      displayName: "paid-actions approvals",
    },
    excludeCredentials: existing,
    label: a.label ?? null,
  };
  const desk: PasskeyDesk = {
    ceremony: () => (finished ? undefined : offer),
    async answer(body, origin) {
      const r = await registerPasskey(j.journal, registrationOf(body), {
        challenge,
        origin,
        label: a.label ?? null,
        now: Date.now(),
      });
      if (!r.ok) throw new ApiError(400, "passkey_refused", `the passkey was not registered: ${REFUSED[r.problem]}`);
      finished = true;
      // Told once the page has its answer: the console closes right after.
      setTimeout(() => registered!(r.passkey), ANSWERED_MS);
      return "Passkey registered. From now on, approvals are given here with it. You can close this page.";
    },
  };
  const passkey = await ceremony(j, env, desk, done, o);
  if (!passkey) {
    err("no passkey was registered (stopped, or the link expired)");
    return 1;
  }
  out(`Registered passkey ${passkey.credentialId}${passkey.label ? ` (${passkey.label})` : ""}.`);
  out("From now on an approval counts only when given in the console with a registered passkey.");
  if (owner === undefined) return 0;
  const statement = passkeyStatement(passkey, owner);
  if (keypair) {
    const r = await bindOwner(j.journal, passkey.credentialId, owner, signStatement(statement, keypair));
    out(
      r === "bound" ? `Bound to the owner ${owner} (signed with ${a.ownerKeypair}).` : `Not bound to the owner: ${r}.`,
    );
    return r === "bound" ? 0 : 1;
  }
  out(`To bind it to the owner ${owner}, sign this message (UTF-8) with the owner's wallet:`);
  out("-----");
  out(statement);
  out("-----");
  out(`then: paid-actions-mcp passkey submit ${passkey.credentialId} <signature, base58 or base64>`);
  return 0;
}

async function remove(j: Opened, env: NodeJS.ProcessEnv, credentialId: string, o: PasskeyOptions): Promise<number> {
  const keys = await registeredPasskeys(j.journal);
  if (!keys.some((k) => k.credentialId === credentialId)) {
    err(`no registered passkey ${credentialId}; nothing changed`);
    return 1;
  }
  const challenge = removalChallenge(credentialId);
  let removed: (() => void) | undefined;
  const done = new Promise<true>((resolve) => (removed = () => resolve(true)));
  let finished = false;
  const offer: PasskeyCeremony = {
    kind: "remove",
    challenge,
    rpId: RP_ID,
    credentialId,
    allowCredentials: keys.map((k) => k.credentialId),
  };
  const desk: PasskeyDesk = {
    ceremony: () => (finished ? undefined : offer),
    async answer(body, origin) {
      const r = await removePasskey(j.journal, credentialId, assertionOf(body.assertion), {
        challenge,
        origin,
        now: Date.now(),
      });
      if (!r.ok) throw new ApiError(400, "passkey_refused", `the passkey was not removed: ${REFUSED[r.problem]}`);
      finished = true;
      setTimeout(() => removed!(), ANSWERED_MS);
      return "Passkey removed. You can close this page.";
    },
  };
  if (!(await ceremony(j, env, desk, done, o))) {
    err("no passkey was removed (stopped, or the link expired)");
    return 1;
  }
  const left = (await registeredPasskeys(j.journal)).length;
  out(
    `Removed passkey ${credentialId}.${left === 0 ? " No passkey is registered now: approvals no longer need one." : ` ${left} still registered.`}`,
  );
  return 0;
}
