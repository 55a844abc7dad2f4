/**
 * `approve <id>` with a passkey registered: the terminal cannot carry the passkey's assertion,
 * so it hands the person the console's page for that approval — a console of its own, its
 * one-time link on the console's localhost name (printed, and the browser opened on its
 * sign-in page) — and waits until the approval is decided there, Ctrl-C, or it expires.
 */
import type { openJournal } from "../app/index.js";
import { startConsole } from "../console/server.js";
import type { ApprovalReview } from "../engine/index.js";
import { consoleDeps, openBrowser } from "./console.js";

type Opened = Awaited<ReturnType<typeof openJournal>>;

const out = (line = "") => process.stdout.write(`${line}\n`);

/** Polls the approval until it leaves `pending` (or its quote expires); its status then, or undefined when stopped. */
async function decided(j: Opened, approvalId: string, until: number, stop: Promise<void>): Promise<string | undefined> {
  let stopped = false;
  void stop.then(() => (stopped = true));
  while (!stopped && Date.now() < until) {
    const a = await j.journal.approval(approvalId);
    if (a && a.status !== "pending") return a.status;
    await Promise.race([new Promise((r) => setTimeout(r, 500)), stop]);
  }
  return undefined;
}

/** Hands the person the console's page for `review`; exit code 0 once decided there, 1 otherwise. */
export async function approveInConsole(j: Opened, env: NodeJS.ProcessEnv, review: ApprovalReview): Promise<number> {
  const handle = await startConsole(consoleDeps(j, env));
  let onSignal: (() => void) | undefined;
  const stop = new Promise<void>((resolve) => {
    onSignal = () => resolve();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  });
  try {
    const login = handle.login(`/approvals/${encodeURIComponent(review.approvalId)}`);
    const url = new URL(login.url);
    url.hostname = "localhost";
    out("A passkey is registered: this payment is approved in the console, with the passkey.");
    out(`Approval page: ${url.href}`);
    out("Open it in your browser (it works once, for 10 minutes); this waits for the decision. Ctrl-C stops.");
    openBrowser((await login.page()).path);
    const status = await decided(j, review.approvalId, Date.parse(review.expiresAt), stop);
    if (status === undefined) {
      process.stderr.write(
        `paid-actions-mcp: nothing was decided here: approval ${review.approvalId} is still waiting\n`,
      );
      return 1;
    }
    out(`Approval ${review.approvalId} is ${status} (decided in the console).`);
    return 0;
  } finally {
    process.off("SIGINT", onSignal!);
    process.off("SIGTERM", onSignal!);
    await handle.close();
  }
}
