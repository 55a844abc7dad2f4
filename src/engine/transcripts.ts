/**
 * Transcripts: every tool call leaves a redacted JSON Lines record of each step (request,
 * response status and body, decision, timing) under `<home>/transcripts/<callId>.jsonl`.
 * API keys, wallet secrets and payment proofs never appear: known secret headers and
 * fields are masked, and every registered secret string is scrubbed from the final text.
 */
import { appendFileSync, mkdirSync, readFileSync, readdirSync, statSync, existsSync } from "node:fs";
import { join } from "node:path";

const SECRET_HEADERS = new Set(["authorization", "x-payment-proof", "payment-signature", "x-payment", "proxy-authorization", "cookie"]);
const SECRET_FIELDS = new Set(["paymentProof", "proof", "apiKey", "secret", "privateKey", "paymentSignature"]);
const CALL_ID = /^call_[A-Za-z0-9]{1,40}$/;

export interface TranscriptEntry {
  t: string;
  step: string;
  [key: string]: unknown;
}

function redactValue(value: unknown, depth = 0): unknown {
  if (depth > 20) return "[too deep]";
  if (Array.isArray(value)) return value.slice(0, 200).map((v) => redactValue(v, depth + 1));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (SECRET_HEADERS.has(k.toLowerCase()) || SECRET_FIELDS.has(k)) out[k] = "[redacted]";
      else out[k] = redactValue(v, depth + 1);
    }
    return out;
  }
  if (typeof value === "string" && value.length > 4000) return `${value.slice(0, 4000)}…[${value.length - 4000} more chars]`;
  if (typeof value === "bigint") return value.toString();
  return value;
}

export class Transcripts {
  readonly dir: string;
  private readonly secrets = new Set<string>();
  private readonly recent = new Set<string>();
  private dirReady = false;

  constructor(home: string) {
    this.dir = join(home, "transcripts");
  }

  /**
   * Registers a secret string: it is scrubbed from everything written. Long-lived secrets
   * (the API key) stay; per-payment ones (proofs) are kept for the most recent payments only
   * — a service echoes a proof while that payment is in flight — so scrubbing costs the same
   * after a million payments as after one.
   */
  addSecret(secret: string | undefined, opts: { ephemeral?: boolean } = {}): void {
    if (!secret || secret.length < 8) return;
    if (!opts.ephemeral) {
      this.secrets.add(secret);
      return;
    }
    this.recent.delete(secret);
    this.recent.add(secret);
    if (this.recent.size > 256) this.recent.delete(this.recent.values().next().value!);
  }

  private *allSecrets(): Iterable<string> {
    yield* this.secrets;
    yield* this.recent;
  }

  /** Masks secret fields and scrubs registered secrets from any value, for logs and errors too. */
  redact<T>(value: T): T {
    return JSON.parse(this.redactedJson(value)) as T;
  }

  private redactedJson(value: unknown): string {
    return this.scrub(JSON.stringify(redactValue(value)) ?? "null");
  }

  scrub(text: string): string {
    let out = text;
    for (const s of this.allSecrets()) if (out.includes(s)) out = out.split(s).join("[redacted]");
    return out;
  }

  append(callId: string, step: string, data: Record<string, unknown> = {}): void {
    if (!CALL_ID.test(callId)) return;
    if (!this.dirReady) {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      this.dirReady = true;
    }
    const line = this.redactedJson({ t: new Date().toISOString(), step, ...data });
    appendFileSync(join(this.dir, `${callId}.jsonl`), `${line}\n`, { mode: 0o600 });
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
