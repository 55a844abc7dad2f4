/**
 * Approvals with a passkey registered, against the reference service: an approval counts only
 * with a WebAuthn assertion over the canonical terms of its intent, verified before it is
 * recorded and again before it is used to sign, and kept with the approval. An assertion
 * for other terms, a replay, one without user verification, one from another origin or an
 * unregistered credential are refused and nothing is signed; an approval without an
 * assertion (the terminal, the host's prompt, one approved before the passkey, one whose kept
 * assertion was swapped in the journal) fails closed.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { approvalChallenge } from "../../src/engine/approvals/passkeys.js";
import { parseKept, verifyKept } from "../../src/engine/evidence/kept.js";
import { canonicalTerms, termsChallenge } from "../../src/engine/evidence/terms.js";
import type { PaidActionError } from "../../src/engine/errors.js";
import { softAuthenticator, type SoftAuthenticator } from "../helpers/authenticator.js";
import { engineFixture, refusal, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const ORIGIN = "http://localhost:48123";

describe("engine: approvals bound to the terms by a passkey", () => {
  let t: TestSandbox;
  let f: EngineFixture | undefined;
  beforeAll(async () => {
    t = await startTestSandbox();
  });
  afterAll(() => t.close());
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  async function register(fx: EngineFixture, a: SoftAuthenticator) {
    await fx.pa.journal.insertPasskey({
      credentialId: a.credentialId,
      publicKey: a.publicKey,
      algorithm: -7,
      rpId: "localhost",
      signCount: a.counter,
      label: "test",
      owner: null,
      ownerSignature: null,
      createdAt: Date.now(),
      removedAt: null,
    });
  }

  async function asked(fx: EngineFixture, input: Record<string, unknown> = SMALL_SERVER) {
    const e = await refusal(fx.pa.engine.pay({ action: "servers.provision", input }));
    expect(e.code).toBe("approval_required");
    return {
      approvalId: (e as PaidActionError<"approval_required">).context.approvalId,
      intentId: e.context.intentId!,
    };
  }

  async function nothingSigned(fx: EngineFixture, intentId: string) {
    const row = (await fx.pa.journal.intent(intentId))!;
    expect(row.proof).toBeNull();
    if (row.quoteId) expect(fx.settledFor(row.quoteId)).toBe(0);
  }

  const problemOf = async (p: Promise<unknown>) => {
    const e = (await p.then(
      () => undefined,
      (x: unknown) => x,
    )) as PaidActionError<"approval_invalid"> | undefined;
    expect(e?.code).toBe("approval_invalid");
    return { problem: e!.context.problem, passkey: e!.context.passkey };
  };

  it("pays once with an assertion over its terms, kept with the approval; every other assertion is refused", async () => {
    f = await engineFixture({ t, env: { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" } });
    const a = softAuthenticator("ES256", { counter: 1 });
    const stranger = softAuthenticator();
    await register(f, a);
    const before = await t.usdc(t.wallet.address);
    const { approvalId, intentId } = await asked(f);
    const ch = (await approvalChallenge(f.pa.journal, approvalId))!;
    const stale = a.assert({ challenge: ch.challenge, origin: ORIGIN, keepCounter: true });
    expect(ch).toMatchObject({ approvalId, rpId: "localhost", credentialIds: [a.credentialId] });
    expect(ch.terms).toMatchObject({ kind: "action", action: "servers.provision", amount: "0.288", approvalId });
    expect(ch.terms.payee).toBe(t.sb.keys.treasury.address);
    expect(ch.challenge).toBe(termsChallenge(canonicalTerms(ch.terms)));

    const approve = (assertion: ReturnType<SoftAuthenticator["assert"]>, origin = ORIGIN) =>
      problemOf(f!.pa.engine.approve(approvalId, "console", { assertion, origin }));
    const other = (terms: object) => termsChallenge(canonicalTerms({ ...ch.terms, ...terms }));

    // The terminal and the host's prompt cannot approve: they carry no assertion.
    expect(await problemOf(f.pa.engine.approve(approvalId, "terminal"))).toEqual({
      problem: "passkey_required",
      passkey: undefined,
    });
    // Made for other terms: another amount, another payee.
    expect(await approve(a.assert({ challenge: other({ amount: "0.01" }), origin: ORIGIN }))).toEqual({
      problem: "passkey_invalid",
      passkey: "challenge",
    });
    expect(
      await approve(
        a.assert({ challenge: other({ payee: "So11111111111111111111111111111111111111112" }), origin: ORIGIN }),
      ),
    ).toEqual({ problem: "passkey_invalid", passkey: "challenge" });
    // Without user verification; from another origin; the page's origin not the console's; an unregistered credential.
    expect(await approve(a.assert({ challenge: ch.challenge, origin: ORIGIN, uv: false }))).toEqual({
      problem: "passkey_invalid",
      passkey: "user_verification",
    });
    expect(await approve(a.assert({ challenge: ch.challenge, origin: "http://localhost:1" }))).toEqual({
      problem: "passkey_invalid",
      passkey: "origin",
    });
    expect(
      await approve(a.assert({ challenge: ch.challenge, origin: "http://127.0.0.1:48123" }), "http://127.0.0.1:48123"),
    ).toEqual({ problem: "passkey_invalid", passkey: "origin" });
    expect(await approve(stranger.assert({ challenge: ch.challenge, origin: ORIGIN }))).toEqual({
      problem: "passkey_invalid",
      passkey: "credential",
    });
    // A counter that does not advance (the authenticator's count when it was registered: a replay).
    expect(await approve(stale)).toEqual({ problem: "passkey_invalid", passkey: "counter" });
    const fresh = a.assert({ challenge: ch.challenge, origin: ORIGIN });
    expect((await f.pa.journal.approval(approvalId))!.status).toBe("pending");
    await nothingSigned(f, intentId);

    await f.pa.engine.approve(approvalId, "console", { assertion: fresh, origin: ORIGIN });
    expect((await f.pa.journal.approval(approvalId))!.status).toBe("approved");
    // The same assertion again, and the stale one: refused.
    expect(await approve(fresh)).toEqual({ problem: "decided", passkey: undefined });
    expect(await approve(stale)).toEqual({ problem: "decided", passkey: undefined });

    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER, approvalId });
    expect(paid.status).toBe("pending");
    await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER, approvalId });
    expect(await t.usdc(t.wallet.address)).toBe(before - 288_000n);

    const kept = parseKept(await f.pa.journal.approvalAssertion(approvalId))!;
    expect(kept).toMatchObject({ rpId: "localhost", origin: ORIGIN, challenge: ch.challenge, signCount: a.counter });
    expect(JSON.parse(kept.terms)).toEqual(ch.terms);
    expect(kept.credential).toMatchObject({ id: a.credentialId, publicKey: a.publicKey, owner: null });
    expect(verifyKept(kept)).toEqual({ ok: true, owner: "unbound" });
    expect((await f.pa.journal.passkeys()).find((p) => p.credentialId === a.credentialId)!.signCount).toBe(a.counter);
  });

  it("refuses a replayed counter: an assertion whose counter the journal has already seen approves nothing", async () => {
    f = await engineFixture({ t, env: { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" } });
    const a = softAuthenticator("EdDSA", { counter: 10 });
    await register(f, a);
    const first = await asked(f);
    const second = await asked(f, { ...SMALL_SERVER, durationHours: 25 });
    const c1 = (await approvalChallenge(f.pa.journal, first.approvalId))!;
    const c2 = (await approvalChallenge(f.pa.journal, second.approvalId))!;
    const late = a.assert({ challenge: c2.challenge, origin: ORIGIN }); // counter 11
    await f.pa.engine.approve(first.approvalId, "console", {
      assertion: a.assert({ challenge: c1.challenge, origin: ORIGIN }), // counter 12
      origin: ORIGIN,
    });
    expect(
      await problemOf(f.pa.engine.approve(second.approvalId, "console", { assertion: late, origin: ORIGIN })),
    ).toEqual({
      problem: "passkey_invalid",
      passkey: "counter",
    });
    expect((await f.pa.journal.approval(second.approvalId))!.status).toBe("pending");
    expect(await f.pa.journal.approvalAssertion(second.approvalId)).toBeUndefined();
  });

  it("fails closed at use: an approval without an assertion, or with one swapped in from another approval, signs nothing", async () => {
    f = await engineFixture({ t, env: { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" } });
    const a = softAuthenticator("ES256", { counter: 1 });
    // Approved before any passkey was registered, not used yet.
    const early = await asked(f);
    await f.pa.engine.approve(early.approvalId, "terminal");
    await register(f, a);
    const e1 = await refusal(
      f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER, approvalId: early.approvalId }),
    );
    expect(e1.code).toBe("approval_invalid");
    expect(e1.context).toMatchObject({ problem: "passkey_required" });
    expect(e1.message).toContain("needs the person's passkey");
    await nothingSigned(f, early.intentId);

    // The host's prompt is not asked: the call answers approval_required, for the console.
    const asks: unknown[] = [];
    const viaHost = await refusal(
      f.pa.engine.pay(
        { action: "servers.provision", input: { ...SMALL_SERVER, durationHours: 26 } },
        { approve: async (q) => (asks.push(q), "accept") },
      ),
    );
    expect(viaHost.code).toBe("approval_required");
    expect(asks).toEqual([]);

    // A genuine assertion for a cheap approval, copied onto a dearer one in the journal.
    const cheap = await asked(f, { ...SMALL_SERVER, durationHours: 27 });
    const dear = await asked(f, { ...SMALL_SERVER, durationHours: 48 });
    const c = (await approvalChallenge(f.pa.journal, cheap.approvalId))!;
    await f.pa.engine.approve(cheap.approvalId, "console", {
      assertion: a.assert({ challenge: c.challenge, origin: ORIGIN }),
      origin: ORIGIN,
    });
    const kept = (await f.pa.journal.approvalAssertion(cheap.approvalId))!;
    // As an agent with the journal's file would: mark the dear one approved with the cheap one's assertion.
    const cd = (await approvalChallenge(f.pa.journal, dear.approvalId))!;
    const r = await f.pa.journal.approveWithAssertion(dear.approvalId, Date.now(), kept, a.credentialId, a.counter + 1);
    expect(r).toBe("approved");
    expect(cd.challenge).not.toBe(c.challenge);
    const e2 = await refusal(
      f.pa.engine.pay({
        action: "servers.provision",
        input: { ...SMALL_SERVER, durationHours: 48 },
        approvalId: dear.approvalId,
      }),
    );
    expect(e2.context).toMatchObject({ problem: "passkey_invalid", passkey: "challenge" });
    await nothingSigned(f, dear.intentId);

    // Once the last passkey is removed (`passkey remove` takes an assertion), approvals count as before passkeys.
    expect(await f.pa.journal.removePasskey(a.credentialId, a.credentialId, a.counter + 5, Date.now())).toBe("removed");
    const paid = await f.pa.engine.pay({
      action: "servers.provision",
      input: { ...SMALL_SERVER, durationHours: 27 },
      approvalId: cheap.approvalId,
    });
    expect(paid.status).toBe("pending");
  });
});
