import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  clearPin,
  pinFileProblem,
  pinIsSet,
  pinPath,
  pinProblem,
  setPin,
  verifyPin,
} from "../../src/engine/approvals/pin.js";

const dirs: string[] = [];
const home = () => {
  const d = mkdtempSync(join(tmpdir(), "pam-pin-"));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("the approval PIN", () => {
  it("with no PIN set, any PIN (or none) verifies", async () => {
    const h = home();
    expect(pinIsSet(h)).toBe(false);
    expect(await verifyPin(h, undefined)).toBe(true);
    expect(await verifyPin(h, "anything")).toBe(true);
  });

  it("is stored as a salted scrypt hash (mode 0600, never the PIN), verifies right and refuses wrong, and clears", async () => {
    const h = home();
    await setPin(h, "2468");
    expect(pinIsSet(h)).toBe(true);
    expect(statSync(pinPath(h)).mode & 0o777).toBe(0o600);
    const text = readFileSync(pinPath(h), "utf8");
    expect(text).not.toContain("2468");
    const f = JSON.parse(text) as Record<string, unknown>;
    expect(f).toMatchObject({ v: 1, N: 2 ** 15, r: 8, p: 3 });
    expect(Buffer.from(String(f.hash), "base64")).toHaveLength(32);
    expect(await verifyPin(h, "2468")).toBe(true);
    expect(await verifyPin(h, "2469")).toBe(false);
    expect(await verifyPin(h, undefined)).toBe(false);
    expect(await verifyPin(h, "")).toBe(false);

    // The same PIN set again gets a fresh salt, hence a different hash.
    await setPin(h, "2468");
    const g = JSON.parse(readFileSync(pinPath(h), "utf8")) as Record<string, unknown>;
    expect(g.salt).not.toBe(f.salt);
    expect(g.hash).not.toBe(f.hash);

    await clearPin(h);
    expect(pinIsSet(h)).toBe(false);
    expect(await verifyPin(h, "whatever")).toBe(true);
  });

  it("a damaged PIN file refuses every PIN (fail closed) and says so", async () => {
    const h = home();
    writeFileSync(pinPath(h), "{not json", { mode: 0o600 });
    expect(pinIsSet(h)).toBe(true);
    expect(pinFileProblem(h)).toMatch(/damaged/);
    expect(await verifyPin(h, "1234")).toBe(false);
    // A tampered cost that would ask for gigabytes is refused, not run.
    writeFileSync(pinPath(h), JSON.stringify({ v: 1, salt: "AA==", hash: "AA==", N: 2 ** 24, r: 8, p: 1 }));
    expect(await verifyPin(h, "1234")).toBe(false);
  });

  it.each([
    ["123", /at least 4/],
    ["1234", undefined],
    ["päss", undefined],
    ["x".repeat(257), /at most 256 bytes/],
  ])("a PIN %#: %s", (pin, problem) => {
    if (problem) expect(pinProblem(pin)).toMatch(problem);
    else expect(pinProblem(pin)).toBeUndefined();
  });

  it("refuses to set a PIN that is too short", async () => {
    const h = home();
    await expect(setPin(h, "12")).rejects.toThrow(/at least 4/);
    expect(pinIsSet(h)).toBe(false);
  });
});
