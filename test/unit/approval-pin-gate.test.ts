/**
 * The approval PIN's gate (engine/approvals/pin.ts), from a home's PIN file and the journal's
 * memory of PINs: no PIN and none remembered lets a decision through; a sound file asks for
 * it; a damaged file, or no file while a PIN is remembered (here or in another home), refuses.
 * `verifyPin(..., { required: true })` accepts nothing once the file is gone.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pinGate, pinPath, setPin, verifyPin } from "../../src/engine/approvals/pin.js";

const dirs: string[] = [];
const home = () => {
  const d = mkdtempSync(join(tmpdir(), "pam-pin-gate-"));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const AT = Date.UTC(2026, 0, 2, 3, 4, 5);

describe("the approval PIN's gate", () => {
  it("no file and nothing remembered: nothing to ask", () => {
    expect(pinGate(home(), [])).toEqual({ kind: "none" });
  });

  it("a sound file: ask for it, remembered or not (a PIN set before the journal remembered PINs)", async () => {
    const h = home();
    await setPin(h, "2468-gate");
    expect(pinGate(h, [])).toEqual({ kind: "ask" });
    expect(pinGate(h, [{ host: "a", home: h, setAt: AT }])).toEqual({ kind: "ask" });
  });

  it("a damaged file refuses, remembered or not", () => {
    const h = home();
    writeFileSync(pinPath(h), "{not json");
    expect(pinGate(h, [])).toMatchObject({
      kind: "refuse",
      cause: "damaged",
      problem: expect.stringMatching(/damaged/),
    });
  });

  it("no file while a PIN is remembered refuses, naming where and when it was set", async () => {
    const h = home();
    expect(pinGate(h, [{ host: "host-a", home: h, setAt: AT }])).toEqual({
      kind: "refuse",
      cause: "missing",
      problem: `an approval PIN was set (in ${h} on host-a, 2026-01-02T03:04:05.000Z) and never removed with the current PIN, but this home has no PIN file (${pinPath(h)}), so no PIN can be checked`,
    });
    // A PIN set in other homes of a shared journal counts too.
    const other = pinGate(h, [
      { host: "host-b", home: "/srv/b", setAt: AT },
      { host: "host-c", home: "/srv/c", setAt: AT + 1 },
    ]);
    expect(other).toMatchObject({ kind: "refuse", cause: "missing" });
    expect(other.kind === "refuse" && other.problem).toContain(
      "(in /srv/b on host-b, 2026-01-02T03:04:05.000Z, and 1 more)",
    );
  });

  it("verifyPin with `required` accepts nothing once the file is gone; without it, the old answer (no PIN: true)", async () => {
    const h = home();
    await setPin(h, "2468-gate");
    expect(await verifyPin(h, "2468-gate", { required: true })).toBe(true);
    renameSync(pinPath(h), `${pinPath(h)}.aside`);
    expect(await verifyPin(h, "2468-gate", { required: true })).toBe(false);
    expect(await verifyPin(h, undefined, { required: true })).toBe(false);
    expect(await verifyPin(h, "2468-gate")).toBe(true);
  });
});
