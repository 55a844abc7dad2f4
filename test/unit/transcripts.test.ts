import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { IDLE_CLOSE_MS, MAX_OPEN, MAX_SEEN_CALLS, Transcripts } from "../../src/engine/read/transcripts.js";

const home = mkdtempSync(join(tmpdir(), "transcripts-unit-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

const API_KEY = "PAK_9f8e7d6c5b4a39281706f5e4d3c2b1a0ZYXWVUTS"; // 44 chars
const PROOF = "eyJ4NDAyVmVyc2lvbiI6MiwicGF5bG9hZCI6eyJ0cmFuc2FjdGlvbiI6IkFRQUJBZ01F";

/** Every 8-char window of the secret that appears in the text: none may. */
function leakedPieces(text: string, secret: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i + 8 <= secret.length; i++)
    if (text.includes(secret.slice(i, i + 8))) pieces.push(secret.slice(i, i + 8));
  return pieces;
}

function transcripts(): Transcripts {
  const t = new Transcripts(home);
  t.addSecret(API_KEY);
  return t;
}

describe("Transcripts: a secret straddling the 4000-char cut", () => {
  // The secret starts at every offset around the cut: fully before it, across it, fully after.
  it.each([-60, -44, -43, -29, -15, -1, 0, 1, 20])("never leaks, even in part, when it starts at cut%+d", (shift) => {
    const t = transcripts();
    const body = `${".".repeat(4000 + shift)}${API_KEY}${".".repeat(200)}`;
    const out = JSON.stringify(t.redact({ response: { body } }));
    expect(leakedPieces(out, API_KEY)).toEqual([]);
    expect(out).toContain("more chars]");
  });

  it("never leaks from a written transcript line either", () => {
    const t = transcripts();
    t.addSecret(PROOF, { ephemeral: true });
    t.append("call_straddle", "response", {
      body: `${" ".repeat(3990)}${PROOF}`,
      note: `${"-".repeat(3980)}${API_KEY}`,
    });
    const text = readFileSync(t.pathOf("call_straddle"), "utf8");
    expect(leakedPieces(text, API_KEY)).toEqual([]);
    expect(leakedPieces(text, PROOF)).toEqual([]);
    expect(t.read("call_straddle")).toHaveLength(1);
  });
});

describe("Transcripts.redact", () => {
  it("scrubs secrets inside nested objects, arrays and object keys", () => {
    const t = transcripts();
    const out = t.redact({
      a: { b: [{ c: `before ${API_KEY} after` }, [API_KEY]] },
      [`k-${API_KEY}`]: "value",
      deep: { error: { message: `Bearer ${API_KEY} refused` } },
    });
    const text = JSON.stringify(out);
    expect(leakedPieces(text, API_KEY)).toEqual([]);
    expect(out).toEqual({
      a: { b: [{ c: "before [redacted] after" }, ["[redacted]"]] },
      "k-[redacted]": "value",
      deep: { error: { message: "Bearer [redacted] refused" } },
    });
  });

  it("masks secret headers (any case) and secret fields whatever their value", () => {
    const t = new Transcripts(home);
    const out = t.redact({
      headers: {
        Authorization: "Bearer abc",
        "X-PAYMENT": "p",
        "payment-signature": "s",
        Cookie: "c",
        "content-type": "application/json",
      },
      body: {
        paymentProof: { nested: true },
        apiKey: 12345,
        privateKey: [1, 2, 3],
        proof: "x",
        secret: "y",
        paymentSignature: "z",
      },
    });
    expect(out).toEqual({
      headers: {
        Authorization: "[redacted]",
        "X-PAYMENT": "[redacted]",
        "payment-signature": "[redacted]",
        Cookie: "[redacted]",
        "content-type": "application/json",
      },
      body: {
        paymentProof: "[redacted]",
        apiKey: "[redacted]",
        privateKey: "[redacted]",
        proof: "[redacted]",
        secret: "[redacted]",
        paymentSignature: "[redacted]",
      },
    });
  });

  it("writes bigints as decimal strings, at any depth", () => {
    const t = new Transcripts(home);
    expect(t.redact({ amount: 18446744073709551615n, list: [1n, { x: -5n }] })).toEqual({
      amount: "18446744073709551615",
      list: ["1", { x: "-5" }],
    });
  });

  it("truncates long strings after scrubbing, saying how much was cut", () => {
    const t = transcripts();
    const out = t.redact({ s: `${API_KEY}${"x".repeat(5000)}` }) as { s: string };
    expect(out.s.startsWith("[redacted]xxx")).toBe(true);
    expect(out.s.endsWith(`…[${"[redacted]".length + 5000 - 4000} more chars]`)).toBe(true);
  });

  it("bounds depth and array length", () => {
    const t = new Transcripts(home);
    let deep: unknown = "bottom";
    for (let i = 0; i < 30; i++) deep = { d: deep };
    expect(JSON.stringify(t.redact(deep))).toContain('"[too deep]"');
    expect((t.redact({ a: Array.from({ length: 500 }, (_, i) => i) }) as { a: number[] }).a).toHaveLength(200);
  });

  it("keeps a __proto__ key as data", () => {
    const t = transcripts();
    const out = t.redact(JSON.parse(`{"__proto__": {"polluted": "${API_KEY}"}}`)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"polluted":"[redacted]"}}');
  });

  it("scrubs a secret JSON would escape (quotes, backslashes)", () => {
    const t = new Transcripts(home);
    const key = 'k"e\\y-123456';
    t.addSecret(key);
    expect(JSON.stringify(t.redact({ msg: `key=${key}` }))).toBe('{"msg":"key=[redacted]"}');
  });

  it("scrubs the longer of two overlapping secrets whole", () => {
    const t = new Transcripts(home);
    t.addSecret("abcdefgh");
    t.addSecret("abcdefgh-ijklmnop");
    expect(t.redact({ s: "x abcdefgh-ijklmnop y abcdefgh" })).toEqual({ s: "x [redacted] y [redacted]" });
  });
});

describe("Transcripts.scrub and addSecret", () => {
  it("scrubs plain text; ignores secrets shorter than 8 chars and undefined", () => {
    const t = transcripts();
    t.addSecret("short");
    t.addSecret(undefined);
    expect(t.scrub(`log: ${API_KEY} short`)).toBe("log: [redacted] short");
  });

  it("takes many secrets at once, ephemeral or not", () => {
    const t = new Transcripts(home);
    t.addSecret(["secret-one-1", undefined, "secret-two-2"]);
    t.addSecret(new Set(["proof-aaaaaaaa", "proof-bbbbbbbb"]), { ephemeral: true });
    expect(t.scrub("secret-one-1 secret-two-2 proof-aaaaaaaa proof-bbbbbbbb")).toBe(
      "[redacted] [redacted] [redacted] [redacted]",
    );
  });

  it("keeps the 256 most recently registered proofs; registering one again refreshes it", () => {
    const t = transcripts();
    const proof = (i: number) => `proof-${String(i).padStart(6, "0")}`;
    t.addSecret(
      Array.from({ length: 256 }, (_, i) => proof(i)),
      { ephemeral: true },
    );
    t.addSecret(proof(0), { ephemeral: true }); // used again: now the newest
    t.addSecret(
      Array.from({ length: 10 }, (_, i) => proof(1000 + i)),
      { ephemeral: true },
    );
    expect(t.scrub(proof(0))).toBe("[redacted]");
    for (let i = 1; i <= 10; i++) expect(t.scrub(proof(i))).toBe(proof(i)); // evicted, oldest first
    expect(t.scrub(proof(11))).toBe("[redacted]");
    expect(t.scrub(proof(1009))).toBe("[redacted]");
    // Long-lived secrets are never evicted.
    t.addSecret(
      Array.from({ length: 1000 }, (_, i) => proof(5000 + i)),
      { ephemeral: true },
    );
    expect(t.scrub(API_KEY)).toBe("[redacted]");
  });

  it("announces each call once, and remembers at most maxSeen of them (then starts again)", () => {
    const t = new Transcripts(home, 3);
    const announced: string[] = [];
    t.onNewCall = (callId) => void announced.push(callId);
    for (const id of ["call_a", "call_b", "call_a", "call_c", "call_b"]) t.append(id, "step");
    expect(announced).toEqual(["call_a", "call_b", "call_c"]);
    // A fourth call empties the set: an older call writing again is announced again.
    t.append("call_d", "step");
    t.append("call_d", "step");
    t.append("call_a", "step");
    expect(announced).toEqual(["call_a", "call_b", "call_c", "call_d", "call_a"]);
    expect(MAX_SEEN_CALLS).toBe(10_000);
  });

  it("refuses call ids that are not call_<alnum> (no path tricks)", () => {
    const t = new Transcripts(home);
    t.append("../escape", "x");
    expect(t.read("../escape")).toBeUndefined();
    expect(t.list().map((e) => e.callId)).not.toContain("../escape");
  });
});

describe("Transcripts: the files of recent calls stay open between lines", () => {
  it(`keeps at most ${MAX_OPEN} open; every line is in its file as soon as append returns, readable, mode 0600`, () => {
    const t = new Transcripts(mkdtempSync(join(tmpdir(), "transcripts-open-")));
    try {
      const ids = Array.from({ length: MAX_OPEN + 3 }, (_, i) => `call_open${i}`);
      for (let round = 0; round < 3; round++)
        for (const id of ids) {
          t.append(id, `step${round}`, { round });
          expect(t.openFiles).toBeLessThanOrEqual(MAX_OPEN);
          expect(t.read(id)!.map((e) => e.step)).toEqual(Array.from({ length: round + 1 }, (_, r) => `step${r}`));
        }
      expect(statSync(t.pathOf(ids[0]!)).mode & 0o777).toBe(0o600);
    } finally {
      t.closeFiles();
    }
  });

  it(`closes them all once no line was written for ${IDLE_CLOSE_MS} ms, and reopens on the next line`, () => {
    vi.useFakeTimers();
    const t = new Transcripts(mkdtempSync(join(tmpdir(), "transcripts-idle-")));
    try {
      t.append("call_idle1", "a");
      t.append("call_idle2", "a");
      expect(t.openFiles).toBe(2);
      vi.advanceTimersByTime(IDLE_CLOSE_MS / 2);
      t.append("call_idle1", "b");
      vi.advanceTimersByTime(IDLE_CLOSE_MS);
      expect(t.openFiles).toBe(2);
      vi.advanceTimersByTime(IDLE_CLOSE_MS);
      expect(t.openFiles).toBe(0);
      t.append("call_idle1", "c");
      expect(t.openFiles).toBe(1);
      expect(t.read("call_idle1")!.map((e) => e.step)).toEqual(["a", "b", "c"]);
    } finally {
      t.closeFiles();
      vi.useRealTimers();
    }
  });
});
