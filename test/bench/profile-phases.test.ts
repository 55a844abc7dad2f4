// The per-phase attribution behind `npm run bench -- --only profile`: which phase of a paid
// call a stack is in (the innermost frame that names one), on sites as the build's files name
// them, and a hand-made profile charged by phase, what no phase names left apart.
import { describe, expect, it } from "vitest";
import type { CpuProfile } from "./profile-attribution.mjs";
import { attributePhases, CALL_PHASES, phaseOf, siteOf } from "./profile-phases.mjs";

const key = (sites: (string | undefined)[]) => phaseOf(sites)?.key;

describe("a paid call's CPU by phase", () => {
  it.each([
    [
      { functionName: "update", url: "file:///app/dist/engine/journal/sqlite-intents.js" },
      "engine/journal/sqlite-intents:update",
    ],
    [{ functionName: "", url: "file:///app/dist/mcp/paid-calls.js" }, "mcp/paid-calls:(anonymous)"],
    [{ functionName: "safeParse", url: "file:///app/node_modules/zod/v4/classic/schemas.js" }, "package zod:safeParse"],
    [
      { functionName: "validateResult", url: "file:///app/node_modules/@modelcontextprotocol/server/dist/src-D.mjs" },
      "package @modelcontextprotocol/server:validateResult",
    ],
    [{ functionName: "write", url: "file:///app/dist/vendor/chunk-WJ5R2FZC.js" }, "vendor:write"],
    [{ functionName: "run", url: "" }, undefined],
    [{ functionName: "writev", url: "node:internal/stream_base_commons" }, undefined],
  ])("names the site of %j: %s", (frame, site) => {
    expect(siteOf(frame)).toBe(site);
  });

  it.each([
    // Innermost first: a journal write under the quote step is the quote's; under the flow, the flow's.
    [["engine/journal/sqlite:usage", "engine/intent/steps/quote:requestQuote", "mcp/paid-calls:call"], "quote"],
    [["engine/journal/sqlite:reserve", "engine/intent/held:write", "engine/intent/drive:run"], "flow"],
    [["engine/read/transcripts:append", "engine/intent/steps/quote:requestQuote"], "transcript"],
    [["engine/journal/sqlite-intents:insertIntentRow", "engine/intent/record:recordIntent"], "record"],
    [["engine/rails/solana/rpc:latestBlockhash", "engine/rails/solana/rail:(anonymous)"], "sign"],
    [["engine/rails/evm/sign:authorization"], "sign"],
    [["engine/intent/steps/price-and-sign:priceAndSign"], "sign"],
    // A bundled signer resumed after an await: the rail that called it is not on the stack.
    [["vendor:createProgramDerivedAddress", "vendor:createPaymentPayload"], "sign"],
    [["vendor:signBytes", "vendor:partiallySignTransactionMessageWithSigners"], "sign"],
    [["engine/intent/answers:settledTransaction", "engine/intent/steps/execute:execute"], "execute"],
    [["engine/intent/steps/deliver:deliver"], "execute"],
    [["engine/rails/solana/rpc:decodeRpcTransaction"], "reconciler"],
    [["engine/journal/sqlite:updatePayment", "engine/chain/settlement:checkSettlement"], "reconciler"],
    [["engine/read/executions:applyExecution", "engine/reconciler:handle"], "reconciler"],
    [["package zod:parse", "package @modelcontextprotocol/server:validateResult"], "mcp"],
    [["commands/serve:send"], "mcp"],
    // What names no phase: the service client resumed alone, a package alone, nothing of ours.
    [["engine/service/retry:classify", "engine/service/client:call"], undefined],
    [[undefined, "package undici:onData", undefined], undefined],
    [["vendor:getBase58Encoder"], undefined],
    [[], undefined],
  ])("puts the stack %j in the phase %s", (sites, phase) => {
    expect(key(sites)).toBe(phase);
  });

  it("charges a profile's samples by phase, idle left out, the rest by group", () => {
    const frame = (id: number, functionName: string, url = "", children: number[] = []) => ({
      id,
      callFrame: { functionName, url, lineNumber: 0 },
      children,
    });
    const dist = (path: string) => `file:///app/dist/${path}.js`;
    const profile: CpuProfile = {
      nodes: [
        frame(1, "(root)", "", [2, 3, 4, 6, 8]),
        frame(2, "(idle)"),
        frame(3, "(garbage collector)"),
        frame(4, "requestQuote", dist("engine/intent/steps/quote"), [5]),
        frame(5, "usage", dist("engine/journal/sqlite")),
        frame(6, "checkSettlement", dist("engine/chain/settlement"), [7]),
        frame(7, "run"),
        frame(8, "onData", "file:///app/node_modules/undici/lib/client.js"),
      ],
      samples: [2, 3, 5, 5, 7, 8],
      // Each sample lasts until the next one: 1, 2, 3, 4, 5 and 6 ms.
      timeDeltas: [0, 1000, 2000, 3000, 4000, 5000, 6000],
    };
    const a = attributePhases(profile);
    expect(a.busyMs).toBe(20);
    const label = (k: string) => CALL_PHASES.find((p) => p.key === k)!.label;
    expect(a.phases.slice(0, 2)).toEqual([
      [label("quote"), 7],
      [label("reconciler"), 5],
    ]);
    expect(a.phases).toHaveLength(CALL_PHASES.length);
    expect(a.phases.slice(2).every(([, ms]) => ms === 0)).toBe(true);
    expect(a.unattributed).toEqual([
      ["package undici", 6],
      ["garbage collection", 2],
    ]);
  });
});
