/**
 * Transcripts: every tool call leaves a redacted JSON Lines record of each step (request,
 * response status and body, decision, timing) under `<home>/transcripts/<callId>.jsonl`.
 * API keys, wallet secrets and payment proofs never appear: known secret headers and
 * fields are masked, and every registered secret string is scrubbed from each string value
 * and object key before anything is truncated, so a secret straddling a cut cannot leak
 * in part.
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";

const SECRET_HEADERS = new Set([
  "authorization",
  "x-payment-proof",
  "payment-signature",
  "x-payment",
  "proxy-authorization",
  "cookie",
]);
const SECRET_FIELDS = new Set(["paymentProof", "proof", "apiKey", "secret", "privateKey", "paymentSignature"]);
const CALL_ID = /^call_[A-Za-z0-9]{1,40}$/;

export interface TranscriptEntry {
  t: string;
  step: string;
  [key: string]: unknown;
}

const MAX_STRING = 4000;
/** Registered secrets shorter than this are ignored: scrubbing them would mangle text. */
const MIN_SECRET = 8;
const MAX_RECENT = 256;
/**
 * Calls remembered as already announced (`onNewCall`), about 80 bytes each: past this the
 * set starts again, so a server that runs for days holds at most this many ids. A call that
 * writes again after that is announced again, which its index ignores (one row per call).
 */
export const MAX_SEEN_CALLS = 10_000;
/**
 * A call writes about a dozen lines within milliseconds, then, a second later, its
 * execution's status: the files of the most recent calls stay open between lines (about
 * two thirds of an append is opening and closing the file), at most MAX_OPEN of them, and
 * all are closed once no line was written for IDLE_CLOSE_MS.
 */
export const MAX_OPEN = 8;
export const IDLE_CLOSE_MS = 2_000;

/**
 * First pass: masks secret headers and fields, bounds depth and array length, turns bigints
 * into strings, and collects every string value and key it keeps (still whole) into
 * `strings`, so the caller can find which registered secrets occur at all.
 */
function mask(value: unknown, strings: string[], depth = 0): unknown {
  if (depth > 20) return "[too deep]";
  if (Array.isArray(value)) return value.slice(0, 200).map((v) => mask(v, strings, depth + 1));
  if (value && typeof value === "object") {
    // fromEntries defines a "__proto__" key as data instead of setting the prototype.
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => {
        strings.push(k);
        return [
          k,
          SECRET_HEADERS.has(k.toLowerCase()) || SECRET_FIELDS.has(k) ? "[redacted]" : mask(v, strings, depth + 1),
        ];
      }),
    );
  }
  if (typeof value === "string") strings.push(value);
  if (typeof value === "bigint") return value.toString();
  return value;
}

/** Second pass over mask's output: scrubs every string and key, then truncates long strings. */
function scrubAndTruncate(value: unknown, scrub: (text: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => scrubAndTruncate(v, scrub));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [scrub(k), scrubAndTruncate(v, scrub)]),
    );
  }
  if (typeof value === "string") {
    const text = scrub(value);
    return text.length > MAX_STRING ? `${text.slice(0, MAX_STRING)}…[${text.length - MAX_STRING} more chars]` : text;
  }
  return value;
}

/** Replaces each of `secrets` (longest first) in `text`. */
function scrubWith(secrets: readonly string[], text: string): string {
  let out = text;
  for (const s of secrets) {
    if (s.length <= out.length && out.includes(s)) out = out.split(s).join("[redacted]");
  }
  return out;
}

/**
 * The transcripts as the MCP surface uses them: a call's steps appended, one read back, the
 * files listed, text scrubbed. Registering secrets and indexing new calls stay with whoever
 * assembled them (app/).
 */
export type TranscriptLog = Pick<Transcripts, "append" | "read" | "pathOf" | "list" | "scrub">;

export class Transcripts {
  readonly dir: string;
  private readonly secrets = new Set<string>();
  private readonly recent = new Set<string>();
  /** All secrets longest first; undefined when the set changed and it must be rebuilt. */
  private sorted: string[] | undefined;
  private dirReady = false;
  /** Calls this process has appended to (bounded): a call's first line is when it is indexed. */
  private readonly seen = new Set<string>();
  /** Told once per call, at its first line (the app indexes it in the journal). */
  onNewCall?: (callId: string, at: number) => void;
  /** The files of the calls written to last (their descriptors, opened to append), oldest first. */
  private readonly files = new Map<string, number>();
  private idleTimer: NodeJS.Timeout | undefined;
  private lastWrite = 0;

  constructor(
    home: string,
    private readonly maxSeen = MAX_SEEN_CALLS,
  ) {
    this.dir = join(home, "transcripts");
  }

  /**
   * Registers secret strings: they are scrubbed from everything written. Long-lived secrets
   * (the API key) stay; per-payment ones (proofs) are kept for the most recently registered
   * payments only — a service echoes a proof while that payment is in flight, and the engine
   * registers a proof again whenever it loads the intent, which moves it to the newest place
   * — so scrubbing costs the same after a million payments as after one. Takes one secret or
   * many; each is O(1), and the sorted list scrubbing walks is rebuilt lazily on the next write.
   */
  addSecret(secret: string | undefined | Iterable<string | undefined>, opts: { ephemeral?: boolean } = {}): void {
    const many = typeof secret === "string" || secret === undefined ? [secret] : secret;
    for (const s of many) {
      if (!s || s.length < MIN_SECRET) continue;
      if (!opts.ephemeral) {
        if (this.secrets.has(s)) continue;
        this.secrets.add(s);
      } else if (this.recent.delete(s)) {
        // Already known: only its place moves, the sorted list stays valid.
        this.recent.add(s);
        continue;
      } else {
        this.recent.add(s);
        if (this.recent.size > MAX_RECENT) this.recent.delete(this.recent.values().next().value!);
      }
      this.sorted = undefined;
    }
  }

  /** Every secret, longest first, so a longer secret containing a shorter one goes whole. */
  private sortedSecrets(): readonly string[] {
    this.sorted ??= [...new Set([...this.secrets, ...this.recent])].sort((a, b) => b.length - a.length);
    return this.sorted;
  }

  /** Every registered secret now (the service client scrubs responses with them). */
  secretsNow(): readonly string[] {
    return this.sortedSecrets();
  }

  /** Masks secret fields and scrubs registered secrets from any value, for logs and errors too. */
  redact<T>(value: T): T {
    return JSON.parse(this.redactedJson(value)) as T;
  }

  /**
   * Scrubs before it truncates, so no secret straddling a cut leaks in part. Which secrets
   * occur is found with one search each over all the strings joined; only those are then
   * looked for in each string, so many registered secrets cost little per value.
   */
  private redactedJson(value: unknown): string {
    const strings: string[] = [];
    const masked = mask(value, strings);
    const all = this.sortedSecrets();
    const joined = all.length > 0 ? strings.join("\u0000") : "";
    const present = all.filter((s) => joined.includes(s));
    return (
      JSON.stringify(scrubAndTruncate(masked, present.length === 0 ? (t) => t : (t) => scrubWith(present, t))) ?? "null"
    );
  }

  /** Replaces every registered secret in plain text (log lines, error messages). */
  scrub(text: string): string {
    return scrubWith(this.sortedSecrets(), text);
  }

  append(callId: string, step: string, data: Record<string, unknown> = {}): void {
    if (!CALL_ID.test(callId)) return;
    if (!this.dirReady) {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      this.dirReady = true;
    }
    const now = new Date();
    const line = this.redactedJson({ t: now.toISOString(), step, ...data });
    writeSync(this.fileOf(callId), `${line}\n`);
    if (!this.seen.has(callId)) {
      if (this.seen.size >= this.maxSeen) this.seen.clear();
      this.seen.add(callId);
      this.onNewCall?.(callId, now.getTime());
    }
  }

  /** The call's file, open to append: kept from its last line, or opened (the oldest kept one closed past MAX_OPEN). */
  private fileOf(callId: string): number {
    this.lastWrite = Date.now();
    const kept = this.files.get(callId);
    if (kept !== undefined) {
      this.files.delete(callId);
      this.files.set(callId, kept);
      return kept;
    }
    const fd = openSync(join(this.dir, `${callId}.jsonl`), "a", 0o600);
    this.files.set(callId, fd);
    if (this.files.size > MAX_OPEN) {
      const [oldest, oldFd] = this.files.entries().next().value!;
      this.files.delete(oldest);
      closeSync(oldFd);
    }
    this.idleTimer ??= setInterval(() => {
      if (Date.now() - this.lastWrite >= IDLE_CLOSE_MS) this.closeFiles();
    }, IDLE_CLOSE_MS).unref();
    return fd;
  }

  /** Closes every file kept open (they reopen on the next line); also when idle. */
  closeFiles(): void {
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.idleTimer = undefined;
    for (const fd of this.files.values()) closeSync(fd);
    this.files.clear();
  }

  /** How many call files are open now (for tests). */
  get openFiles(): number {
    return this.files.size;
  }

  read(callId: string): TranscriptEntry[] | undefined {
    if (!CALL_ID.test(callId)) return undefined;
    const path = join(this.dir, `${callId}.jsonl`);
    if (!existsSync(path)) return undefined;
    return readFileSync(path, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as TranscriptEntry);
  }

  /** Most recent calls first. */
  list(limit = 20): Array<{ callId: string; modifiedAt: string; path: string }> {
    if (!existsSync(this.dir)) return [];
    return readdirSync(this.dir)
      .filter((f) => f.endsWith(".jsonl"))
      .map((f) => {
        const path = join(this.dir, f);
        return { callId: f.slice(0, -6), mtime: statSync(path).mtimeMs, path };
      })
      .sort((a, b) => b.mtime - a.mtime)
      .slice(0, limit)
      .map((e) => ({ callId: e.callId, modifiedAt: new Date(e.mtime).toISOString(), path: e.path }));
  }

  pathOf(callId: string): string {
    return join(this.dir, `${callId}.jsonl`);
  }
}
