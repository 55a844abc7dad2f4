/**
 * The console's one-time codes (src/console/codes.ts), on an injected clock: a code opens the
 * page it names once, within 5 minutes, typed in any case with or without its dash; a wrong,
 * used or expired one counts against the limit, and after five in a minute none is taken —
 * not even a right one — until the minute has passed.
 */
import { describe, expect, it } from "vitest";
import { CODE_TTL_MS, OneTimeCodes } from "../../src/console/codes.js";

function clock() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe("one-time codes", () => {
  it("look like XXXX-XXXX from an alphabet without 0, O, 1, I or L, and differ", () => {
    const codes = new OneTimeCodes(clock().now);
    const minted = Array.from({ length: 50 }, () => codes.mint("/approvals/apr_1"));
    for (const c of minted) expect(c).toMatch(/^[2-9A-HJKMNP-Z]{4}-[2-9A-HJKMNP-Z]{4}$/);
    expect(new Set(minted).size).toBe(50);
  });

  it("open the page they name once, typed in any case, with spaces or without the dash", () => {
    const codes = new OneTimeCodes(clock().now);
    const code = codes.mint("/approvals/apr_2");
    const typed = ` ${code.toLowerCase().replace("-", " ")} `;
    expect(codes.redeem(typed)).toEqual({ ok: true, next: "/approvals/apr_2" });
    expect(codes.redeem(code)).toEqual({ ok: false, why: "wrong" });
    const other = codes.mint("/approvals/apr_3");
    expect(codes.redeem(other.replace("-", ""))).toEqual({ ok: true, next: "/approvals/apr_3" });
  });

  it("stop working after 5 minutes", () => {
    const c = clock();
    const codes = new OneTimeCodes(c.now);
    const code = codes.mint("/approvals/apr_4");
    c.advance(CODE_TTL_MS);
    expect(codes.redeem(code)).toEqual({ ok: false, why: "wrong" });
    const fresh = codes.mint("/approvals/apr_4");
    c.advance(CODE_TTL_MS - 1);
    expect(codes.redeem(fresh)).toMatchObject({ ok: true });
  });

  it("after five wrong codes in a minute take none, the right one included, until the minute has passed", () => {
    const c = clock();
    const codes = new OneTimeCodes(c.now);
    const code = codes.mint("/approvals/apr_5");
    for (const wrong of ["AAAA-AAAA", "", null, "x".repeat(100), "2345-678"]) {
      expect(codes.redeem(wrong)).toEqual({ ok: false, why: "wrong" });
      c.advance(1_000);
    }
    expect(codes.redeem(code)).toEqual({ ok: false, why: "limited", retryAfterMs: 55_000 });
    c.advance(55_000);
    // The first wrong code has left the window: one more try is taken, and it is right.
    expect(codes.redeem(code)).toEqual({ ok: true, next: "/approvals/apr_5" });
  });
});
