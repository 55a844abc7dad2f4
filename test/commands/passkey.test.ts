/**
 * `paid-actions-mcp passkey` and `approve` with a passkey registered, the built CLI over the
 * journal a real engine writes (against the sandbox): list, the refusals without a terminal,
 * the owner's binding handed back with `submit` (only the owner's signature of the passkey's
 * statement is kept), and `approve <id>` handing the person the console's page on localhost
 * and waiting until the approval is decided there.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { approvalChallenge } from "../../src/engine/approvals/passkeys.js";
import { passkeyStatement } from "../../src/engine/approvals/passkey-admin.js";
import { addressOfKeypair, signStatement } from "../../src/engine/evidence/owner.js";
import { generateKeypairBytes, readKeypairFile } from "../../src/domain/keypair.js";
import type { PaidActionError } from "../../src/engine/errors.js";
import { softAuthenticator } from "../helpers/authenticator.js";
import { engineFixture, refusal, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { runCli } from "../helpers/mcp.js";
import { ensureBuilt } from "../helpers/process.js";
import { runInPty } from "./pty.js";

let f: EngineFixture;
const a = softAuthenticator("ES256", { counter: 1 });
const env = () => f.env as Record<string, string>;

beforeAll(async () => {
  ensureBuilt();
  f = await engineFixture({ env: { PAID_ACTIONS_APPROVAL_ABOVE: "0.1", PAID_ACTIONS_MAX_TOTAL: "100" } });
}, 120_000);
afterAll(() => f?.close());

describe("passkey, at the command line", () => {
  it("list says none; add and remove need a person at a terminal (exit 2); usage errors exit 2", async () => {
    const none = await runCli(["passkey", "list"], env());
    expect(none.code).toBe(0);
    expect(none.stdout).toContain("No passkey is registered");
    expect(JSON.parse((await runCli(["passkey", "list", "--json"], env())).stdout)).toEqual({ items: [] });
    for (const args of [
      ["passkey", "add"],
      ["passkey", "remove", "abcdefgh"],
    ]) {
      const r = await runCli(args, env());
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toContain("needs a person at an interactive terminal; nothing changed");
    }
    for (const args of [
      ["passkey"],
      ["passkey", "grant"],
      ["passkey", "add", "--owner-keypair", "x", "--unsigned"],
      ["passkey", "list", "--label", "x"],
      ["passkey", "submit", "abc"],
    ]) {
      expect((await runCli(args, env())).code, args.join(" ")).toBe(2);
    }
  });

  it("submit keeps the owner's signature of the passkey's statement, and nothing else", async () => {
    await f.pa.journal.insertPasskey({
      credentialId: a.credentialId,
      publicKey: a.publicKey,
      algorithm: -7,
      rpId: "localhost",
      signCount: a.counter,
      label: "laptop",
      owner: null,
      ownerSignature: null,
      createdAt: Date.now(),
      removedAt: null,
    });
    // No owner configured: the owner is the agent key's own address.
    const keypair = readKeypairFile(env().PAID_ACTIONS_WALLET!);
    const owner = addressOfKeypair(keypair);
    const statement = passkeyStatement(
      { credentialId: a.credentialId, publicKey: a.publicKey, rpId: "localhost" },
      owner,
    );
    const stranger = signStatement(statement, generateKeypairBytes());
    const wrong = await runCli(["passkey", "submit", a.credentialId, stranger], env());
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(`that is not ${owner}'s signature`);
    const unknown = await runCli(["passkey", "submit", "nosuchcredential", signStatement(statement, keypair)], env());
    expect(unknown.code).toBe(1);
    const right = await runCli(["passkey", "submit", a.credentialId, signStatement(statement, keypair)], env());
    expect(right.stderr).toBe("");
    expect(right.code).toBe(0);
    expect(right.stdout).toContain(`bound to the owner ${owner}`);
    const listed = JSON.parse((await runCli(["passkey", "list", "--json"], env())).stdout) as { items: unknown[] };
    expect(listed.items).toEqual([
      expect.objectContaining({ credentialId: a.credentialId, label: "laptop", owner, removedAt: null }),
    ]);
    expect((await runCli(["passkey", "list"], env())).stdout).toContain(`owner: ${owner}`);
  });

  it("approve <id> hands the person the console's page on localhost and waits until it is decided there", async () => {
    const e = await refusal(f.pa.engine.pay({ action: "servers.provision", input: { ...SMALL_SERVER } }));
    const approvalId = (e as PaidActionError<"approval_required">).context.approvalId;
    const run = runInPty(["approve", approvalId], env(), 60_000);
    await run.waitFor(/Approval page: http:\/\/localhost:\d+\/login\?token=\S+next=%2Fapprovals%2Fapr_/);
    expect(run.screen()).not.toContain("Type 0.288 to approve");
    // The person approves on the page with the passkey (as the console's API does).
    const c = (await approvalChallenge(f.pa.journal, approvalId))!;
    const origin = "http://localhost:1234";
    await f.pa.engine.approve(approvalId, "console", {
      assertion: a.assert({ challenge: c.challenge, origin }),
      origin,
    });
    await run.waitFor(`Approval ${approvalId} is approved (decided in the console).`);
    expect((await run.exit).code).toBe(0);
    const paid = await f.pa.engine.pay({ action: "servers.provision", input: { ...SMALL_SERVER }, approvalId });
    expect(paid.status).toBe("pending");
  });
});
