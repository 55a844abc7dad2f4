// The CPU profile attribution behind `npm run bench -- --only cpu-profile`, on a hand-made
// profile in the inspector's shape: which group and function each sample's time goes to.
import { describe, expect, it } from "vitest";
import { attribute, groupOfUrl, type CpuProfile } from "./profile-attribution.mjs";

const frame = (id: number, functionName: string, url = "", lineNumber = 0, children: number[] = []) => ({
  id,
  callFrame: { functionName, url, lineNumber },
  children,
});

/** Native `run` under our journal code, our code under better-sqlite3's transaction, GC and idle. */
const PROFILE: CpuProfile = {
  nodes: [
    frame(1, "(root)", "", 0, [2, 3, 4, 5]),
    frame(2, "(idle)"),
    frame(3, "(garbage collector)"),
    frame(4, "handle", "file:///app/dist/engine/journal/sqlite.js", 10, [6]),
    frame(5, "transaction", "file:///app/node_modules/better-sqlite3/lib/methods/transaction.js", 0, [7]),
    frame(6, "run"),
    frame(7, "updateRow", "file:///app/dist/engine/journal/sqlite-intents.js", 80),
  ],
  samples: [2, 3, 6, 6, 7, 5],
  // Each sample lasts until the next one: 1, 2, 3, 4, 5 and 6 ms.
  timeDeltas: [0, 1000, 2000, 3000, 4000, 5000, 6000],
};

describe("CPU profile attribution", () => {
  const a = attribute(PROFILE);

  it("leaves idle out and charges a native call to the code that called it", () => {
    expect(a.busyMs).toBe(20);
    expect(a.groups).toEqual([
      ["ours: dist/engine/journal", 12],
      ["package better-sqlite3", 6],
      ["garbage collection", 2],
    ]);
  });

  it("lists functions by their own samples, and ours with what they called", () => {
    expect(a.functions[0]).toEqual(["run ", 7]);
    expect(a.oursInclusive).toEqual([
      ["handle engine/journal/sqlite.js:11", 7],
      ["updateRow engine/journal/sqlite-intents.js:81", 5],
    ]);
  });

  it("groups source files by package, Node module and dist/ folder", () => {
    expect(groupOfUrl("file:///app/node_modules/@modelcontextprotocol/server/dist/index.js")).toBe(
      "package @modelcontextprotocol/server",
    );
    expect(groupOfUrl("file:///app/dist/vendor/litesvm.js")).toMatch(/^LiteSVM/);
    expect(groupOfUrl("file:///app/dist/vendor/chunk-X.js")).toMatch(/^dist\/vendor/);
    expect(groupOfUrl("file:///app/dist/cli.js")).toBe("ours: dist/cli");
    expect(groupOfUrl("node:internal/crypto/keys")).toBe("node: crypto (WebCrypto)");
    expect(groupOfUrl("node:internal/process/task_queues")).toBe("node: process/task_queues");
  });
});
