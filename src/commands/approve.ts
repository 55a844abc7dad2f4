/**
 * `paid-actions-mcp approve [approvalId] [--json]`: a person decides on a payment above the
 * approval threshold. Without an id it lists what waits (allowed anywhere: it decides
 * nothing). With one it decides — only at an interactive terminal: it shows everything
 * about the payment, the person types the amount to approve it (or `decline`), then the
 * approval PIN when one is set. An agent's tool call has no terminal, so it cannot approve
 * its own payment here; the refusal it gets names the console or the terminal, not a command.
 */
import { openJournal } from "../app/index.js";
import { parseDecimal } from "../domain/money.js";
import { PaidActionError, registeredPasskeys, type ApprovalReview } from "../engine/index.js";
import { approveInConsole } from "./approve-console.js";
import { askPin, interactive, NO_TTY, readLine } from "./tty.js";

const out = (line = "") => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`paid-actions-mcp: ${line}\n`);

/** The exact refusal when there is no person at a terminal. */
export const APPROVE_NEEDS_TTY = `${NO_TTY("approving a payment")}; nothing was approved`;

/**
 * Text an agent or a service chose (the input, the action, the payee) is shown escaped:
 * control characters and bidirectional overrides could otherwise redraw or reorder what
 * the person reads in the terminal.
 */
export function safe(text: string): string {
  return text.replace(
    // eslint-disable-next-line no-control-regex -- matching control characters is the point: they are escaped
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

function inTime(iso: string, now: number): string {
  const s = Math.round((Date.parse(iso) - now) / 1000);
  if (s <= 0) return "expired";
  return s >= 120 ? `in ${Math.floor(s / 60)} min ${s % 60} s` : `in ${s} s`;
}

function against(spent: string, cap: string | null, per: string): string {
  if (cap === null) return `${spent} USDC (no ${per} cap)`;
  const over = (parseDecimal(spent) ?? 0n) > (parseDecimal(cap) ?? 0n);
  return `${spent} of ${cap} USDC${over ? " — over the cap: paying would be refused" : ""}`;
}

/** Everything a person needs to decide, as the terminal shows it. */
export function describeReview(r: ApprovalReview, now: number): string[] {
  const input = JSON.stringify(r.input, null, 2) ?? "null";
  return [
    `Approval ${r.approvalId}${r.status === "pending" ? (r.expired ? " (expired)" : " (waiting for a person)") : ` (${r.status})`}`,
    `  action   ${safe(r.action)}`,
    `  amount   ${r.amount} ${r.currency}`,
    `  payee    ${r.payee ? safe(r.payee) : "(not named by the quote or its payment challenge)"}`,
    `  expires  ${r.expiresAt} (${inTime(r.expiresAt, now)}), with its quote ${safe(r.quoteId)}`,
    `  after    last 24 h: ${against(r.after.spentLast24h, r.after.maxPerDay, "daily")}`,
    `           total:     ${against(r.after.spentTotal, r.after.maxTotal, "total")}`,
    `  input`,
    ...safe(input)
      .split("\n")
      .map((l) => `    ${l}`),
  ];
}

/** Why an approval cannot be decided any more, or undefined when it still can. */
function undecidable(r: ApprovalReview): string | undefined {
  switch (r.status) {
    case "used":
      return `approval ${r.approvalId} was already used: its payment went ahead once, and nothing more will be paid for it`;
    case "approved":
      return `approval ${r.approvalId} is already approved: the agent pays when it calls again with the same input and this approvalId`;
    case "declined":
      return `approval ${r.approvalId} was declined; nothing was or will be paid for it`;
    case "pending":
      return r.expired
        ? `approval ${r.approvalId} expired with its quote at ${r.expiresAt}; nothing was paid. The agent must ask again for a new quote`
        : undefined;
  }
}

export async function approveCommand(
  env: NodeJS.ProcessEnv,
  approvalId: string | undefined,
  opts: { json?: boolean } = {},
): Promise<number> {
  if (approvalId !== undefined && !interactive()) {
    err(APPROVE_NEEDS_TTY);
    return 2;
  }
  const j = await openJournal(env);
  try {
    if (approvalId === undefined) return await list(j.engine, opts.json === true);
    return await decide(j, approvalId, env);
  } finally {
    await j.close();
  }
}

type Opened = Awaited<ReturnType<typeof openJournal>>;
type Desk = Opened["engine"];

async function list(engine: Desk, json: boolean): Promise<number> {
  const items = await engine.pendingReviews();
  if (json) {
    out(JSON.stringify({ items }, null, 2));
    return 0;
  }
  if (items.length === 0) {
    out("No approval is waiting.");
    return 0;
  }
  const now = Date.now();
  items.forEach((r, i) => {
    if (i > 0) out();
    for (const line of describeReview(r, now)) out(line);
  });
  if (interactive())
    out(
      "\nTo decide on one, a person runs `paid-actions-mcp approve <approvalId>` here, or opens `paid-actions-mcp console`.",
    );
  return 0;
}

async function decide(opened: Opened, approvalId: string, env: NodeJS.ProcessEnv): Promise<number> {
  const { home, engine, journal } = opened;
  const review = await engine.approvalReview(approvalId);
  if (!review) {
    err(`there is no approval ${safe(approvalId.slice(0, 80))} in ${home}; nothing was approved`);
    return 1;
  }
  const stop = undecidable(review);
  if (stop) {
    err(stop);
    return 1;
  }
  for (const line of describeReview(review, Date.now())) out(line);
  out();
  // The terminal cannot carry a passkey's assertion: the console's page for it can.
  if ((await registeredPasskeys(journal)).length > 0) return approveInConsole(opened, env, review);
  const typed = await readLine(
    `Type ${review.amount} to approve paying ${review.amount} USDC, or "decline" to decline it (anything else leaves it waiting): `,
  );
  const answer = typed?.trim();
  const decision = answer === review.amount ? "approve" : answer?.toLowerCase() === "decline" ? "decline" : undefined;
  if (!decision) {
    err(
      `nothing was decided: approval ${approvalId} is still waiting${typed === undefined ? "" : ` (you typed ${JSON.stringify(safe(answer!.slice(0, 40)))}, not ${review.amount} or "decline")`}`,
    );
    return 1;
  }
  const nothing = decision === "approve" ? "nothing was approved" : "nothing was declined";
  if (!(await askPin(home, await journal.pinRecords(), nothing, err))) return 1;
  try {
    if (decision === "decline") {
      await engine.decline(approvalId, "terminal");
      out(
        `Declined ${approvalId}: nothing will be paid for it. A call of the agent waiting for it is refused now; the agent's next call with this approvalId is refused too.`,
      );
      return 0;
    }
    const a = await engine.approve(approvalId, "terminal");
    out(
      `Approved ${a.approvalId}: pay ${a.amount} USDC for ${safe(a.action)}${review.payee ? ` to ${safe(review.payee)}` : ""}, once, before ${a.expiresAt}.`,
    );
    // This process cannot see the server's calls (src/mcp/waits.ts): both cases are told.
    out(
      "A call of the agent waiting for it pays now, once; if none is waiting, the agent pays when it calls the tool again with the same input and this approvalId.",
    );
    return 0;
  } catch (e) {
    if (e instanceof PaidActionError) {
      err(`${e.message}; ${nothing}`);
      return 1;
    }
    throw e;
  }
}
