/**
 * Approval through the console's page, for hosts that open URLs (URL-mode elicitation), in
 * both protocol eras: the server starts the console in its own process and hands the host the
 * file:// URL of a one-time sign-in page for that payment's page (a URL with no secret in it:
 * a host opens it with the OS's opener, whose command line any local user can read); accepting
 * only means the person went there, so the call waits until the person decides on the page
 * (read from the journal), then pays — or pays nothing; with no decision by its deadline it
 * answers approval_required with a fresh link, and the console tells the person whether a
 * call was waiting. The person here is real HTTP against the real console, as a browser
 * sends it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Client, ElicitRequest, ElicitResult } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { openJournal } from "../../src/app/index.js";
import { loginAsPerson } from "../helpers/console-person.js";
import { postLoginPage, readLoginPage, type LoginPageForm } from "../helpers/login-page.js";
import { callTool, ERAS, inProcessSuite } from "../helpers/inproc.js";

const SMALL_SERVER = { region: "eu-west-1", plan: "small", durationHours: 24 } as const; // 0.288 USDC
const PRICE = 288_000n;
const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;

const suite = inProcessSuite({ prefix: "pam-url-approval", providerDelayMs: 200 });
const balance = () => suite.sandbox().usdc(suite.sandbox().wallet.address);
const NEEDS_APPROVAL = { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" };

type UrlParams = { mode?: string; url?: string; message?: string; elicitationId?: string };
const urlOf = (r: ElicitRequest) => String((r.params as UrlParams).url);
const approvalIdOf = (page: LoginPageForm) => page.next.split("/").pop()!;

/** The elicitationIds of the `notifications/elicitation/complete` the client gets, as they come. */
function completions(client: Client): string[] {
  const ids: string[] = [];
  client.setNotificationHandler("notifications/elicitation/complete", (n) => void ids.push(n.params.elicitationId));
  return ids;
}

/** The files under `dir` whose bytes contain `secret`. */
function filesHolding(dir: string, secret: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[])
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile() && readFileSync(f).includes(secret));
}

async function statusOf(env: Record<string, string>, approvalId: string) {
  const j = await openJournal(env);
  try {
    return (await j.journal.approval(approvalId))?.status;
  } finally {
    await j.close();
  }
}

/**
 * An elicitation handler that records each question (and the sign-in page its link names, as
 * it was when the host got it) and answers with `answer`, then runs `after` on the link.
 */
function host(answer: ElicitResult["action"], after?: (url: string) => Promise<void>) {
  const asked: ElicitRequest[] = [];
  const pages: LoginPageForm[] = [];
  const done: Promise<void>[] = [];
  return {
    asked,
    pages,
    settled: () => Promise.all(done),
    elicit: (request: ElicitRequest): ElicitResult => {
      asked.push(request);
      pages.push(readLoginPage(urlOf(request)));
      // The host opens the page and answers at once; the person decides a moment later. A fixed
      // moment: the server does not show when the call is back waiting on the journal after the
      // host's answer (in the 2026 era the answer comes in a new request), and a decision before
      // that would find no call waiting (told.agentCall "none").
      if (after) done.push(new Promise((r) => setTimeout(r, 600)).then(() => after(urlOf(request))));
      return { action: answer };
    },
  };
}

describe.each(ERAS)("%s era: approval on the console's page", (era) => {
  it("sends the host to the payment's page; the call waits for the person's approval there and pays once", async () => {
    const env = suite.env(NEEDS_APPROVAL);
    let approvedStatus = 0;
    let told: { agentCall?: string; next?: string } = {};
    const h = host("accept", async (url) => {
      const person = await loginAsPerson(url);
      const approved = await person.approve(approvalIdOf(h.pages[0]!));
      approvedStatus = approved.status;
      told = (await approved.json()) as typeof told;
    });
    const s = await suite.start({ env, era, elicit: h.elicit, elicitModes: ["form", "url"] });
    const completed = completions(s.client);
    const before = await balance();
    const paid = await callTool(s.client, "servers_provision", { ...SMALL_SERVER, image: `url-${era}` }, 30_000);
    await h.settled();
    // On 2025 the host is told the link's interaction is over once the person decided.
    expect(completed).toEqual(era === "legacy" ? [(h.asked[0]!.params as UrlParams).elicitationId] : []);
    expect(approvedStatus).toBe(200);
    // The console told the person that the agent's call was waiting and takes it now.
    expect(told.agentCall).toBe("waiting");
    expect(told.next).toContain("pays now");
    expect(paid.isError).toBeFalsy();
    expect(sc(paid).executionId).toMatch(/^exe_/);
    expect(await balance()).toBe(before - PRICE);
    // Offered as a link, even though the host could also show a form.
    expect(h.asked).toHaveLength(1);
    const params = h.asked[0]!.params as UrlParams;
    expect(params.mode).toBe("url");
    expect(params.message).toContain("0.288 USDC for servers.provision");
    // The host got a file:// URL with no secret in it: the token is only in the file, which
    // only this user can read (0600 in a 0700 folder under the home).
    const page = h.pages[0]!;
    expect(new URL(params.url!).protocol).toBe("file:");
    expect(page.path.startsWith(join(env.PAID_ACTIONS_HOME!, "console"))).toBe(true);
    expect(page.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.url).not.toContain(page.token);
    expect(JSON.stringify(h.asked)).not.toContain(page.token);
    expect(page.mode).toBe(0o600);
    expect(page.dirMode).toBe(0o700);
    expect(new URL(page.action).origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const approvalId = approvalIdOf(page);
    expect(page.next).toBe(`/approvals/${approvalId}`);
    expect(approvalId).toMatch(/^apr_/);
    expect(await statusOf(env, approvalId)).toBe("used");
    // The page signs in once, and is gone once it has; the token is in no log, transcript or journal.
    expect(existsSync(page.path)).toBe(false);
    expect((await postLoginPage(page)).status).toBe(403);
    expect(s.log()).not.toContain(page.token);
    expect(filesHolding(env.PAID_ACTIONS_HOME!, page.token)).toEqual([]);
  });

  it("a decline on the page pays nothing and is recorded", async () => {
    const env = suite.env(NEEDS_APPROVAL);
    const h = host("accept", async (url) => void (await (await loginAsPerson(url)).decline(approvalIdOf(h.pages[0]!))));
    const s = await suite.start({ env, era, elicit: h.elicit, elicitModes: ["url"] });
    const completed = completions(s.client);
    const before = await balance();
    const refused = await callTool(
      s.client,
      "servers_provision",
      { ...SMALL_SERVER, image: `url-declined-${era}` },
      30_000,
    );
    await h.settled();
    expect(completed).toEqual(era === "legacy" ? [(h.asked[0]!.params as UrlParams).elicitationId] : []);
    expect(sc(refused).error.code).toBe("approval_declined");
    expect(await balance()).toBe(before);
    expect(await statusOf(env, approvalIdOf(h.pages[0]!))).toBe("declined");
  });

  it("a host's decline of the link is a decline: recorded, nothing paid; the unused sign-in page goes when the server stops", async () => {
    const env = suite.env(NEEDS_APPROVAL);
    const h = host("decline");
    const s = await suite.start({ env, era, elicit: h.elicit, elicitModes: ["url"] });
    const before = await balance();
    const refused = await callTool(s.client, "servers_provision", {
      ...SMALL_SERVER,
      image: `url-host-declined-${era}`,
    });
    expect(sc(refused).error.code).toBe("approval_declined");
    expect(await balance()).toBe(before);
    expect(await statusOf(env, approvalIdOf(h.pages[0]!))).toBe("declined");
    expect(existsSync(h.pages[0]!.path)).toBe(true);
    await s.close();
    expect(existsSync(h.pages[0]!.path)).toBe(false);
  });

  it("a host that dismisses the link (cancel) decides nothing: approval_required, still pending, with a link", async () => {
    const env = suite.env(NEEDS_APPROVAL);
    const h = host("cancel");
    const s = await suite.start({ env, era, elicit: h.elicit, elicitModes: ["url"] });
    const before = await balance();
    const refused = await callTool(s.client, "servers_provision", { ...SMALL_SERVER, image: `url-dismissed-${era}` });
    const error = sc(refused).error;
    expect(error.code).toBe("approval_required");
    expect(error.message).toContain("the host dismissed the link to the console's page");
    expect(error.message).toContain("nothing was paid");
    expect(String(error.consoleUrl)).toMatch(/^file:\/\//);
    expect(error.approvalId).toBe(approvalIdOf(h.pages[0]!));
    expect(await statusOf(env, String(error.approvalId))).toBe("pending");
    expect(await balance()).toBe(before);
  });

  it("no decision in time: approval_required for a person, with the approvalId; approved later on the page, the retry pays once", async () => {
    const env = suite.env(NEEDS_APPROVAL);
    const h = host("accept");
    const s = await suite.start({ env, era, elicit: h.elicit, elicitModes: ["url"], approvalTimeoutMs: 1_500 });
    const before = await balance();
    const args = { ...SMALL_SERVER, image: `url-late-${era}` };
    const refused = await callTool(s.client, "servers_provision", args, 30_000);
    const error = sc(refused).error;
    expect(error.code).toBe("approval_required");
    const text = JSON.stringify(refused);
    expect(text).toContain("console or terminal");
    expect(text).not.toContain("paid-actions-mcp approve");
    expect(error.message).toMatch(/^no decision yet after \d+ s; /);
    expect(error.message).toContain("nothing was paid");
    expect(error.whatToDo).toContain("Call again with the same input and this approvalId once the person has decided");
    const approvalId = String(error.approvalId);
    expect(approvalId).toBe(approvalIdOf(h.pages[0]!));
    expect(await balance()).toBe(before);
    // A fresh one-time sign-in link to the same page, for whoever did not get to the first one.
    const fresh = readLoginPage(String(error.consoleUrl));
    expect(fresh.next).toBe(`/approvals/${approvalId}`);
    expect(fresh.token).not.toBe(h.pages[0]!.token);

    const person = await loginAsPerson(String(error.consoleUrl));
    const approved = await person.approve(approvalId);
    expect(approved.status).toBe(200);
    // No call waits for it any more: the agent will use it when it calls again.
    const told = (await approved.json()) as { agentCall: string; next: string };
    expect(told.agentCall).toBe("none");
    expect(told.next).toContain("the agent will use it when it calls again");
    const paid = await callTool(s.client, "servers_provision", { ...args, approvalId }, 30_000);
    expect(paid.isError).toBeFalsy();
    expect(await balance()).toBe(before - PRICE);
    const again = await callTool(s.client, "servers_provision", { ...args, approvalId });
    expect(sc(again).executionId).toBe(sc(paid).executionId);
    expect(await balance()).toBe(before - PRICE);
  });
});
