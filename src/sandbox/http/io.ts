/**
 * What every HTTP answer of the sandbox goes through: the reply shape, decisions.md's error
 * body (any unexpected error is a 500 that names only the request id), and reading a JSON
 * body — bounded in size and in nesting depth, strict about content type and UTF-8.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ErrorCode } from "../../domain/wire.js";
import { answered } from "./durable-reply.js";
import { ApiError, invalidRequest } from "./errors.js";

export const MAX_BODY_BYTES = 64 * 1024;
/** Deeper JSON is refused before it is parsed: nothing legitimate nests this far, and code that walks JSON recursively must not meet it. */
export const MAX_JSON_DEPTH = 64;

export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export function errorReply(e: unknown, requestId: string, log: (line: string) => void): Reply {
  const sqliteCode = (e as { code?: unknown })?.code;
  if (sqliteCode === "SQLITE_BUSY" || sqliteCode === "SQLITE_LOCKED") {
    e = new ApiError(
      503,
      "unavailable",
      "the service's storage is busy; retry with the same Idempotency-Key",
      {},
      { "Retry-After": "1" },
    );
  }
  if (e instanceof ApiError) {
    return {
      status: e.status,
      body: { error: { code: e.code, message: e.message, requestId, ...e.details } },
      headers: e.headers,
    };
  }
  log(`internal error on ${requestId}: ${(e as Error)?.stack ?? String(e)}`);
  return {
    status: 500,
    body: {
      error: {
        code: "internal_error" satisfies ErrorCode,
        message: "internal error; nothing was half-written, retry with the same key",
        requestId,
      },
    },
  };
}

export function send(res: ServerResponse, reply: Reply, requestId?: string): void {
  if (answered(res)) return;
  const text = JSON.stringify(reply.body);
  res.statusCode = reply.status;
  for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
  if (requestId) res.setHeader("X-Request-Id", requestId);
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(text);
}

/** Reads at most 64 KiB; parses JSON; strict about content type and UTF-8. */
export async function readJsonBody(req: IncomingMessage, method: string): Promise<{ body: unknown; raw: string }> {
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > MAX_BODY_BYTES) {
    req.resume();
    throw new ApiError(413, "payload_too_large", `request bodies are limited to ${MAX_BODY_BYTES} bytes`, {
      limit: MAX_BODY_BYTES,
    });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      req.resume();
      throw new ApiError(413, "payload_too_large", `request bodies are limited to ${MAX_BODY_BYTES} bytes`, {
        limit: MAX_BODY_BYTES,
      });
    }
    chunks.push(chunk);
  }
  if (size === 0) return { body: method === "GET" || method === "DELETE" ? undefined : {}, raw: "" };
  const type = (req.headers["content-type"] ?? "").toLowerCase();
  if (!/^application\/json\s*(;|$)/.test(type)) {
    throw new ApiError(
      415,
      "unsupported_media_type",
      "request bodies must be JSON, sent with Content-Type: application/json",
    );
  }
  let raw: string;
  try {
    raw = new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw invalidRequest("the body is not valid UTF-8", [{ path: "", message: "invalid UTF-8" }]);
  }
  if (jsonDepth(raw) > MAX_JSON_DEPTH) {
    throw invalidRequest(`the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`, [
      { path: "", message: `nested deeper than ${MAX_JSON_DEPTH} levels` },
    ]);
  }
  try {
    return { body: JSON.parse(raw), raw };
  } catch {
    throw invalidRequest("the body is not valid JSON", [{ path: "", message: "malformed JSON" }]);
  }
}

/**
 * The deepest nesting of arrays and objects in a JSON text, counted without parsing it
 * (brackets inside strings do not count). Stops counting past `limit`.
 */
export function jsonDepth(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return max;
}
