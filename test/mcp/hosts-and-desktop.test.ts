/**
 * Pure tables for reaching the person: whether a desktop session is there to bring an
 * approval to (app/desktop.ts desktopSession), which hosts open a URL-mode link inside
 * themselves (mcp/approvals.ts opensLinksInside, by clientInfo name), what the notifiers are
 * handed on each OS (the words on stdin where the OS allows, never a token or a code), and
 * what a notification says.
 */
import { describe, expect, it } from "vitest";
import { desktopSession, notifierCommand } from "../../src/app/desktop.js";
import { loadConfig } from "../../src/engine/config/config.js";
import { approvalNotice, opensLinksInside } from "../../src/mcp/approvals.js";

describe("desktopSession", () => {
  it.each([
    ["linux", { DISPLAY: ":0" }, true],
    ["linux", { WAYLAND_DISPLAY: "wayland-0" }, true],
    ["linux", { DISPLAY: "localhost:10.0", SSH_CONNECTION: "10.0.0.2 5 10.0.0.1 22" }, true], // X forwarded to the person's screen
    ["linux", {}, false],
    ["linux", { DISPLAY: "" }, false],
    ["linux", { SSH_CONNECTION: "10.0.0.2 5 10.0.0.1 22" }, false],
    ["freebsd", { DISPLAY: ":0" }, true],
    ["darwin", {}, true],
    ["darwin", { SSH_CONNECTION: "10.0.0.2 5 10.0.0.1 22" }, false],
    ["darwin", { SSH_TTY: "/dev/ttys001" }, false],
    ["win32", {}, true],
    ["win32", { SSH_CLIENT: "10.0.0.2 5 22" }, false],
    ["aix", { DISPLAY: ":0" }, false],
    ["android", {}, false],
  ] as const)("%s %j: %s", (platform, env, expected) => {
    expect(desktopSession(env, platform)).toBe(expected);
  });
});

describe("opensLinksInside (by clientInfo.name)", () => {
  it.each([
    ["Visual Studio Code", true],
    ["Visual Studio Code - Insiders", true],
    ["Visual-Studio-Code", true],
    ["Code - OSS", true],
    ["VSCodium", true],
    ["claude-code", false],
    ["claude-ai", false],
    ["cursor-vscode", false],
    ["Visual Studio", false],
    ["my-visual studio code wrapper", false],
    [undefined, false],
  ] as const)("%s: %s", (name, expected) => {
    expect(opensLinksInside(name)).toBe(expected);
  });
});

describe("the notifiers", () => {
  const title = `Payment waiting for your approval`;
  const body = `0.288 USDC for servers.provision to "Bob's" \\ payee (approval apr_1).`;
  it("Linux: notify-send with the words as arguments (they name the payment, nothing secret)", () => {
    expect(notifierCommand(title, body, "linux")).toEqual({
      command: "notify-send",
      args: ["--app-name=paid-actions-mcp", title, body],
    });
  });
  it("macOS: osascript reads its script on stdin, the words quoted for AppleScript", () => {
    const c = notifierCommand(title, body, "darwin");
    expect(c.command).toBe("osascript");
    expect(c.args).toEqual(["-"]);
    expect(c.stdin).toBe(
      `display notification "0.288 USDC for servers.provision to \\"Bob's\\" \\\\ payee (approval apr_1)." with title "${title}"\n`,
    );
  });
  it("Windows: a PowerShell toast script on stdin, the words quoted for PowerShell", () => {
    const c = notifierCommand(title, body, "win32");
    expect(c.command).toBe("powershell.exe");
    expect(c.args).toEqual(["-NoProfile", "-NonInteractive", "-Command", "-"]);
    expect(c.stdin).toContain(`CreateTextNode('${title}')`);
    expect(c.stdin).toContain(
      `CreateTextNode('0.288 USDC for servers.provision to "Bob''s" \\ payee (approval apr_1).')`,
    );
    expect(c.args.join(" ")).not.toContain("0.288");
  });
});

describe("approvalNotice", () => {
  it("names the payment, its expiry and approval, and not its input", () => {
    const notice = approvalNotice(
      {
        approvalId: "apr_9",
        paidFor: "servers.provision",
        amount: "0.288",
        currency: "USDC",
        payee: "Payee111",
        expiresAt: "2026-09-01T10:00:00.000Z",
        input: { secretish: "owner's passport number" },
      },
      true,
    );
    expect(notice.title).toBe("Payment waiting for your approval (sandbox)");
    expect(notice.body).toContain("0.288 USDC for servers.provision to Payee111");
    expect(notice.body).toContain("apr_9");
    expect(notice.body).toContain("2026-09-01T10:00:00.000Z");
    expect(notice.body).not.toContain("passport");
  });
});

describe("PAID_ACTIONS_OPEN_APPROVALS / openApprovals", () => {
  const load = (env: Record<string, string>, file?: unknown) =>
    loadConfig(
      { PAID_ACTIONS_HOME: "/tmp/pam-open-approvals", ...env, ...(file ? { PAID_ACTIONS_CONFIG: "/cfg.json" } : {}) },
      () => JSON.stringify(file),
    );
  it.each([
    [{}, undefined, "auto"],
    [{ PAID_ACTIONS_OPEN_APPROVALS: "" }, undefined, "auto"],
    [{ PAID_ACTIONS_OPEN_APPROVALS: "never" }, undefined, "never"],
    [{ PAID_ACTIONS_OPEN_APPROVALS: " Auto " }, undefined, "auto"],
    [{}, { openApprovals: "never" }, "never"],
    [{ PAID_ACTIONS_OPEN_APPROVALS: "auto" }, { openApprovals: "never" }, "auto"], // the environment wins
  ] as const)("%j with the file %j: %s", (env, file, expected) => {
    const r = load(env, file);
    expect(r.ok && r.config.openApprovals).toBe(expected);
  });
  it("anything else is an issue naming the key, and pays nothing", () => {
    const r = load({ PAID_ACTIONS_OPEN_APPROVALS: "always" });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.issues).toEqual([
      { key: "PAID_ACTIONS_OPEN_APPROVALS", message: '"always" is not auto or never' },
    ]);
    const f = load({}, { openApprovals: "sometimes" });
    expect(!f.ok && f.issues.map((i) => i.key)).toEqual(["/cfg.json:openApprovals"]);
  });
});
