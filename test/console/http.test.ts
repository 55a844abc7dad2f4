/**
 * The console over real HTTP on 127.0.0.1, on the same home as a real MCP server (in
 * process) paying a real sandbox: the login link, the cookie, the Host, Origin and CSRF
 * checks, approving and declining (with the PIN when set) exactly as the terminal does — the
 * agent's next call pays, or pays nothing — the live approvals stream, and the read API
 * (timeline, spending by action, transcripts without secrets, audit), and the assets.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startConsole, type ConsoleHandle } from "../../src/console/server.js";
import { parseDecimal } from "../../src/domain/money.js";
import { clearPin, setPin } from "../../src/engine/approvals/pin.js";
import { startConsoleWithAgent, type ConsoleWithAgent, type HomeJournal } from "../helpers/console-with-agent.js";
import { loginAsPerson, type ConsolePerson } from "../helpers/console-person.js";
import { openEvents, rawRequest } from "../helpers/console-http.js";
import { SMALL_SERVER } from "../helpers/engine.js";
import { callTool, type InProcServer } from "../helpers/inproc.js";
import { startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const PRICE = 288_000n;
const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;

let t: TestSandbox;
let home: string;
let agent: InProcServer;
let j: HomeJournal;
let handle: ConsoleHandle;
let person: ConsolePerson;
let withAgent: ConsoleWithAgent | undefined;

beforeAll(async () => {
  t = await startTestSandbox({ providerDelayMs: 300 });
  withAgent = await startConsoleWithAgent(t, { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" });
  ({ home, agent, j, handle, person } = withAgent);
}, 60_000);

afterAll(async () => {
  await withAgent?.close();
  await t?.close();
});

const balance = () => t.usdc(t.wallet.address);

/** The agent asks to buy; above the threshold it is refused with an approvalId. */
async function askForApproval(): Promise<string> {
  const refused = await callTool(agent.client, "servers_provision", { ...SMALL_SERVER });
  expect(refused.isError).toBe(true);
  expect(sc(refused).error.code).toBe("approval_required");
  return sc(refused).error.approvalId as string;
}

async function approvalStatus(id: string): Promise<string> {
  const res = await person.get(`/api/approvals/${id}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as any).approval.status;
}

describe("console: getting in", () => {
  it("a login link works once, sets an HttpOnly SameSite=Strict cookie and sends the browser to `next` (a path of the console only)", async () => {
    const url = handle.loginUrl("/approvals/apr_x");
    expect(url.startsWith(`http://127.0.0.1:${handle.port}/login?token=`)).toBe(true);
    const first = await fetch(url, { redirect: "manual" });
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe("/approvals/apr_x");
    const cookie = first.headers.get("set-cookie")!;
    expect(cookie).toMatch(new RegExp(`^pam_console_${handle.port}=[A-Za-z0-9_-]{40,}; `));
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    expect(cookie).toContain("Path=/");
    const session = await fetch(new URL("/api/session", handle.origin), { headers: { cookie: cookie.split(";")[0]! } });
    expect(session.status).toBe(200);
    const body = (await session.json()) as any;
    expect(body).toMatchObject({ pinRequired: false, home, journal: j.journal.location });
    expect(typeof body.csrf).toBe("string");
    expect(body.csrf.length).toBeGreaterThan(30);

    const again = await fetch(url, { redirect: "manual" });
    expect(again.status).toBe(403);
    expect(again.headers.get("set-cookie")).toBeNull();
    expect(await again.text()).toContain("paid-actions-mcp console");

    const forged = await fetch(`${handle.origin}/login?token=${"A".repeat(43)}`, { redirect: "manual" });
    expect(forged.status).toBe(403);
    for (const next of ["//evil.example/x", "https://evil.example/", "/\\evil.example", "approvals"]) {
      const res = await fetch(handle.loginUrl(next), { redirect: "manual" });
      expect(res.status).toBe(303);
      expect(res.headers.get("location")).toBe("/");
    }
  });

  it("without the cookie: 401 on pages (HTML naming the command), API (JSON) and assets; with a foreign Host: refused", async () => {
    const page = await fetch(`${handle.origin}/approvals`);
    expect(page.status).toBe(401);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(await page.text()).toContain("paid-actions-mcp console");
    const api = await fetch(`${handle.origin}/api/approvals`);
    expect(api.status).toBe(401);
    expect(((await api.json()) as any).error.code).toBe("unauthorized");
    expect((await fetch(`${handle.origin}/api/events`)).status).toBe(401);
    expect((await fetch(`${handle.origin}/assets/index.html`)).status).toBe(401);
    const stale = await fetch(`${handle.origin}/api/session`, {
      headers: { cookie: `pam_console_${handle.port}=not-a-session` },
    });
    expect(stale.status).toBe(401);

    for (const host of ["evil.example", `evil.example:${handle.port}`, `127.0.0.1:${handle.port + 1}`, "127.0.0.1"]) {
      const res = await rawRequest(handle.port, { path: "/api/session", headers: { host, cookie: person.cookie } });
      expect(res.status, host).toBe(421);
      expect(res.body).not.toContain("csrf");
    }
    const named = await rawRequest(handle.port, {
      path: "/api/session",
      headers: { host: `localhost:${handle.port}`, cookie: person.cookie },
    });
    expect(named.status).toBe(200);
  });

  it("every answer carries the CSP and the other security headers, and no CORS header", async () => {
    for (const res of [
      await person.get("/"),
      await person.get("/api/approvals"),
      await fetch(`${handle.origin}/api/approvals`),
    ]) {
      expect(res.headers.get("content-security-policy")).toBe(
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
      );
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
    }
  });
});

describe("console: deciding", () => {
  it("a write without the Origin, from another Origin, or without the right CSRF token is refused and the approval stays pending; then approving lets the agent's next call pay", async () => {
    const before = await balance();
    const approvalId = await askForApproval();
    const path = `/api/approvals/${approvalId}/approve`;
    const base = { cookie: person.cookie, "content-type": "application/json" };
    const attempts: Array<[string, Record<string, string>]> = [
      ["no Origin", { ...base, "x-csrf-token": person.csrf }],
      ["a foreign Origin", { ...base, origin: "http://evil.example", "x-csrf-token": person.csrf }],
      ["another port", { ...base, origin: `http://127.0.0.1:${handle.port + 1}`, "x-csrf-token": person.csrf }],
      [
        "localhost under a 127.0.0.1 Host",
        { ...base, origin: `http://localhost:${handle.port}`, "x-csrf-token": person.csrf },
      ],
      ["no CSRF token", { ...base, origin: handle.origin }],
      ["a wrong CSRF token", { ...base, origin: handle.origin, "x-csrf-token": `${person.csrf.slice(0, -2)}xx` }],
    ];
    for (const [what, headers] of attempts) {
      const res = await rawRequest(handle.port, { method: "POST", path, headers, body: "{}" });
      expect(res.status, what).toBe(403);
      expect(JSON.parse(res.body).error.code, what).toBe("forbidden");
    }
    expect(await approvalStatus(approvalId)).toBe("pending");
    expect(await balance()).toBe(before);

    const approved = await person.approve(approvalId);
    expect(approved.status).toBe(200);
    const review = ((await approved.json()) as any).approval;
    expect(review).toMatchObject({
      approvalId,
      status: "approved",
      action: "servers.provision",
      amount: "0.288",
      input: SMALL_SERVER,
    });

    const paid = await callTool(agent.client, "servers_provision", { ...SMALL_SERVER, approvalId });
    expect(paid.isError ?? false, JSON.stringify(sc(paid))).toBe(false);
    expect(sc(paid).executionId).toMatch(/^exe_/);
    expect(await balance()).toBe(before - PRICE);
    expect(await approvalStatus(approvalId)).toBe("used");

    // Single use: the console cannot approve it again.
    const twice = await person.approve(approvalId);
    expect(twice.status).toBe(409);
    expect(((await twice.json()) as any).error.code).toBe("approval_invalid");
    expect((await person.approve("apr_doesnotexist")).status).toBe(404);
  });

  it("declining: the agent's next call is refused with approval_declined and nothing is paid", async () => {
    const before = await balance();
    const spentBefore = (await j.engine.spending()).spentTotal;
    const approvalId = await askForApproval();
    const declined = await person.decline(approvalId);
    expect(declined.status).toBe(200);
    expect(((await declined.json()) as any).approval.status).toBe("declined");
    const refused = await callTool(agent.client, "servers_provision", { ...SMALL_SERVER, approvalId });
    expect(refused.isError).toBe(true);
    expect(sc(refused).error.code).toBe("approval_declined");
    expect(await balance()).toBe(before);
    expect((await j.engine.spending()).spentTotal).toBe(spentBefore);
    expect((await person.approve(approvalId)).status).toBe(409);
  });

  it("with a PIN set: a missing or wrong PIN is refused (slowly) and decides nothing; the right one approves", async () => {
    await setPin(home, "7319-blue");
    try {
      expect(((await (await person.get("/api/session")).json()) as any).pinRequired).toBe(true);
      const approvalId = await askForApproval();
      const missing = await person.approve(approvalId);
      expect(missing.status).toBe(403);
      expect(((await missing.json()) as any).error.code).toBe("pin_invalid");
      const started = Date.now();
      const wrong = await person.approve(approvalId, "7319-bleu");
      expect(wrong.status).toBe(403);
      expect(((await wrong.json()) as any).error.code).toBe("pin_invalid");
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      expect((await person.decline(approvalId, "0000")).status).toBe(403);
      expect(await approvalStatus(approvalId)).toBe("pending");
      const right = await person.approve(approvalId, "7319-blue");
      expect(right.status).toBe(200);
      expect(await approvalStatus(approvalId)).toBe("approved");
    } finally {
      await clearPin(home);
    }
  });
});

describe("console: live updates", () => {
  it("streams the pending approvals at once, a new one within a couple of seconds of the agent's call, and the execution's changes", async () => {
    const stream = await openEvents(handle.port, person.cookie);
    try {
      expect(stream.status).toBe(200);
      expect(stream.contentType).toContain("text/event-stream");
      const first = await stream.next((e) => e.event === "approvals", 3_000);
      expect(Array.isArray(first.data.items)).toBe(true);
      // No wait for the stream's first look: it compares with the pending set it told at once,
      // and the execution's changes come after that look, which tells the approval.
      const asked = Date.now();
      const approvalId = await askForApproval();
      const live = await stream.next(
        (e) => e.event === "approvals" && e.data.items.some((a: any) => a.approvalId === approvalId),
        2_500,
      );
      expect(Date.now() - asked).toBeLessThan(2_500);
      expect(live.data.items.find((a: any) => a.approvalId === approvalId)).toMatchObject({
        status: "pending",
        amount: "0.288",
        input: SMALL_SERVER,
      });

      expect((await person.approve(approvalId)).status).toBe(200);
      await stream.next(
        (e) => e.event === "approvals" && !e.data.items.some((a: any) => a.approvalId === approvalId),
        2_500,
      );
      const paid = sc(await callTool(agent.client, "servers_provision", { ...SMALL_SERVER, approvalId }));
      const changedFor = (e: { event: string; data: any }) =>
        e.event === "executions" && e.data.changed.includes(paid.executionId);
      await stream.next(changedFor, 5_000);
      // The agent's server follows the execution to completed: the stream tells of that change too.
      await stream.next((e) => changedFor(e) && stream.events.filter(changedFor).length >= 2, 15_000);
      expect((await j.journal.intentByExecution(paid.executionId))!.execStatus).toBe("completed");
    } finally {
      stream.close();
    }
  });
});

describe("console: reading", () => {
  it("an execution's timeline has the quote, the reservation and the payment with its transaction; by execution id or intent id", async () => {
    const list = (await (await person.get("/api/executions?limit=5")).json()) as any;
    expect(list.items.length).toBeGreaterThan(0);
    const e = list.items[0];
    const intent = (await j.journal.intentByExecution(e.executionId))!;
    for (const id of [e.executionId, intent.intentId]) {
      const res = await person.get(`/api/executions/${id}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as any;
      expect(body.execution.executionId).toBe(e.executionId);
      const steps = body.timeline.map((x: any) => x.step);
      for (const step of ["quote", "approval", "reservation", "payment", "execution"])
        expect(steps, step).toContain(step);
      expect(body.timeline.some((x: any) => x.step === "payment" && x.transaction === intent.paymentTx)).toBe(true);
      expect(body.timeline.some((x: any) => x.step === "execution" && x.status === "completed")).toBe(true);
      for (const x of body.timeline) expect(Number.isNaN(Date.parse(x.at)), x.title).toBe(false);
      expect([...body.timeline].map((x: any) => Date.parse(x.at))).toEqual(
        [...body.timeline].map((x: any) => Date.parse(x.at)).sort((a, b) => a - b),
      );
      expect(body.transcripts).toContain(intent.callId);
      expect(JSON.stringify(body)).not.toContain(intent.proof!);
    }
    expect((await person.get("/api/executions/exe_nope")).status).toBe(404);
    expect((await person.get("/api/executions?status=bogus")).status).toBe(400);
  });

  it("spending by action adds up to the engine's spending, with the per-call cap and 14 days", async () => {
    const body = (await (await person.get("/api/spending")).json()) as any;
    const engine = await j.engine.spending();
    const sum = (k: string) => body.byAction.reduce((s: bigint, a: any) => s + parseDecimal(a[k])!, 0n);
    expect(body.spentTotal).toBe(engine.spentTotal);
    expect(sum("spentTotal")).toBe(parseDecimal(engine.spentTotal));
    expect(sum("spentLast24h")).toBe(parseDecimal(engine.spentLast24h));
    expect(sum("refunded")).toBe(parseDecimal(engine.refundsCredited));
    expect(parseDecimal(engine.spentTotal)).toBe(2n * PRICE);
    expect(body.byAction).toEqual([
      {
        action: "servers.provision",
        spentLast24h: "0.576",
        spentTotal: "0.576",
        refunded: "0.00",
        perCallCap: "5.00",
        count: 2,
      },
    ]);
    expect(body.days).toHaveLength(14);
    expect(body.days.at(-1)).toEqual({ day: new Date().toISOString().slice(0, 10), spent: "0.576" });
    expect(body.limits.maxPerDay).toBe(engine.limits!.maxPerDay);
  });

  it("lists transcripts and returns one call's entries without the API key or the payment proof", async () => {
    const list = (await (await person.get("/api/transcripts?limit=50")).json()) as any;
    const intent = (await j.journal.intentByExecution(
      (await j.engine.listExecutions({ limit: 1 })).items[0]!.executionId!,
    ))!;
    expect(list.items.map((i: any) => i.callId)).toContain(intent.callId);
    const res = await person.get(`/api/transcripts/${intent.callId}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.callId).toBe(intent.callId);
    expect(body.entries.map((e: any) => e.step)).toContain("signed");
    const text = JSON.stringify(body);
    expect(text).not.toContain(t.sb.apiKey);
    expect(text).not.toContain(intent.proof!);
    expect((await person.get("/api/transcripts/call_nothere")).status).toBe(404);
    expect((await person.get("/api/transcripts/..%2Fjournal.sqlite")).status).toBe(404);
  });

  it("the audit answers the report of `paid-actions-mcp audit`, or 503 when it cannot tell", async () => {
    const res = await person.get("/api/audit");
    expect(res.status).toBe(200);
    const { report } = (await res.json()) as any;
    expect(report.ok).toBe(true);
    expect(report.payments.filter((p: any) => p.status === "on_chain")).toHaveLength(2);
    const broken = await startConsole({
      engine: j.engine,
      journal: j.journal,
      transcripts: j.transcripts,
      home,
      config: undefined,
      audit: () => Promise.reject(new Error("no Solana RPC is configured")),
    });
    try {
      const p = await loginAsPerson(broken.loginUrl());
      const failed = await p.get("/api/audit");
      expect(failed.status).toBe(503);
      expect(((await failed.json()) as any).error).toMatchObject({
        code: "audit_unavailable",
        message: expect.stringContaining("no Solana RPC is configured"),
      });
    } finally {
      await broken.close();
    }
  });

  it("serves the page for its routes and the assets by name, and nothing outside the assets", async () => {
    for (const path of [
      "/",
      "/approvals",
      "/approvals/apr_1",
      "/executions/exe_1",
      "/spending",
      "/transcripts/call_1",
      "/audit",
    ]) {
      const res = await person.get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toBe("text/html; charset=utf-8");
    }
    const css = await person.get("/assets/style.css");
    expect(css.status).toBe(200);
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect((await person.get("/assets/app.js")).headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect((await person.get("/nowhere")).status).toBe(404);
    for (const path of [
      "/assets/../package.json",
      "/assets/%2e%2e/%2e%2e/package.json",
      "/assets/..%2f..%2fpackage.json",
      "/assets/..%5c..%5cpackage.json",
      "/assets/%2e%2e%2fserver.ts",
      "/assets/.hidden",
      "/assets/",
      "/assets/%00",
    ]) {
      const res = await rawRequest(handle.port, { path, headers: { cookie: person.cookie } });
      expect(res.status, path).toBeGreaterThanOrEqual(400);
      expect(res.body, path).not.toContain('"name": "paid-actions-mcp"');
      expect(res.body, path).not.toContain("startConsole");
    }
  });
});
