/**
 * paid_fetch above the approval threshold is approved like a catalog action, over real stdio:
 * the built CLI (`node dist/cli.js serve`, its embedded sandbox) and the official v2 client,
 * on a 2025 connection (the server asks the host's form by elicitation within the call) and
 * on a 2026-07-28 one (an `input_required` result, answered by the retried call). The person
 * is shown the method, the URL with its query values redacted, the amount and the payee —
 * never a header value, a query value or the body. Accepted, the fetch pays exactly once
 * (the demo wallet's balance on the sandbox's ledger, the journal's purchases); declined, it
 * is refused `approval_declined` with nothing paid. A host that opens links (URL mode) is
 * sent to the console's page for the fetch, where the person approves. A host without elicitation gets the
 * `approval_required` refusal with the approvalId; a person approves at a terminal and the
 * retry with it pays once.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Client, type ElicitRequest, type ElicitResult } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openJournal } from "../../src/app/index.js";
import { associatedTokenAddress } from "../../src/sandbox/ledger/chain.js";
import { runInPty } from "../commands/pty.js";
import { loginAsPerson } from "../helpers/console-person.js";
import { readLoginPage } from "../helpers/login-page.js";
import {
  cleanupAll,
  CLI_PATH,
  ensureBuilt,
  freshHome,
  PROJECT_ROOT,
  runCli,
  sandboxStarted,
  serverEnv,
  withTimeout,
} from "../helpers/mcp.js";
import { rpcCall } from "../helpers/sandbox.js";

type Era = "legacy" | "modern";
const ERAS: readonly Era[] = ["legacy", "modern"];

/** Approval above 0.005 USDC: the sandbox's summarizer (0.01 USDC) needs one, its weather (0.001) does not. */
const LIMITS = { PAID_ACTIONS_APPROVAL_ABOVE: "0.005" };
const PRICE = 10_000n;
const SECRET_HEADER = "hdr-secret-5b1c9e07d2";
const SECRET_QUERY = "qry-secret-8f3a61c4e0";
const SECRET_TEXT = "Body-secret-2d7e90b4aa sentence. And a second one.";

const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;
const ACCEPT: ElicitResult = { action: "accept", content: { approve: true } };

interface Served {
  client: Client;
  home: string;
  env: Record<string, string>;
  stderr(): string;
  close(): Promise<void>;
}
const open: Served[] = [];

/** The built CLI over stdio, as a host launches it, with the v2 client connected in `era`. */
async function serve(
  era: Era,
  o: { elicit?: (r: ElicitRequest) => ElicitResult; manualInput?: boolean; modes?: ("form" | "url")[] } = {},
): Promise<Served> {
  const home = freshHome();
  const env = serverEnv(home, LIMITS);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_PATH, "serve"],
    env,
    cwd: PROJECT_ROOT,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
  const client = new Client(
    { name: `paid-fetch-approvals-${era}`, version: "1.0.0" },
    {
      capabilities: o.elicit ? { elicitation: Object.fromEntries((o.modes ?? ["form"]).map((m) => [m, {}])) } : {},
      ...(era === "modern" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
      ...(o.manualInput ? { inputRequired: { autoFulfill: false } } : {}),
    },
  );
  if (o.elicit) {
    const handler = o.elicit;
    client.setRequestHandler("elicitation/create", async (request) => handler(request));
  }
  await withTimeout(client.connect(transport), 20_000, `connecting (stderr: ${stderr})`);
  expect(client.getProtocolEra()).toBe(era);
  await client.listTools(); // as a host does; the runtime (and the embedded sandbox) starts after it
  const served: Served = {
    client,
    home,
    env,
    stderr: () => stderr,
    close: () => client.close().catch(() => undefined),
  };
  open.push(served);
  return served;
}

/** The sandbox's summarizer, with a secret in its query, in a header and in its body. */
async function summarizeArgs(home: string, tag: string) {
  const origin = new URL((await sandboxStarted(home)).baseUrl).origin;
  return {
    url: `${origin}/x402/summarize?ref=${SECRET_QUERY}`,
    method: "POST",
    headers: { "X-Api-Key": SECRET_HEADER },
    body: { text: `${SECRET_TEXT} (${tag})` },
  };
}

/** The demo wallet's USDC on the sandbox's ledger, in atomic units (the agent key spends it as a delegate). */
async function balance(home: string): Promise<bigint> {
  await sandboxStarted(home);
  const info = JSON.parse(readFileSync(join(home, "sandbox", "sandbox.json"), "utf8")) as {
    rpcUrl: string;
    owner: string;
    asset: string;
  };
  const ata = await associatedTokenAddress(info.owner, info.asset);
  const result = await rpcCall<{ value: { amount: string } }>(info.rpcUrl, "getTokenAccountBalance", [ata]);
  return BigInt(result.value.amount);
}

/** The purchases the journal holds, as `purchases --json` lists them. */
async function purchases(env: Record<string, string>): Promise<any[]> {
  const listed = await runCli(["purchases", "--json"], env);
  expect(listed.code, listed.stderr).toBe(0);
  return JSON.parse(listed.stdout).items;
}

async function approvalStatus(env: Record<string, string>, approvalId: string) {
  const j = await openJournal(env);
  try {
    return (await j.journal.approval(approvalId))?.status;
  } finally {
    await j.close();
  }
}

/** The files under the home's transcripts that hold `secret`. */
function transcriptsHolding(home: string, secret: string): string[] {
  const dir = join(home, "transcripts");
  return (readdirSync(dir, { recursive: true }) as string[])
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile() && readFileSync(f).includes(secret));
}

/** What a person is shown must name the purchase, and no secret of its request. */
function expectQuestionOf(question: unknown, url: string) {
  const text = JSON.stringify(question);
  const redacted = `${url.split("?")[0]}?ref=…`;
  expect(text).toContain("0.01 USDC");
  expect(text).toContain(`POST ${redacted}`);
  expect(text).toContain("paid_fetch");
  expect(text).toMatch(/expire/i);
  for (const secret of [SECRET_HEADER, SECRET_QUERY, "Body-secret"]) expect(text).not.toContain(secret);
  expect(text).toContain("x-api-key"); // the header's name, not its value
}

beforeAll(() => ensureBuilt(), 90_000);
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
  await cleanupAll();
});

describe("paid_fetch above the threshold, 2025: the host's form, asked within the call", () => {
  it("asks the person (method, redacted URL, amount, payee); a decline pays nothing; an accept pays exactly once", async () => {
    const asked: ElicitRequest[] = [];
    let answer: ElicitResult = { action: "decline" };
    const s = await serve("legacy", { elicit: (r) => (asked.push(r), answer) });
    const declinedArgs = await summarizeArgs(s.home, "declined");
    const before = await balance(s.home);

    const declined = await s.client.callTool({ name: "paid_fetch", arguments: declinedArgs }, { timeout: 30_000 });
    expect(declined.isError).toBe(true);
    const refusal = sc(declined).error;
    expect(refusal.code).toBe("approval_declined");
    expect(refusal.message).toContain("nothing was paid");
    expect(asked).toHaveLength(1);
    const params = asked[0]!.params as { mode?: string; message: string; requestedSchema?: unknown };
    expect(params.mode ?? "form").toBe("form");
    expect(params.requestedSchema).toBeDefined();
    expectQuestionOf(params, declinedArgs.url);
    expect(await approvalStatus(s.env, refusal.approvalId)).toBe("declined");
    expect(await balance(s.home)).toBe(before);
    expect((await purchases(s.env)).filter((p) => p.state === "executed")).toEqual([]);

    answer = ACCEPT;
    const args = await summarizeArgs(s.home, "accepted");
    const paid = await s.client.callTool({ name: "paid_fetch", arguments: args }, { timeout: 30_000 });
    expect(paid.isError ?? false, JSON.stringify(paid)).toBe(false);
    const r = sc(paid);
    expect(r).toMatchObject({ status: 200, payment: { amount: "0.01", currency: "USDC" }, sandbox: true });
    expect(r.body).toMatchObject({ summary: "Body-secret-2d7e90b4aa sentence." });
    expect(asked).toHaveLength(2);
    expectQuestionOf(asked[1]!.params, args.url);
    expect((asked[1]!.params as { message: string }).message).toContain(r.payment.payTo);
    expect(await balance(s.home)).toBe(before - PRICE);
    const bought = (await purchases(s.env)).filter((p) => p.state === "executed");
    expect(bought).toEqual([expect.objectContaining({ intentId: r.intentId, amount: "0.01", status: 200 })]);
    for (const secret of [SECRET_HEADER, SECRET_QUERY]) expect(transcriptsHolding(s.home, secret)).toEqual([]);
  }, 90_000);
});

describe("paid_fetch above the threshold, 2026-07-28: input_required, answered by the retried call", () => {
  /** The first round: the question, handed back by the client (manual mode). */
  async function firstRound(client: Client, args: Record<string, unknown>) {
    const r = (await client.callTool(
      { name: "paid_fetch", arguments: args },
      { allowInputRequired: true, timeout: 30_000 },
    )) as Record<string, any>;
    expect(r.resultType, JSON.stringify(r)).toBe("input_required");
    expect(Object.keys(r.inputRequests ?? {})).toEqual(["approval"]);
    expect(typeof r.requestState).toBe("string");
    return r as { requestState: string; inputRequests: Record<string, any> };
  }
  const retry = (client: Client, args: Record<string, unknown>, requestState: string, answer: ElicitResult) =>
    client.request(
      {
        method: "tools/call",
        params: { name: "paid_fetch", arguments: args, inputResponses: { approval: answer }, requestState } as never,
      },
      { timeout: 30_000 },
    ) as Promise<Record<string, any>>;

  it("asks the person (method, redacted URL, amount, payee); a decline pays nothing; an accept pays exactly once", async () => {
    const s = await serve("modern", { elicit: () => ACCEPT, manualInput: true });
    const before = await balance(s.home);

    const declinedArgs = await summarizeArgs(s.home, "declined");
    const asked = await firstRound(s.client, declinedArgs);
    expectQuestionOf(asked.inputRequests, declinedArgs.url);
    const declined = await retry(s.client, declinedArgs, asked.requestState, { action: "decline" });
    expect(declined.isError).toBe(true);
    const refusal = sc(declined).error;
    expect(refusal.code).toBe("approval_declined");
    expect(refusal.message).toContain("nothing was paid");
    expect(await approvalStatus(s.env, refusal.approvalId)).toBe("declined");
    expect(await balance(s.home)).toBe(before);

    const args = await summarizeArgs(s.home, "accepted");
    const second = await firstRound(s.client, args);
    expectQuestionOf(second.inputRequests, args.url);
    const paid = await retry(s.client, args, second.requestState, ACCEPT);
    expect(paid.isError ?? false, JSON.stringify(paid)).toBe(false);
    const r = sc(paid);
    expect(r).toMatchObject({ status: 200, payment: { amount: "0.01", currency: "USDC" }, sandbox: true });
    expect(JSON.stringify(second.inputRequests)).toContain(r.payment.payTo);
    expect(await balance(s.home)).toBe(before - PRICE);
    // The state is single use: the same answer again pays nothing more.
    const replayed = await retry(s.client, args, second.requestState, ACCEPT);
    expect(replayed.isError).toBe(true);
    expect(sc(replayed).error.code).toBe("approval_invalid");
    expect(await balance(s.home)).toBe(before - PRICE);
    const bought = (await purchases(s.env)).filter((p) => p.state === "executed");
    expect(bought).toEqual([expect.objectContaining({ intentId: r.intentId, amount: "0.01", status: 200 })]);
    for (const secret of [SECRET_HEADER, SECRET_QUERY]) expect(transcriptsHolding(s.home, secret)).toEqual([]);
  }, 90_000);
});

describe.each(ERAS)("paid_fetch above the threshold, %s era, a host without elicitation", (era) => {
  it("approval_required with the approvalId, nothing paid; a person approves at a terminal; the retry pays once", async () => {
    const s = await serve(era);
    const before = await balance(s.home);
    const args = await summarizeArgs(s.home, `terminal-${era}`);

    const first = await s.client.callTool({ name: "paid_fetch", arguments: args }, { timeout: 30_000 });
    expect(first.isError).toBe(true);
    const error = sc(first).error;
    expect(error.code).toBe("approval_required");
    expect(error.approvalId).toMatch(/^apr_/);
    expect(error.message).toMatch(/nothing was paid/i);
    expect(await balance(s.home)).toBe(before);
    expect(await approvalStatus(s.env, error.approvalId)).toBe("pending");

    const pty = runInPty(["approve", error.approvalId], s.env);
    await pty.waitFor("Type 0.01 to approve");
    pty.type("0.01\r");
    const approved = await pty.exit;
    expect(approved.code, approved.screen).toBe(0);
    expect(approved.screen).toContain("/x402/summarize");
    expect(approved.screen).not.toContain(SECRET_HEADER);

    const paid = await s.client.callTool(
      { name: "paid_fetch", arguments: { ...args, approvalId: error.approvalId } },
      { timeout: 30_000 },
    );
    expect(paid.isError ?? false, JSON.stringify(paid)).toBe(false);
    expect(sc(paid)).toMatchObject({ status: 200, payment: { amount: "0.01" } });
    const again = await s.client.callTool(
      { name: "paid_fetch", arguments: { ...args, approvalId: error.approvalId } },
      { timeout: 30_000 },
    );
    expect(sc(again).intentId).toBe(sc(paid).intentId);
    expect(await balance(s.home)).toBe(before - PRICE);
    expect((await purchases(s.env)).filter((p) => p.state === "executed")).toHaveLength(1);
  }, 90_000);
});

describe.each(ERAS)("paid_fetch above the threshold, %s era, a host that opens links (URL mode)", (era) => {
  it("sends the person to the console's page for the fetch (no secret on it); the call waits, then pays once", async () => {
    const asked: ElicitRequest[] = [];
    const decided: Promise<Response>[] = [];
    const s = await serve(era, {
      modes: ["form", "url"],
      elicit: (request) => {
        asked.push(request);
        const url = String((request.params as { url?: string }).url);
        const approvalId = readLoginPage(url).next.split("/").pop()!; // the page is gone once used
        // The host opens the page and answers at once; the person decides there a moment later.
        decided.push(
          new Promise((r) => setTimeout(r, 600)).then(async () => {
            const person = await loginAsPerson(url);
            const page = await (await person.get(`/api/approvals/${approvalId}`)).text();
            for (const secret of [SECRET_HEADER, SECRET_QUERY, "Body-secret"]) expect(page).not.toContain(secret);
            expect(page).toContain("/x402/summarize");
            return person.approve(approvalId);
          }),
        );
        return { action: "accept" };
      },
    });
    const before = await balance(s.home);
    const args = await summarizeArgs(s.home, `url-${era}`);

    const paid = await s.client.callTool({ name: "paid_fetch", arguments: args }, { timeout: 40_000 });
    expect(asked).toHaveLength(1);
    expect((await decided[0]!).status).toBe(200);
    expect(paid.isError ?? false, JSON.stringify(paid)).toBe(false);
    expect(sc(paid)).toMatchObject({ status: 200, payment: { amount: "0.01", currency: "USDC" } });
    const params = asked[0]!.params as { mode?: string; url?: string; message: string };
    expect(params.mode).toBe("url");
    expect(new URL(params.url!).protocol).toBe("file:");
    expect(params.message).toContain(`0.01 USDC for POST ${args.url.split("?")[0]}?ref=…`);
    for (const secret of [SECRET_HEADER, SECRET_QUERY, "Body-secret"]) expect(params.message).not.toContain(secret);
    expect(await balance(s.home)).toBe(before - PRICE);
    expect((await purchases(s.env)).filter((p) => p.state === "executed")).toHaveLength(1);
  }, 90_000);
});
