/**
 * What the SDK's parsing hides from a tool: a key named `__proto__`. JSON.parse makes it an
 * own key of the arguments, and zod drops such keys while validating the request, so a tool
 * would see the arguments without it — and might pay for what the agent did not send. The
 * transport marks a tools/call carrying one (in a `_meta` key of ours), and the call is
 * refused as invalid input, whatever the tool.
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/server";
import type { RequestCtx } from "./context.js";

export const DROPPED_KEYS_META = "paid-actions/dropped-keys";

/** The paths of own `__proto__` keys in a JSON value (bounded depth and count). */
export function protoKeyPaths(value: unknown, path = "arguments", depth = 0, out: string[] = []): string[] {
  if (depth > 32 || out.length >= 10 || value === null || typeof value !== "object") return out;
  if (Array.isArray(value)) {
    value.forEach((v, i) => protoKeyPaths(v, `${path}[${i}]`, depth + 1, out));
    return out;
  }
  for (const key of Object.keys(value)) {
    if (key === "__proto__") out.push(`${path}.__proto__`);
    else protoKeyPaths((value as Record<string, unknown>)[key], `${path}.${key}`, depth + 1, out);
  }
  return out;
}

/** A tools/call whose arguments carry `__proto__` keys, marked for the handler; anything else as it is. */
export function markDroppedKeys(message: JSONRPCMessage): JSONRPCMessage {
  const m = message as { method?: unknown; params?: { arguments?: unknown; _meta?: Record<string, unknown> } };
  if (m.method !== "tools/call" || !m.params || typeof m.params !== "object") return message;
  const paths = protoKeyPaths(m.params.arguments);
  if (paths.length === 0) return message;
  const meta = m.params._meta && typeof m.params._meta === "object" ? m.params._meta : {};
  return { ...message, params: { ...m.params, _meta: { ...meta, [DROPPED_KEYS_META]: paths } } } as JSONRPCMessage;
}

/** The `__proto__` keys the transport saw in this call's arguments, if any. */
export function droppedKeys(rctx: RequestCtx): string[] | undefined {
  const paths = (rctx.mcpReq._meta as Record<string, unknown> | undefined)?.[DROPPED_KEYS_META];
  return Array.isArray(paths) && paths.length > 0 ? paths.map(String) : undefined;
}
