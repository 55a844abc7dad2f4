/**
 * Which approvals calls of this process are waiting for right now (waiting.ts records them):
 * the console this process serves reads it, to tell the person who decides whether a call
 * takes the decision at once or the agent will use it when it calls again. Other processes
 * (a console of its own, servers of a fleet) cannot see it: they say both.
 */
/**
 * How long a tool call waits for a person by default: 45 s, inside the 60 s a client SDK
 * waits for an answer by default (progress resets that timer only when the client asks).
 */
export const DEFAULT_APPROVAL_WAIT_MS = 45_000;

/** Which approvals calls of this process are waiting for right now. */
export interface ApprovalWaits {
  /** Records a call waiting for this approval; the function returned ends that record. */
  begin(approvalId: string): () => void;
  /** Whether a call of this process is waiting for this approval now. */
  waiting(approvalId: string): boolean;
}

export function createApprovalWaits(): ApprovalWaits {
  const counts = new Map<string, number>();
  return {
    begin(approvalId) {
      counts.set(approvalId, (counts.get(approvalId) ?? 0) + 1);
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        const left = (counts.get(approvalId) ?? 1) - 1;
        if (left > 0) counts.set(approvalId, left);
        else counts.delete(approvalId);
      };
    },
    waiting: (approvalId) => (counts.get(approvalId) ?? 0) > 0,
  };
}
