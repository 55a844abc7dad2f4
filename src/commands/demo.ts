/**
 * `paid-actions-mcp demo` (and `npm start`): a scripted agent session. It launches the
 * server exactly as a host would — `paid-actions-mcp serve` over stdio, with the SDK's
 * Client — against a fresh sandbox, and narrates each step for a newcomer.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client, type CallToolResult } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { formatDecimal } from "../domain/money.js";
import { ownerKeyWarnings } from "./owner-key.js";

const say = (line = "") => process.stdout.write(`${line}\n`);
const step = (n: number, title: string) => say(`\n── ${n}. ${title} ${"─".repeat(Math.max(0, 60 - title.length))}`);

/** What the demo reads of the tools' structured results (their output schemas say more). */
interface Quote {
  quoteId: string;
  amount: string;
  breakdown: unknown;
  payable: boolean;
}
interface PaidCall {
  callId: string;
  executionId: string;
  status: string;
  next: string;
  resourceUri: string;
  transcriptUri: string;
  payment: { amount: string; transaction: string };
}
interface Refusal {
  error: { code: string; message: string; whatToDo: string };
}
interface Spending {
  spentLast24h: string;
  remainingToday: string;
  limits: { maxPerDay: string };
}
/** An execution resource's record, as the demo narrates it. */
interface ExecutionRecord {
  status: string;
  output?: { serverId?: string; ipv4?: string; expiresAt?: string };
}

/** A tool result's structured content, in the shape its tool's output schema gives it. */
function structured<T>(result: unknown): T {
  return ((result as CallToolResult).structuredContent ?? {}) as T;
}

async function readRecord(client: Client, uri: string): Promise<ExecutionRecord> {
  const read = await client.readResource({ uri });
  return JSON.parse((read.contents[0] as { text: string }).text) as ExecutionRecord;
}

/** The small server for 24 hours the agent prices and buys. */
const SERVER_INPUT = { region: "eu-west-1", plan: "small", durationHours: 24 };

async function listTools(client: Client): Promise<void> {
  step(1, "The agent lists the tools");
  const { tools } = await client.listTools();
  const paid = tools.filter((t) => t.annotations?.readOnlyHint === false);
  say(`Paid tools (one per action of the service): ${paid.map((t) => t.name).join(", ")}`);
  say(
    `Free tools: ${tools
      .filter((t) => t.annotations?.readOnlyHint !== false)
      .map((t) => t.name)
      .join(", ")}`,
  );
}

async function quoteServer(client: Client): Promise<void> {
  step(2, "It prices a small server for 24 hours (quote_action, pays nothing)");
  const quote = structured<Quote>(
    await client.callTool({ name: "quote_action", arguments: { action: "servers.provision", input: SERVER_INPUT } }),
  );
  say(
    `Quote ${quote.quoteId}: ${quote.amount} USDC (${JSON.stringify(quote.breakdown)}), payable now: ${quote.payable}`,
  );
}

/** The purchase, or undefined when it was refused (said already). */
async function buyServer(client: Client): Promise<PaidCall | undefined> {
  step(3, "It buys it (servers_provision)");
  const bought = await client.callTool({ name: "servers_provision", arguments: SERVER_INPUT });
  if (bought.isError) {
    say(`Unexpected refusal: ${JSON.stringify(structured<Refusal>(bought).error)}`);
    return undefined;
  }
  const paidCall = structured<PaidCall>(bought);
  say(`Paid ${paidCall.payment.amount} USDC — transaction ${paidCall.payment.transaction}`);
  say(
    `Execution ${paidCall.executionId} is ${paidCall.status}; the tool returned at once, the provider is still working.`,
  );
  say(`Next, the tool says: ${paidCall.next}`);
  return paidCall;
}

async function tryOverTheLimit(client: Client): Promise<void> {
  step(4, "It tries something over the per-call limit (companies_create, 89 USDC)");
  const refused = await client.callTool({
    name: "companies_create",
    arguments: {
      jurisdiction: "US-DE",
      companyType: "llc",
      name: "Demo Robotics LLC",
      owners: [{ type: "individual", fullName: "Ada Lovelace", country: "GB" }],
    },
  });
  const refusal = structured<Refusal>(refused).error;
  say(`Refused (isError: ${String(refused.isError)}), code ${refusal.code}: ${refusal.message}`);
  say(`What to do: ${refusal.whatToDo}`);
}

/** Follows the execution until it is final (or 30 s have passed); its record then. */
async function followExecution(client: Client, paidCall: PaidCall): Promise<ExecutionRecord> {
  step(5, "It follows the execution: a subscription and resource reads");
  const uri = paidCall.resourceUri;
  let updates = 0;
  let lastStatus = paidCall.status;
  const finished = new Promise<void>((resolve) => {
    client.setNotificationHandler("notifications/resources/updated", async (n) => {
      if (n.params.uri !== uri) return;
      updates++;
      const record = await readRecord(client, uri);
      if (record.status !== lastStatus) say(`  update: ${uri} is now ${record.status}`);
      lastStatus = record.status;
      if (record.status === "completed" || record.status === "refunded") resolve();
    });
  });
  await client.subscribeResource({ uri });
  say(`Subscribed to ${uri}; waiting for the provider…`);
  const timeout = new Promise<void>((resolve) => setTimeout(resolve, 30_000));
  await Promise.race([finished, timeout]);
  const record = await readRecord(client, uri);
  say(
    `Final record (${updates} update notification(s)): status ${record.status}, server ${record.output?.serverId} at ${record.output?.ipv4}, until ${record.output?.expiresAt}`,
  );
  return record;
}

/** Any x402 resource, bought under the same limits: the sandbox's own weather, then found in discovery. */
async function fetchPaidResource(client: Client, home: string): Promise<boolean> {
  step(6, "It buys an x402 resource on the web (paid_fetch): the sandbox's weather");
  const info = JSON.parse(readFileSync(join(home, "sandbox", "sandbox.json"), "utf8")) as { baseUrl: string };
  const url = `${new URL(info.baseUrl).origin}/x402/weather?city=Berlin`;
  const result = await client.callTool({ name: "paid_fetch", arguments: { url, intentKey: "demo-weather-berlin" } });
  const fetched = structured<{
    status: number;
    body: unknown;
    payment: { amount: string; payTo: string; transaction: string | null } | null;
    error?: Refusal["error"];
  }>(result);
  if (result.isError || !fetched.payment) {
    say(`Unexpected answer: ${JSON.stringify(fetched.error ?? fetched).slice(0, 300)}`);
    return false;
  }
  say(
    `GET ${url} answered 402; paid ${fetched.payment.amount} USDC to ${fetched.payment.payTo}, then HTTP ${fetched.status}:`,
  );
  say(`  ${JSON.stringify(fetched.body).slice(0, 200)}`);
  const found = structured<{ resources: Array<{ url: string; price: string | null }> }>(
    await client.callTool({ name: "search_paid_resources", arguments: { query: "weather" } }),
  );
  say(
    `The sandbox's facilitator now lists it (search_paid_resources): ${found.resources.map((r) => `${r.url} at ${r.price ?? "?"} USDC`).join(", ") || "nothing yet"}`,
  );
  return true;
}

async function checkSpending(client: Client, home: string): Promise<void> {
  step(7, "It checks what was spent (get_spending)");
  const spending = structured<Spending>(await client.callTool({ name: "get_spending", arguments: {} }));
  say(
    `Spent in the last 24 h: ${spending.spentLast24h} USDC; ${spending.remainingToday} USDC left today (limit ${spending.limits.maxPerDay}).`,
  );
  say(await onChainCeiling(home));
  for (const line of ownerKeyNote(home)) say(line);
}

/**
 * Where the demo keeps the owner's key: the sandbox's demo wallet, in the home, readable by
 * this user — so the ceiling holds against the server, not against an agent with this
 * user's shell (owner-key.ts). Said, since this is the setup a person copies.
 */
function ownerKeyNote(home: string): string[] {
  try {
    const info = JSON.parse(readFileSync(join(home, "sandbox", "sandbox.json"), "utf8")) as {
      owner?: string;
      walletPath: string;
    };
    return ownerKeyWarnings({ owner: info.owner, sandbox: info }).map((w) => `Warning: ${w}.`);
  } catch {
    return [];
  }
}

function whereTheRecordIs(paidCall: PaidCall, home: string): void {
  step(8, "Where the record is");
  say(`Every tool call leaves a redacted transcript. This purchase: ${paidCall.transcriptUri}`);
  say(`  paid-actions-mcp transcript ${paidCall.callId}        (with PAID_ACTIONS_HOME=${home})`);
  say(`  paid-actions-mcp executions                 lists what was bought`);
}

export async function demo(env: NodeJS.ProcessEnv, opts: { home?: string; keep?: boolean }): Promise<number> {
  const home = opts.home ?? mkdtempSync(join(tmpdir(), "paid-actions-demo-"));
  const cli = fileURLToPath(new URL("../cli.js", import.meta.url));
  const serverEnv: Record<string, string> = {
    PATH: env.PATH ?? "",
    PAID_ACTIONS_HOME: home,
    PAID_ACTIONS_SANDBOX_DELAY_MS: "2500",
  };

  say("paid-actions-mcp demo — an agent buys a server, inside the limits a human set.");
  say(`The MCP server runs as a host would run it: \`node ${cli} serve\` over stdio,`);
  say(`in sandbox mode (no PAID_ACTIONS_BASE_URL), with its state in ${home}.`);
  say("Default limits: 5 USDC per call, 25 USDC per day, a human's approval above 1 USDC.");

  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, "serve"],
    env: serverEnv,
    stderr: "pipe",
  });
  let serverLog = "";
  transport.stderr?.on("data", (c: Buffer) => (serverLog += c.toString()));
  const client = new Client({ name: "demo-agent", version: "1.0.0" });
  try {
    await client.connect(transport);
    await listTools(client);
    await quoteServer(client);
    const paidCall = await buyServer(client);
    if (!paidCall) return 1;
    await tryOverTheLimit(client);
    const record = await followExecution(client, paidCall);
    if (!(await fetchPaidResource(client, home))) return 1;
    await checkSpending(client, home);
    whereTheRecordIs(paidCall, home);
    say("\nDone. Point a host at this server with mcp.json (see the README).");
    return record.status === "completed" ? 0 : 1;
  } catch (e) {
    say(`\nThe demo failed: ${(e as Error).message}`);
    if (serverLog) say(`Server log:\n${serverLog}`);
    return 1;
  } finally {
    await client.close().catch(() => undefined);
  }
}

/**
 * The embedded default pays in delegate mode: the agent key spends the demo wallet's USDC as
 * its SPL Token delegate. What the chain still lets it move, read through the sandbox's RPC.
 */
async function onChainCeiling(home: string): Promise<string> {
  try {
    const info = JSON.parse(readFileSync(join(home, "sandbox", "sandbox.json"), "utf8")) as {
      rpcUrl: string;
      asset: string;
      owner?: string;
      agentAddress?: string;
    };
    if (!info.owner || !info.agentAddress) return "The wallet pays from its own account (no delegate mode).";
    const { createRpcChain } = await import("../engine/index.js");
    const { associatedTokenAddress } = await import("../domain/token.js");
    const account = await (
      await createRpcChain(info.rpcUrl)
    ).tokenAccount(await associatedTokenAddress(info.owner, info.asset));
    const left = account?.delegate === info.agentAddress ? account.delegatedAmount : 0n;
    return (
      `On chain, the agent key ${info.agentAddress} may still spend ${formatDecimal(left)} USDC of the demo wallet's ${formatDecimal(account?.amount ?? 0n)} USDC ` +
      "as its delegate: a ceiling the token program enforces on whoever holds the agent key (see: paid-actions-mcp allowance)."
    );
  } catch (e) {
    return `The allowance on chain could not be read (${(e as Error).message.slice(0, 120)}).`;
  }
}
