/**
 * The service's one error type: an HTTP status, a stable code from decisions.md's table,
 * a message for humans, and details merged into the error body.
 */
import type { ErrorCode } from "../../domain/wire.js";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export interface Issue {
  path: string;
  message: string;
}

export const invalidRequest = (message: string, issues: Issue[] = []) =>
  new ApiError(400, "invalid_request", message, { issues });

export const notFound = (what: string) => new ApiError(404, "not_found", `${what} not found`);

/** Turns zod issues into `[{path, message}]` with dotted paths under a prefix. */
export function zodIssues(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>, prefix = ""): Issue[] {
  return issues.slice(0, 50).map((i) => {
    const path = [prefix, ...i.path.map(String)].filter(Boolean).join(".");
    return { path, message: i.message };
  });
}
