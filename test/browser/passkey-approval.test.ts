/**
 * Passkey approvals in a real headless Chromium with CDP's virtual authenticator (CTAP2,
 * internal, user verification on): `paid-actions-mcp passkey add` at a terminal (a pty)
 * registers the passkey on its console's page; then an approval in the console pays once, its
 * assertion kept and checkable offline. An assertion made for other terms (another amount,
 * another payee), one without user verification, one from an unregistered credential and a
 * replayed one are refused, and nothing is signed for them.
 */
import { generateKeyPairSync } from "node:crypto";
import type { CDPSession, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startConsole, type ConsoleHandle } from "../../src/console/server.js";
import { parseKept, verifyKept } from "../../src/engine/evidence/kept.js";
import type { PaidActionError } from "../../src/engine/errors.js";
import { runInPty } from "../commands/pty.js";
import { launchBrowser, requireChromium, screenshot, type TestBrowser } from "../helpers/browser.js";
import { engineFixture, refusal, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { ensureBuilt } from "../helpers/process.js";

let f: EngineFixture;
let browser: TestBrowser;
let handle: ConsoleHandle | undefined;

beforeAll(async () => {
  requireChromium();
  ensureBuilt();
  f = await engineFixture({ env: { PAID_ACTIONS_APPROVAL_ABOVE: "0.1", PAID_ACTIONS_MAX_TOTAL: "100" } });
  browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  await handle?.close();
  await browser?.close();
  await f?.close();
});

/** The page's virtual authenticator: CTAP2, internal, resident keys, user verification on. */
async function authenticator(page: Page): Promise<{ cdp: CDPSession; id: string }> {
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { cdp, id: authenticatorId };
}

/**
 * In the page: an assertion from the page's authenticator over the approval's terms with
 * `change` applied (none: its own terms), posted as the console's page posts it.
 */
/** Runs in the page (a string: the test's compiler has no DOM types). */
const ASSERT_AND_POST = `async ({ approvalId, change, uv, allow }) => {
  const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
  const unb64 = (t) => Uint8Array.from(atob(t.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((t.length + 3) % 4)), (c) => c.charCodeAt(0));
  const canonical = (v) =>
    v === null || typeof v !== "object"
      ? JSON.stringify(v)
      : "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
  const { challenge: c } = await (await fetch("/api/approvals/" + approvalId + "/challenge")).json();
  const terms = { ...c.terms, ...(change ?? {}) };
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonical(terms)));
  const cred = await navigator.credentials.get({
    publicKey: {
      challenge: new Uint8Array(digest),
      rpId: "localhost",
      allowCredentials: (allow ? [allow] : c.credentialIds).map((id) => ({ type: "public-key", id: unb64(id) })),
      userVerification: uv ?? "required",
    },
  });
  const r = cred.response;
  const assertion = {
    credentialId: b64(cred.rawId),
    authenticatorData: b64(r.authenticatorData),
    clientDataJSON: b64(r.clientDataJSON),
    signature: b64(r.signature),
  };
  const { csrf } = await (await fetch("/api/session")).json();
  const res = await fetch("/api/approvals/" + approvalId + "/approve", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
    body: JSON.stringify({ assertion }),
  });
  return { status: res.status, body: await res.json(), uvFlag: (new Uint8Array(r.authenticatorData)[32] & 4) !== 0 };
}`;

/**
 * In the page: an assertion from the page's authenticator over the approval's terms with
 * `change` applied (none: its own terms), posted as the console's page posts it.
 */
function assertAndPost(
  page: Page,
  o: { approvalId: string; change?: Record<string, string>; uv?: "required" | "discouraged"; allow?: string },
): Promise<{ status: number; body: { error: { message: string } }; uvFlag: boolean }> {
  return page.evaluate(`(${ASSERT_AND_POST})(${JSON.stringify(o)})`);
}

describe("passkey approvals in Chromium", () => {
  it("passkey add, then an approval in the console pays once with its assertion kept; other assertions are refused", async () => {
    const page = await browser.newPage();
    const { cdp, id: authId } = await authenticator(page);

    // A person registers the passkey: `passkey add` at a terminal, its page in the browser.
    // Bound to the wallet's owner: with no owner configured, the agent key's own address.
    const ownerKeypair = f.env.PAID_ACTIONS_WALLET!;
    const add = runInPty(
      ["passkey", "add", "--no-open", "--label", "laptop", "--owner-keypair", ownerKeypair],
      f.env,
      90_000,
    );
    await add.waitFor(/Passkey page: http:\/\/localhost:\d+\/login\?token=\S+/, 30_000);
    const link = /Passkey page: (http:\/\/localhost:\d+\/login\?token=\S+)/.exec(add.screen())![1]!;
    await page.goto(link, { waitUntil: "domcontentloaded" });
    await page.locator('button[data-ceremony="add"]').click();
    await page.locator(".decide-message").getByText("Passkey registered").waitFor({ timeout: 15_000 });
    await add.waitFor("Registered passkey");
    await add.waitFor("Bound to the owner");
    expect((await add.exit).code).toBe(0);
    const [passkey] = await f.pa.journal.passkeys();
    expect(passkey).toMatchObject({ label: "laptop", rpId: "localhost", removedAt: null });
    expect(passkey!.ownerSignature).toBeTruthy();

    // The agent asks to pay above the threshold.
    const before = await f.t.usdc(f.t.wallet.address);
    const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER }));
    expect(e.code).toBe("approval_required");
    const approvalId = (e as PaidActionError<"approval_required">).context.approvalId;
    const intentId = e.context.intentId!;
    const nothingSigned = async () => {
      expect((await f.pa.journal.intent(intentId))!.proof).toBeNull();
      expect((await f.pa.journal.approval(approvalId))!.status).toBe("pending");
    };

    // The person's console, signed in on its localhost name.
    handle = await startConsole({
      engine: f.pa.engine,
      journal: f.pa.journal,
      transcripts: f.pa.transcripts,
      home: f.home,
      config: f.pa.config,
      audit: async () => ({}),
    });
    // Signed in on 127.0.0.1 (as an MCP server's link does): approving first moves the page to localhost.
    await page.goto(handle.loginUrl(`/approvals/${approvalId}`), { waitUntil: "domcontentloaded" });
    const approve = page.locator('button[data-decide="approve"]');
    await expect.poll(() => approve.textContent()).toContain("with your passkey");
    await approve.click();
    await page.waitForURL((u) => u.hostname === "localhost" && u.pathname === `/approvals/${approvalId}`);
    await expect.poll(() => approve.textContent()).toContain("with your passkey");
    await nothingSigned();

    // Made for other terms: another amount, another payee.
    const changes: Array<Record<string, string>> = [
      { amount: "0.01" },
      { payee: "So11111111111111111111111111111111111111112" },
    ];
    for (const change of changes) {
      const r = await assertAndPost(page, { approvalId, change });
      expect(r.status, JSON.stringify(change)).toBe(409);
      expect(r.body.error.message).toContain("it was made for other terms");
    }
    // Without user verification.
    await cdp.send("WebAuthn.setUserVerified", { authenticatorId: authId, isUserVerified: false });
    const noUv = await assertAndPost(page, { approvalId, uv: "discouraged" });
    await cdp.send("WebAuthn.setUserVerified", { authenticatorId: authId, isUserVerified: true });
    expect(noUv.uvFlag).toBe(false);
    expect(noUv.status).toBe(409);
    expect(noUv.body.error.message).toContain("not verified");
    // From a credential that was never registered (another key on the authenticator).
    const stranger = Buffer.from("stranger-credential-0001").toString("base64url");
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    await cdp.send("WebAuthn.addCredential", {
      authenticatorId: authId,
      credential: {
        credentialId: Buffer.from(stranger, "base64url").toString("base64"),
        isResidentCredential: false,
        rpId: "localhost",
        privateKey: privateKey.export({ format: "der", type: "pkcs8" }).toString("base64"),
        signCount: 100,
      },
    });
    const unregistered = await assertAndPost(page, { approvalId, allow: stranger });
    expect(unregistered.status).toBe(409);
    expect(unregistered.body.error.message).toContain("not from a registered passkey");
    await nothingSigned();

    // The person approves on the page: the passkey signs the terms.
    const sent = page.waitForRequest((r) => r.url().endsWith(`/api/approvals/${approvalId}/approve`));
    await approve.click();
    const body = (await sent).postData()!;
    await page.getByText("Approved.").first().waitFor({ timeout: 15_000 });
    await screenshot(page, "passkey-approval");
    expect((await f.pa.journal.approval(approvalId))!.status).toBe("approved");

    // The same assertion again is refused.
    const replay = await page.evaluate(
      async ({ approvalId, body }) => {
        const { csrf } = (await (await fetch("/api/session")).json()) as { csrf: string };
        const res = await fetch(`/api/approvals/${approvalId}/approve`, {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
          body,
        });
        return res.status;
      },
      { approvalId, body },
    );
    expect(replay).toBe(409);

    // The agent's next call pays, once; the assertion is kept and verifies offline.
    const paid = await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER, approvalId });
    expect(paid.status).toBe("pending");
    await f.pa.engine.pay({ action: "servers.provision", input: SMALL_SERVER, approvalId });
    expect(await f.t.usdc(f.t.wallet.address)).toBe(before - 288_000n);
    const kept = parseKept(await f.pa.journal.approvalAssertion(approvalId))!;
    expect(kept.credential.id).toBe(passkey!.credentialId);
    expect(JSON.parse(kept.terms)).toMatchObject({ approvalId, amount: "0.288", action: "servers.provision" });
    expect(verifyKept(kept)).toEqual({ ok: true, owner: "bound" });

    // The person removes the passkey at a terminal, confirming with it on the passkey page.
    const remove = runInPty(["passkey", "remove", passkey!.credentialId, "--no-open"], f.env, 90_000);
    await remove.waitFor(/Passkey page: http:\/\/localhost:\d+\/login\?token=\S+/, 30_000);
    const removeLink = /Passkey page: (http:\/\/localhost:\d+\/login\?token=\S+)/.exec(remove.screen())![1]!;
    await page.goto(removeLink, { waitUntil: "domcontentloaded" });
    await page.locator('button[data-ceremony="remove"]').click();
    await page.locator(".decide-message").getByText("Passkey removed").waitFor({ timeout: 15_000 });
    await remove.waitFor("Removed passkey");
    expect((await remove.exit).code).toBe(0);
    expect((await f.pa.journal.passkeys())[0]!.removedAt).not.toBeNull();
    expect(browser.errors().filter((x) => !/409|Conflict/.test(x))).toEqual([]);
  }, 180_000);
});
