/**
 * A host that opens links inside itself (VS Code: `clientInfo.name` "Visual Studio Code"),
 * declaring URL-mode elicitation, in both protocol eras: it is handed no `file://` sign-in
 * page (it would show the page's source, token included, in an editor tab) but the console's
 * http://127.0.0.1:<port>/approve page, which holds no secret, and the person a one-time code
 * in the question. The person types it there (real HTTP, as a browser posts the page's form),
 * lands signed in on the payment's page and approves; the waiting call pays once. A code works
 * once; wrong codes are refused and, five a minute, rate-limited. A refusal with no decision
 * in time carries a fresh page and code the same way.
 */
import type { ElicitRequest, ElicitResult } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { callTool, ERAS, inProcessSuite } from "../helpers/inproc.js";

const SMALL_SERVER = { region: "eu-west-1", plan: "small", durationHours: 24 } as const; // 0.288 USDC
const PRICE = 288_000n;
const sc = (r: unknown) => (r as { structuredContent?: any }).structuredContent;
const VS_CODE = "Visual Studio Code";

const suite = inProcessSuite({ prefix: "pam-code-approval", providerDelayMs: 200 });
const balance = () => suite.sandbox().usdc(suite.sandbox().wallet.address);
const NEEDS_APPROVAL = { PAID_ACTIONS_APPROVAL_ABOVE: "0.1" };

type UrlParams = { mode?: string; url?: string; message?: string };
const CODE = /type the one-time code ([2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4})/i;

/** Posts the /approve page's form as a browser does from that page (its Origin, urlencoded). */
function postCode(pageUrl: string, code: string, origin = new URL(pageUrl).origin) {
  return fetch(pageUrl, {
    method: "POST",
    redirect: "manual",
    headers: { origin, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ code }).toString(),
  });
}

/** Signs in with a code and approves or declines what the page it lands on names. */
async function decideWithCode(pageUrl: string, code: string, decision: "approve" | "decline") {
  const signedIn = await postCode(pageUrl, code);
  expect(signedIn.status).toBe(303);
  const landing = signedIn.headers.get("location")!;
  const cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!;
  const origin = new URL(pageUrl).origin;
  const session = (await (await fetch(`${origin}/api/session`, { headers: { cookie } })).json()) as { csrf: string };
  const approvalId = landing.split("/").pop()!;
  const res = await fetch(`${origin}/api/approvals/${approvalId}/${decision}`, {
    method: "POST",
    headers: { cookie, origin, "x-csrf-token": session.csrf, "content-type": "application/json" },
    body: "{}",
  });
  return { landing, status: res.status, approvalId };
}

describe.each(ERAS)("%s era: a host that opens links inside itself", (era) => {
  it("gets the console's /approve page and a one-time code, never a file:// page; the code signs in once and the call pays once", async () => {
    const asked: ElicitRequest[] = [];
    const decided: Promise<{ landing: string; status: number; approvalId: string }>[] = [];
    const elicit = (request: ElicitRequest): ElicitResult => {
      asked.push(request);
      const p = request.params as UrlParams;
      const code = CODE.exec(p.message ?? "")![1]!;
      // The person types the code a moment after the host opened the page (the call is waiting on the journal then).
      decided.push(new Promise((r) => setTimeout(r, 600)).then(() => decideWithCode(p.url!, code, "approve")));
      return { action: "accept" };
    };
    const env = suite.env(NEEDS_APPROVAL);
    const s = await suite.start({ env, era, elicit, elicitModes: ["form", "url"], clientName: VS_CODE });
    const before = await balance();
    const paid = await callTool(s.client, "servers_provision", { ...SMALL_SERVER, image: `code-${era}` }, 30_000);
    const [first] = await Promise.all(decided);
    const { landing, status, approvalId } = first!;
    expect(status).toBe(200);
    expect(landing).toBe(`/approvals/${approvalId}`);
    expect(paid.isError, JSON.stringify(sc(paid))).toBeFalsy();
    expect(await balance()).toBe(before - PRICE);

    expect(asked).toHaveLength(1);
    const params = asked[0]!.params as UrlParams;
    expect(params.mode).toBe("url");
    expect(params.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/approve$/);
    expect(JSON.stringify(asked)).not.toContain("file:");
    const code = CODE.exec(params.message!)![1]!;
    // The page asks for the code and holds no secret; the code worked once.
    const shown = await fetch(params.url!);
    // Its form must carry the page's own Origin (under no-referrer a browser sends "null", as any site can).
    expect(shown.headers.get("referrer-policy")).toBe("same-origin");
    const page = await shown.text();
    expect(page).toContain('name="code"');
    expect(page).not.toContain(code);
    expect((await postCode(params.url!, code)).status).toBe(403);
    expect(s.log()).not.toContain(code);
  });

  it("no decision in time: the refusal carries a fresh page and code (consoleUrl, consoleCode); wrong codes are refused, then rate-limited", async () => {
    const env = suite.env(NEEDS_APPROVAL);
    const s = await suite.start({
      env,
      era,
      elicit: () => ({ action: "accept" }),
      elicitModes: ["url"],
      clientName: VS_CODE,
      approvalTimeoutMs: 1_500,
    });
    const before = await balance();
    const args = { ...SMALL_SERVER, image: `code-late-${era}` };
    const refused = await callTool(s.client, "servers_provision", args, 30_000);
    const error = sc(refused).error;
    expect(error.code).toBe("approval_required");
    expect(error.consoleUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/approve$/);
    expect(error.consoleCode).toMatch(/^[2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4}$/);
    expect(error.message).toContain(`type the one-time code ${error.consoleCode} there`);

    // A foreign page cannot spend a code; wrong codes are refused, and the sixth try in a minute
    // is refused whatever it is — the right code included — until the minute has passed.
    expect((await postCode(error.consoleUrl, error.consoleCode, "https://evil.example")).status).toBe(403);
    for (const wrong of ["AAAA-AAAA", "2345-6789", "not a code", "", "ZZZZ-ZZZZ"])
      expect((await postCode(error.consoleUrl, wrong)).status).toBe(403);
    const limited = await postCode(error.consoleUrl, error.consoleCode);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await balance()).toBe(before);
  });
});
