/**
 * The desktop approval over real stdio, as Claude Desktop launches the server: the built CLI
 * (`node dist/cli.js serve`, its embedded sandbox) and the v1 SDK's client declaring no
 * elicitation, in an environment that is a desktop session (DISPLAY) whose `xdg-open` and
 * `notify-send` are fakes first on PATH. The server process itself spawns the opener, handed
 * the sign-in page's path (no token on any command line while it runs); the person approves
 * on that page while the call waits, and the call pays once. A second payment is opened
 * afresh: once per approval, not once per server.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loginAsPerson } from "../helpers/console-person.js";
import { commandLines, fakeDesktop } from "../helpers/desktop.js";
import { readLoginPage } from "../helpers/login-page.js";
import { call, cleanupAll, ensureBuilt, sc, serviceGet, SMALL_SERVER, startServer, text } from "../helpers/mcp.js";
import { elapse } from "../helpers/wait.js";

const root = mkdtempSync(join(tmpdir(), "pam-desktop-stdio-"));
const desktop = fakeDesktop(root);
beforeAll(() => ensureBuilt(), 90_000);
afterEach(() => cleanupAll());
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("mcp e2e: a host without elicitation, on a desktop", () => {
  it("the server opens the approval's page by path (no token on a command line); approved there, the waiting call pays once", async () => {
    const name = "stdio";
    const s = await startServer({ delayMs: 200, env: { PAID_ACTIONS_APPROVAL_ABOVE: "0.1", ...desktop.env(name) } });
    await s.client.listTools();
    const calling = call(s.client, "servers_provision", { ...SMALL_SERVER, image: "desktop-stdio" }, 60_000);
    const [argv] = await desktop.waitOpened(name, 1, 30_000);
    expect(argv).toHaveLength(1);
    const page = readLoginPage(argv![0]!);
    const seen = new Set<string>();
    for (let i = 0; i < 5; i++) {
      for (const line of commandLines()) seen.add(line);
      await elapse(100); // half a second of the opener's 3 s: there is no event to wait for
    }
    expect([...seen].some((l) => l.includes(`${desktop.bin}/xdg-open ${argv![0]}`))).toBe(true);
    expect([...seen].filter((l) => l.includes(page.token))).toEqual([]);

    const approvalId = page.next.split("/").pop()!;
    const person = await loginAsPerson(pathToFileURL(page.path).href);
    expect((await person.approve(approvalId)).status).toBe(200);
    const paid = await calling;
    expect(paid.isError ?? false, text(paid)).toBe(false);
    expect(sc(paid).payment.amount).toBe("0.288");
    expect((await serviceGet(s.home, "/executions")).items).toHaveLength(1);
    expect(desktop.notified(name)).toHaveLength(1);
    expect(desktop.notified(name)[0]!.join(" ")).toContain(approvalId);
    expect(s.stderr()).not.toContain(page.token);

    // Another payment is another approval: its own page, opened once more.
    const second = call(s.client, "servers_provision", { ...SMALL_SERVER, image: "desktop-stdio-2" }, 60_000);
    const runs = await desktop.waitOpened(name, 2, 30_000);
    const other = readLoginPage(runs[1]![0]!);
    expect(other.next).not.toBe(page.next);
    const otherId = other.next.split("/").pop()!;
    expect((await (await loginAsPerson(pathToFileURL(other.path).href)).decline(otherId)).status).toBe(200);
    expect(sc(await second).error.code).toBe("approval_declined");
    expect((await serviceGet(s.home, "/executions")).items).toHaveLength(1);
  });
});
