import { describe, expect, it } from "vitest";
import { DROPPED_KEYS_META, markDroppedKeys, protoKeyPaths } from "../../src/mcp/guards.js";

/** Arguments as JSON.parse makes them: `__proto__` is an own key there. */
const parsed = (json: string) => JSON.parse(json) as unknown;

describe("the __proto__ keys the SDK's parsing would hide from a tool", () => {
  it.each<[string, string, string[]]>([
    ["none", `{"region":"eu-west-1","plan":"small"}`, []],
    ["at the top", `{"region":"eu-west-1","__proto__":{"plan":"large"}}`, ["arguments.__proto__"]],
    ["nested", `{"owners":[{"name":"a"},{"__proto__":1}]}`, ["arguments.owners[1].__proto__"]],
    ["a value, not a key", `{"note":"__proto__"}`, []],
    ["not an object", `"__proto__"`, []],
  ])("finds them: %s", (_what, json, paths) => {
    expect(protoKeyPaths(parsed(json))).toEqual(paths);
  });

  it("marks a tools/call that carries one, keeping its _meta; leaves every other message as it is", () => {
    const call = {
      jsonrpc: "2.0" as const,
      id: 1,
      method: "tools/call",
      params: { name: "servers_provision", arguments: parsed(`{"__proto__":{}}`), _meta: { progressToken: 7 } },
    };
    const marked = markDroppedKeys(call) as { params: { _meta: Record<string, unknown> } };
    expect(marked.params._meta).toEqual({ progressToken: 7, [DROPPED_KEYS_META]: ["arguments.__proto__"] });
    const clean = { jsonrpc: "2.0" as const, id: 2, method: "tools/call", params: { name: "x", arguments: { a: 1 } } };
    expect(markDroppedKeys(clean)).toBe(clean);
    const list = {
      jsonrpc: "2.0" as const,
      id: 3,
      method: "tools/list",
      params: parsed(`{"__proto__":{}}`) as Record<string, unknown>,
    };
    expect(markDroppedKeys(list)).toBe(list);
  });
});
