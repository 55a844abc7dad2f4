/**
 * The service's execution statuses as a plain list, with no schema library behind it: the
 * CLI's command table checks `--status` against it on every start without loading zod
 * (wire.ts builds its `ExecutionStatus` schema from this list).
 */
export const EXECUTION_STATUSES = ["pending", "processing", "completed", "failed", "refunded"] as const;
