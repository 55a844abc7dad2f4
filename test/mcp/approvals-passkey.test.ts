/**
 * A host whose only question is its own form, with a passkey registered: the form's accept
 * could not carry the passkey's assertion, so it would approve nothing. The server does not
 * show it. Over real stdio with the v1 client (a 2025 connection declaring form elicitation):
 * on a desktop, the approval's console page is opened (where the passkey works) and the call
 * waits for the decision made there; without one, the call answers approval_required with its
 * approvalId and nothing is paid. Before the passkey, the same host gets its form.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { ElicitRequest } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Journal } from "../../src/engine/journal/sqlite.js";
import { loginAsPerson } from "../helpers/console-person.js";
import { fakeDesktop } from "../helpers/desktop.js";
import { readLoginPage } from "../helpers/login-page.js";
import { call, cleanupAll, ensureBuilt, sc, serviceGet, SMALL_SERVER, startServer } from "../helpers/mcp.js";

const root = mkdtempSync(join(tmpdir(), "pam-passkey-form-"));
const desktop = fakeDesktop(root);
const LIMITS = { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" };

beforeAll(() => ensureBuilt(), 90_000);
afterEach(() => cleanupAll());
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Registers a passkey in the server's journal, as `passkey add` leaves it. */
function registerPasskey(home: string): void {
  const journal = new Journal(join(home, "journal.sqlite"));
  try {
    journal.insertPasskey({
      credentialId: "cred_test_passkey_00000000000",
      publicKey: "AQID",
      algorithm: -7,
      rpId: "localhost",
      signCount: 0,
      label: "laptop",
      owner: null,
      ownerSignature: null,
      createdAt: Date.now(),
      removedAt: null,
    });
  } finally {
    journal.close();
  }
}

describe("mcp e2e: a form-only host with a passkey registered", () => {
  it("without a desktop: no form is shown, the call answers approval_required with its approvalId, nothing is paid", async () => {
    const asked: ElicitRequest[] = [];
    const s = await startServer({
      delayMs: 100,
      env: LIMITS,
      elicit: (request) => {
        asked.push(request);
        return { action: "accept", content: { approve: true } };
      },
    });
    await s.client.listTools();
    // Before the passkey: the host's form is the question.
    const before = await call(s.client, "servers_provision", { ...SMALL_SERVER, image: "before-passkey" });
    expect(before.isError ?? false).toBe(false);
    expect(asked).toHaveLength(1);
    expect((asked[0]!.params as { mode?: string }).mode ?? "form").toBe("form");

    registerPasskey(s.home);
    const after = await call(s.client, "servers_provision", { ...SMALL_SERVER, image: "after-passkey" });
    expect(after.isError).toBe(true);
    expect(sc(after).error.code).toBe("approval_required");
    expect(sc(after).error.approvalId).toMatch(/^apr_/);
    expect(sc(after).error.message).toContain("console");
    expect(asked).toHaveLength(1); // no second form
    expect((await serviceGet(s.home, "/executions")).items).toHaveLength(1); // only the one before
  });

  it("on a desktop: the approval's console page is opened instead of the form, and the call waits for the decision there", async () => {
    const name = "passkey-form";
    const asked: ElicitRequest[] = [];
    const s = await startServer({
      delayMs: 100,
      env: { ...LIMITS, ...desktop.env(name) },
      elicit: (request) => {
        asked.push(request);
        return { action: "accept", content: { approve: true } };
      },
    });
    await s.client.listTools();
    registerPasskey(s.home);
    const calling = call(s.client, "servers_provision", { ...SMALL_SERVER, image: "desktop-passkey" }, 60_000);
    const [argv] = await desktop.waitOpened(name, 1, 30_000);
    const page = readLoginPage(argv![0]!);
    const approvalId = page.next.split("/").pop()!;
    expect(asked).toHaveLength(0);
    // The person declines on the page (declining needs no passkey): the waiting call ends with it.
    const person = await loginAsPerson(pathToFileURL(page.path).href);
    expect((await person.decline(approvalId)).status).toBe(200);
    const declined = await calling;
    expect(declined.isError).toBe(true);
    expect(sc(declined).error.code).toBe("approval_declined");
    expect((await serviceGet(s.home, "/executions")).items).toHaveLength(0);
  });
});
