/**
 * Reading a command's arguments: strict options (an unknown one is a usage error), bounded
 * integers, and the shape of `allowance`'s subcommands. A UsageError is answered with the
 * command's help hint and exit code 2.
 */
import { homedir } from "node:os";
import { join } from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { parseDecimal, U64_MAX } from "../domain/money.js";
import type { AllowanceAction } from "./allowance.js";
import type { PasskeyAction } from "./passkey.js";

export class UsageError extends Error {}

export function defaultHome(env: NodeJS.ProcessEnv): string {
  return env.PAID_ACTIONS_HOME || join(homedir(), ".paid-actions-mcp");
}

export function intOption(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(value)}`);
  }
  return Number(value);
}

/** Parses `args` strictly, with `--help`/`-h` always known; at most `positionals` positionals. */
export function parse<O extends NonNullable<ParseArgsConfig["options"]>>(args: string[], options: O, positionals = 0) {
  const parsed = parseArgs({
    args,
    options: { ...options, help: { type: "boolean" as const, short: "h" } },
    strict: true,
    allowPositionals: positionals > 0,
  });
  if (parsed.positionals.length > positionals)
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[positionals])}`);
  return parsed;
}

/** What `allowance` is asked to do, from its positionals; a usage error for anything else. */
export function allowanceAction(
  positionals: string[],
  values: { json?: boolean; "owner-keypair"?: string; unsigned?: boolean },
): AllowanceAction {
  const [sub, arg] = positionals;
  const signing = values["owner-keypair"] !== undefined || values.unsigned === true;
  if (sub === undefined) {
    if (signing) throw new UsageError("--owner-keypair and --unsigned are for grant and revoke");
    return { kind: "show" };
  }
  if (values.json) throw new UsageError("--json is for showing the allowance");
  if (sub === "submit") {
    if (arg === undefined) throw new UsageError("submit needs the signed transaction (base64)");
    if (signing)
      throw new UsageError(
        "submit sends a transaction the owner's wallet already signed: no --owner-keypair or --unsigned",
      );
    return { kind: "submit", transaction: arg };
  }
  if (sub !== "grant" && sub !== "revoke")
    throw new UsageError(
      `unknown allowance subcommand ${JSON.stringify(sub.slice(0, 40))}: use grant, revoke or submit`,
    );
  if ((values["owner-keypair"] === undefined) === (values.unsigned !== true))
    throw new UsageError(`${sub} needs exactly one of --owner-keypair PATH and --unsigned`);
  if (sub === "revoke") {
    if (arg !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(arg.slice(0, 40))}`);
    return { kind: "change", change: { kind: "revoke" } };
  }
  const amount = arg === undefined ? undefined : parseDecimal(arg.trim());
  if (amount === undefined || amount > U64_MAX)
    throw new UsageError(
      `grant needs an amount of USDC such as 25 or 0.5 (at most 6 decimals), not ${JSON.stringify((arg ?? "").slice(0, 40))}`,
    );
  return { kind: "change", change: { kind: "grant", amount } };
}

/**
 * The window of a `--csv` export: --since and --until, each an ISO date (a whole UTC day:
 * --until includes it) or datetime (--until excludes it); both only with --csv, and every
 * other option of the listing refused beside it.
 */
export function csvWindow(
  values: { csv?: boolean; since?: string; until?: string },
  others: Record<string, unknown>,
  parseWhen: (text: string) => number | undefined,
): { since?: number; until?: number } | undefined {
  if (!values.csv) {
    if (values.since !== undefined || values.until !== undefined)
      throw new UsageError("--since and --until are for --csv");
    return undefined;
  }
  const other = Object.entries(others).find(([, v]) => v !== undefined && v !== false);
  if (other) throw new UsageError(`--${other[0]} is not for --csv (it exports every purchase in --since..--until)`);
  const at = (name: "since" | "until") => {
    const text = values[name];
    if (text === undefined) return undefined;
    const ms = parseWhen(text);
    if (ms === undefined)
      throw new UsageError(
        `--${name} must be an ISO date or datetime such as 2026-11-01 or 2026-11-01T12:00:00Z, not ${JSON.stringify(text.slice(0, 60))}`,
      );
    // A date alone is a whole day: --until 2026-11-30 takes in the 30th.
    return name === "until" && /^\d{4}-\d{2}-\d{2}$/.test(text.trim()) ? ms + 86_400_000 : ms;
  };
  const since = at("since");
  const until = at("until");
  if (since !== undefined && until !== undefined && until <= since)
    throw new UsageError("--until must be after --since");
  return { since, until };
}

/** What `passkey` is asked to do, from its positionals and options; a usage error for anything else. */
export function passkeyAction(
  positionals: string[],
  v: {
    label?: string;
    "owner-keypair"?: string;
    unsigned?: boolean;
    json?: boolean;
    port?: string;
    "no-open"?: boolean;
  },
): PasskeyAction {
  const [sub, a, b, ...rest] = positionals;
  const only = (allowed: string[]) => {
    const given = Object.entries(v).filter(([k, x]) => x !== undefined && x !== false && !allowed.includes(k));
    if (given.length > 0) throw new UsageError(`--${given[0]![0]} is not an option of passkey ${sub}`);
  };
  const id = (what: string, x: string | undefined) => {
    if (x === undefined || !/^[A-Za-z0-9_-]{1,1400}$/.test(x))
      throw new UsageError(`passkey ${what} needs a credential id (see passkey list)`);
    return x;
  };
  if (rest.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0]!.slice(0, 40))}`);
  switch (sub) {
    case "add":
      only(["label", "owner-keypair", "unsigned", "port", "no-open"]);
      if (a !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(a.slice(0, 40))}`);
      if (v["owner-keypair"] !== undefined && v.unsigned)
        throw new UsageError("give --owner-keypair PATH or --unsigned, not both");
      // eslint-disable-next-line no-control-regex -- control characters in a label are what is refused
      if (v.label !== undefined && (v.label.length > 64 || /[\u0000-\u001f\u007f]/.test(v.label)))
        throw new UsageError("--label is at most 64 characters, without control characters");
      return { kind: "add", label: v.label, ownerKeypair: v["owner-keypair"], unsigned: v.unsigned };
    case "list":
      only(["json"]);
      if (a !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(a.slice(0, 40))}`);
      return { kind: "list", json: v.json };
    case "remove":
      only(["port", "no-open"]);
      if (b !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(b.slice(0, 40))}`);
      return { kind: "remove", credentialId: id("remove", a) };
    case "submit":
      only([]);
      if (b === undefined)
        throw new UsageError("passkey submit needs the credential id and the owner wallet's signature");
      return { kind: "submit", credentialId: id("submit", a), signature: b };
    default:
      throw new UsageError(
        `passkey needs a subcommand: add, list, remove or submit${sub ? ` (not ${JSON.stringify(sub.slice(0, 40))})` : ""}`,
      );
  }
}
