/**
 * callCeiling (src/engine/budget/policy.ts): the most one call may cost, the lowest of
 * maxPerCall, the perAction limits that match the action (exact or pattern) and the agent's
 * own budget, and which of them set it.
 */
import { describe, expect, it } from "vitest";
import type { Limits } from "../../src/engine/config/config.js";
import { callCeiling } from "../../src/engine/budget/policy.js";
import { limits, usdc } from "./policy.fixtures.js";

describe("callCeiling", () => {
  it.each<[string, Partial<Limits>, string, bigint | undefined, bigint, string]>([
    ["maxPerCall alone", {}, "servers.provision", undefined, usdc(5), "maxPerCall"],
    [
      "an exact perAction below it",
      { perAction: { "servers.provision": usdc(2) } },
      "servers.provision",
      undefined,
      usdc(2),
      "perAction[servers.provision]",
    ],
    [
      "an exact perAction equal to it does not take over",
      { perAction: { "servers.provision": usdc(5) } },
      "servers.provision",
      undefined,
      usdc(5),
      "maxPerCall",
    ],
    [
      "an exact perAction above it",
      { perAction: { "servers.provision": usdc(9) } },
      "servers.provision",
      undefined,
      usdc(5),
      "maxPerCall",
    ],
    [
      "a pattern perAction",
      { perAction: { "servers.*": usdc(3) } },
      "servers.provision",
      undefined,
      usdc(3),
      "perAction[servers.*]",
    ],
    [
      "a verb pattern",
      { perAction: { "*.provision": usdc(3) } },
      "servers.provision",
      undefined,
      usdc(3),
      "perAction[*.provision]",
    ],
    [
      "a pattern of another category",
      { perAction: { "domains.*": usdc(1) } },
      "servers.provision",
      undefined,
      usdc(5),
      "maxPerCall",
    ],
    [
      "the lowest of pattern and exact: pattern",
      { perAction: { "servers.provision": usdc(4), "servers.*": usdc(2) } },
      "servers.provision",
      undefined,
      usdc(2),
      "perAction[servers.*]",
    ],
    [
      "the lowest of pattern and exact: exact",
      { perAction: { "servers.*": usdc(4), "servers.provision": usdc(2) } },
      "servers.provision",
      undefined,
      usdc(2),
      "perAction[servers.provision]",
    ],
    [
      "exact wins a tie",
      { perAction: { "servers.*": usdc(2), "servers.provision": usdc(2) } },
      "servers.provision",
      undefined,
      usdc(2),
      "perAction[servers.provision]",
    ],
    [
      "the lowest of several patterns",
      { perAction: { "*": usdc(4), "servers.*": usdc(3), "*.provision": usdc(1) } },
      "servers.provision",
      undefined,
      usdc(1),
      "perAction[*.provision]",
    ],
    [
      "the agent budget below all",
      { perAction: { "servers.*": usdc(3) } },
      "servers.provision",
      usdc(1),
      usdc(1),
      "budget",
    ],
    [
      "the agent budget above perAction",
      { perAction: { "servers.*": usdc(3) } },
      "servers.provision",
      usdc(4),
      usdc(3),
      "perAction[servers.*]",
    ],
    ["the agent budget above maxPerCall", {}, "servers.provision", usdc(40), usdc(5), "maxPerCall"],
    ["a zero agent budget", {}, "servers.provision", 0n, 0n, "budget"],
  ])("%s", (_name, over, action, budget, ceiling, by) => {
    expect(callCeiling(limits(over), action, budget)).toEqual({ ceiling, by });
  });
});
