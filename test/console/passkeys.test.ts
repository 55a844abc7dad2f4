/**
 * The console's passkey routes over real HTTP (the console on 127.0.0.1, on the journal of a
 * real engine paying the sandbox): the session says how many passkeys are registered; with
 * one, approving needs its assertion over the approval's challenge, made on the console's
 * localhost origin; the hop hands a fresh one-time link to the same page on localhost; the
 * passkey list shows public parts only, and no console but a `passkey` command's offers a
 * ceremony.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startConsole, type ConsoleHandle } from "../../src/console/server.js";
import { parseKept } from "../../src/engine/evidence/kept.js";
import type { PaidActionError } from "../../src/engine/errors.js";
import { softAuthenticator } from "../helpers/authenticator.js";
import { loginAsPerson, type ConsolePerson } from "../helpers/console-person.js";
import { rawRequest } from "../helpers/console-http.js";
import { engineFixture, refusal, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";

let f: EngineFixture;
let handle: ConsoleHandle;
let person: ConsolePerson;
const a = softAuthenticator("EdDSA", { counter: 3 });

beforeAll(async () => {
  f = await engineFixture({ env: { PAID_ACTIONS_APPROVAL_ABOVE: "0.1", PAID_ACTIONS_MAX_TOTAL: "100" } });
  handle = await startConsole({
    engine: f.pa.engine,
    journal: f.pa.journal,
    transcripts: f.pa.transcripts,
    home: f.home,
    config: f.pa.config,
    audit: async () => ({}),
  });
  person = await loginAsPerson(handle.loginUrl("/approvals"));
}, 120_000);
afterAll(async () => {
  await handle?.close();
  await f?.close();
});

/** A session on the console's localhost name, by the hop; requests sent with that Host and Origin. */
async function onLocalhost(next: string) {
  const hop = await person.post("/api/session/localhost", { next });
  expect(hop.status).toBe(200);
  const url = new URL(((await hop.json()) as { url: string }).url);
  expect(url.origin).toBe(`http://localhost:${handle.port}`);
  expect(url.searchParams.get("next")).toBe(next === "//evil.example" ? "/" : next);
  const host = `localhost:${handle.port}`;
  const login = await rawRequest(handle.port, { path: url.pathname + url.search, headers: { host } });
  expect(login.status).toBe(303);
  const cookie = String(login.headers["set-cookie"]).split(";")[0]!;
  const again = await rawRequest(handle.port, { path: url.pathname + url.search, headers: { host } });
  expect(again.status).toBe(403); // one time only
  const get = async (path: string) =>
    JSON.parse((await rawRequest(handle.port, { path, headers: { host, cookie } })).body);
  const { csrf } = (await get("/api/session")) as { csrf: string };
  const post = (path: string, body: unknown) =>
    rawRequest(handle.port, {
      method: "POST",
      path,
      headers: { host, cookie, origin: `http://${host}`, "x-csrf-token": csrf, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  return { get, post, origin: `http://${host}` };
}

describe("console: passkeys", () => {
  it("approving needs the passkey's assertion made on the console's localhost origin; it is kept", async () => {
    expect(((await (await person.get("/api/session")).json()) as { passkeys: number }).passkeys).toBe(0);
    await f.pa.journal.insertPasskey({
      credentialId: a.credentialId,
      publicKey: a.publicKey,
      algorithm: -8,
      rpId: "localhost",
      signCount: a.counter,
      label: "phone",
      owner: null,
      ownerSignature: null,
      createdAt: Date.now(),
      removedAt: null,
    });
    expect(((await (await person.get("/api/session")).json()) as { passkeys: number }).passkeys).toBe(1);
    const listed = (await (await person.get("/api/passkeys")).json()) as { items: unknown[]; ceremony: unknown };
    expect(listed).toEqual({
      items: [expect.objectContaining({ credentialId: a.credentialId, label: "phone", owner: null, removedAt: null })],
      ceremony: null,
    });
    expect((await person.post("/api/passkeys/ceremony", {})).status).toBe(404);

    const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: { ...SMALL_SERVER } }));
    const approvalId = (e as PaidActionError<"approval_required">).context.approvalId;

    // Without an assertion: refused, whatever the console.
    const bare = await person.approve(approvalId);
    expect(bare.status).toBe(409);
    expect(((await bare.json()) as { error: { message: string } }).error.message).toContain(
      "needs the person's passkey",
    );

    const { challenge } = (await (await person.get(`/api/approvals/${approvalId}/challenge`)).json()) as {
      challenge: { challenge: string; rpId: string; credentialIds: string[]; terms: { approvalId: string } };
    };
    expect(challenge).toMatchObject({ rpId: "localhost", credentialIds: [a.credentialId], terms: { approvalId } });

    // Made on 127.0.0.1 (no RP can be an IP address; and it is not the console's localhost origin).
    const onIp = await person.post(`/api/approvals/${approvalId}/approve`, {
      assertion: a.assert({ challenge: challenge.challenge, origin: person.origin }),
    });
    expect(onIp.status).toBe(409);
    // Malformed.
    expect(
      (await person.post(`/api/approvals/${approvalId}/approve`, { assertion: { credentialId: "x" } })).status,
    ).toBe(400);

    const local = await onLocalhost(`/approvals/${approvalId}`);
    expect((await onLocalhost("//evil.example")).origin).toBe(local.origin);
    // Made on another localhost port: not this console.
    const other = await local.post(`/api/approvals/${approvalId}/approve`, {
      assertion: a.assert({ challenge: challenge.challenge, origin: "http://localhost:1" }),
    });
    expect(other.status).toBe(409);
    const ok = await local.post(`/api/approvals/${approvalId}/approve`, {
      assertion: a.assert({ challenge: challenge.challenge, origin: local.origin }),
    });
    expect(ok.status, ok.body).toBe(200);
    expect(JSON.parse(ok.body).approval).toMatchObject({ approvalId, status: "approved" });
    const kept = parseKept(await f.pa.journal.approvalAssertion(approvalId))!;
    expect(kept).toMatchObject({ origin: local.origin, challenge: challenge.challenge, signCount: a.counter });

    const paid = await f.pa.engine.pay({ action: "servers.provision", input: { ...SMALL_SERVER }, approvalId });
    expect(paid.status).toBe("pending");
  });
});
