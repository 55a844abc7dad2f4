/**
 * A host that declares no elicitation (Claude Desktop), in both protocol eras: with
 * PAID_ACTIONS_OPEN_APPROVALS=auto (the default) and a desktop session, the server brings a
 * payment above the threshold to the person itself — the console's page for that approval
 * opened in the browser and a notification, once per approval — and waits for the decision
 * made there like a URL-mode call. The OS boundary is a fake `xdg-open` and `notify-send`
 * first on PATH (test/helpers/desktop.ts); while the opener runs, every process's command
 * line is read: the sign-in token is on none. The person is real HTTP against the real
 * console; the money is the sandbox's ledger.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, sep } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { openJournal } from "../../src/app/index.js";
import { loginAsPerson } from "../helpers/console-person.js";
import { commandLines, fakeDesktop } from "../helpers/desktop.js";
import { readLoginPage } from "../helpers/login-page.js";
import { callTool, ERAS, inProcessSuite } from "../helpers/inproc.js";
import { elapse } from "../helpers/wait.js";

const SMALL_SERVER = { region: "eu-west-1", plan: "small", durationHours: 24 } as const; // 0.288 USDC
const PRICE = 288_000n;
const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;

const suite = inProcessSuite({ prefix: "pam-desktop-approval", providerDelayMs: 200 });
const balance = () => suite.sandbox().usdc(suite.sandbox().wallet.address);
const NEEDS_APPROVAL = { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" };
const root = mkdtempSync(join(tmpdir(), "pam-desktop-"));
const desktop = fakeDesktop(root);
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function statusOf(env: Record<string, string>, approvalId: string) {
  const j = await openJournal(env);
  try {
    return (await j.journal.approval(approvalId))?.status;
  } finally {
    await j.close();
  }
}

/** The sign-in page the opener of run `i` was handed, checked to be a path in the home's console folder. */
function pageOpened(env: Record<string, string>, argv: string[]) {
  expect(argv).toHaveLength(1);
  expect(argv[0]!.startsWith(join(env.PAID_ACTIONS_HOME!, "console") + sep)).toBe(true);
  return readLoginPage(argv[0]!);
}

describe.each(ERAS)("%s era: no elicitation, a desktop session", (era) => {
  it("opens the approval's page once, no token on any command line; approved there, the agent's retry pays exactly once", async () => {
    const name = `once-${era}`;
    const env = suite.env({ ...NEEDS_APPROVAL, ...desktop.env(name) });
    const s = await suite.start({ env, era, approvalTimeoutMs: 2_500 });
    const before = await balance();
    const args = { ...SMALL_SERVER, image: `desktop-${era}` };
    const calling = callTool(s.client, "servers_provision", args, 30_000);

    // While the opener runs (it lingers 3 s), read every command line a few times.
    const [argv] = await desktop.waitOpened(name);
    const page = pageOpened(env, argv!);
    const seen = new Set<string>();
    for (let i = 0; i < 5; i++) {
      for (const line of commandLines()) seen.add(line);
      await elapse(100); // samples half a second of the opener's 3 s: there is no event to wait for
    }
    expect([...seen].some((l) => l.includes(`${desktop.bin}/xdg-open ${argv![0]}`))).toBe(true);
    expect([...seen].filter((l) => l.includes(page.token))).toEqual([]);

    // No decision within the call's wait: approval_required, pending, nothing paid.
    const refused = await calling;
    const error = sc(refused).error;
    expect(error.code).toBe("approval_required");
    const approvalId = String(error.approvalId);
    expect(page.next).toBe(`/approvals/${approvalId}`);
    expect(error.message).toMatch(
      /^its page was opened in the browser on this computer; no decision yet after \d+ s; /,
    );
    expect(error.message).toContain("nothing was paid");
    expect(error.consoleUrl).toBeUndefined();
    expect(await statusOf(env, approvalId)).toBe("pending");
    expect(await balance()).toBe(before);

    // The notification names the payment, and holds no token.
    const notes = desktop.notified(name);
    expect(notes).toHaveLength(1);
    expect(notes[0]!.join(" ")).toContain(`0.288 USDC for servers.provision`);
    expect(notes[0]!.join(" ")).toContain(approvalId);
    expect(notes[0]!.join(" ")).not.toContain(page.token);
    expect(s.log()).not.toContain(page.token);

    // The person approves on the page the opener was handed; the agent's retry pays, once.
    const person = await loginAsPerson(pathToFileURL(page.path).href);
    expect((await person.approve(approvalId)).status).toBe(200);
    const paid = await callTool(s.client, "servers_provision", { ...args, approvalId }, 30_000);
    expect(paid.isError).toBeFalsy();
    expect(await balance()).toBe(before - PRICE);
    const again = await callTool(s.client, "servers_provision", { ...args, approvalId }, 30_000);
    expect(sc(again).executionId).toBe(sc(paid).executionId);
    expect(await balance()).toBe(before - PRICE);
    expect(await statusOf(env, approvalId)).toBe("used");
    // Opened once for this approval, however many calls asked.
    expect(desktop.opened(name)).toHaveLength(1);
    expect(desktop.notified(name)).toHaveLength(1);
  });

  it("approved on the page while the call waits: the same call pays, once", async () => {
    const name = `waiting-${era}`;
    const env = suite.env({ ...NEEDS_APPROVAL, ...desktop.env(name) });
    const s = await suite.start({ env, era, approvalTimeoutMs: 20_000 });
    const before = await balance();
    const calling = callTool(s.client, "servers_provision", { ...SMALL_SERVER, image: `desktop-wait-${era}` }, 40_000);
    const [argv] = await desktop.waitOpened(name);
    const page = pageOpened(env, argv!);
    const approvalId = page.next.split("/").pop()!;
    const person = await loginAsPerson(pathToFileURL(page.path).href);
    const approved = await person.approve(approvalId);
    expect(approved.status).toBe(200);
    const paid = await calling;
    expect(paid.isError, JSON.stringify(sc(paid))).toBeFalsy();
    expect(sc(paid).executionId).toMatch(/^exe_/);
    expect(await balance()).toBe(before - PRICE);
    expect(await statusOf(env, approvalId)).toBe("used");
  });

  it("declined on the page while the call waits: nothing paid, the call says so", async () => {
    const name = `declined-${era}`;
    const env = suite.env({ ...NEEDS_APPROVAL, ...desktop.env(name) });
    const s = await suite.start({ env, era, approvalTimeoutMs: 20_000 });
    const before = await balance();
    const calling = callTool(s.client, "servers_provision", { ...SMALL_SERVER, image: `desktop-no-${era}` }, 40_000);
    const [argv] = await desktop.waitOpened(name);
    const page = pageOpened(env, argv!);
    const approvalId = page.next.split("/").pop()!;
    expect((await (await loginAsPerson(pathToFileURL(page.path).href)).decline(approvalId)).status).toBe(200);
    expect(sc(await calling).error.code).toBe("approval_declined");
    expect(await balance()).toBe(before);
  });

  it.each([
    ["PAID_ACTIONS_OPEN_APPROVALS=never", { PAID_ACTIONS_OPEN_APPROVALS: "never" }],
    ["no desktop session (no DISPLAY)", { DISPLAY: "" }],
  ])("%s: refused at once with the approvalId, nothing opened or shown", async (label, extra) => {
    const name = `off-${era}-${label.length}`;
    const env = suite.env({ ...NEEDS_APPROVAL, ...desktop.env(name), ...extra });
    const s = await suite.start({ env, era, approvalTimeoutMs: 20_000 });
    const started = Date.now();
    const refused = await callTool(s.client, "servers_provision", { ...SMALL_SERVER, image: `off-${name}` });
    expect(sc(refused).error.code).toBe("approval_required");
    expect(sc(refused).error.message).not.toContain("its page was opened");
    expect(Date.now() - started).toBeLessThan(15_000); // it did not wait for a person
    // A negative check: an opener the call started would have written its log by now; wait a
    // little for one that was spawned but has not run yet.
    await elapse(300);
    expect(desktop.opened(name)).toEqual([]);
    expect(desktop.notified(name)).toEqual([]);
  });

  it("a host that declares elicitation is asked itself: nothing is opened on the desktop", async () => {
    const name = `asks-${era}`;
    const env = suite.env({ ...NEEDS_APPROVAL, ...desktop.env(name) });
    const s = await suite.start({ env, era, elicit: () => ({ action: "decline" }) });
    const refused = await callTool(s.client, "servers_provision", { ...SMALL_SERVER, image: `asks-${era}` });
    expect(sc(refused).error.code).toBe("approval_declined");
    await elapse(300); // as above: no event marks an opener that never runs
    expect(desktop.opened(name)).toEqual([]);
  });
});
