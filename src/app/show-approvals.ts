/**
 * Bringing a waiting approval to the person's desktop, for a host that cannot ask them
 * (McpHost.showApproval): the console's page for it opened in their browser — the opener
 * handed the path of a one-time sign-in page, never the link with its token — and a
 * notification. At most once per approval in this process: a retry that finds the approval
 * still pending waits for the person again without opening a second page.
 */
import type { Desktop } from "./desktop.js";

/** The notification's words (they name the payment; nothing secret). */
export interface Notice {
  title: string;
  body: string;
}

export function approvalShower(o: {
  desktop: Desktop;
  /** The path of a fresh one-time sign-in page that lands on `next` (the console starts on first use). */
  signInPage(next: string): Promise<string>;
  log: (line: string) => void;
}): (approvalId: string, notice: Notice) => Promise<void> {
  /** approvalId -> how bringing it went (a failure too: it is not tried again for that approval). */
  const shown = new Map<string, Promise<void>>();
  return (approvalId, notice) => {
    const known = shown.get(approvalId);
    if (known) return known;
    const showing = (async () => {
      const path = await o.signInPage(`/approvals/${encodeURIComponent(approvalId)}`);
      await o.desktop.open(path);
      // The page is what matters; the notification only draws the eye to it.
      void o.desktop.notify(notice.title, notice.body);
      o.log(`desktop: opened the console's page for approval ${approvalId} in the browser`);
    })();
    shown.set(approvalId, showing);
    return showing;
  };
}
