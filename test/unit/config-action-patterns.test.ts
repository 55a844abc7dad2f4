/**
 * Action names and patterns in the configuration (src/engine/config/config.ts): which actions
 * allowActions lets through, and the perAction keys that name nothing in the service's
 * catalog, with the nearest name suggested.
 */
import { describe, expect, it } from "vitest";
import { actionAllowed, unknownPerActionKeys, type ConfigIssue } from "../../src/engine/config/config.js";
import { FILE } from "./config.fixtures.js";

describe("unknownPerActionKeys", () => {
  const CATALOG = ["servers.provision", "servers.delete", "domains.register", "domains.check", "companies.form"];
  it.each<[string, string[], string | undefined, ConfigIssue[]]>([
    ["every key known", ["servers.provision", "servers.*", "*.register", "*"], undefined, []],
    [
      "a misspelt name, with the nearest suggested",
      ["server.provision"],
      FILE,
      [
        {
          key: `${FILE}:limits.perAction.server.provision`,
          message: "names no action of the service's catalog, so it caps nothing; did you mean servers.provision?",
        },
      ],
    ],
    [
      "a transposition",
      ["domains.regsiter"],
      undefined,
      [
        {
          key: "limits.perAction.domains.regsiter",
          message: "names no action of the service's catalog, so it caps nothing; did you mean domains.register?",
        },
      ],
    ],
    [
      "a name far from all",
      ["boats.charter"],
      undefined,
      [
        {
          key: "limits.perAction.boats.charter",
          message: "names no action of the service's catalog, so it caps nothing",
        },
      ],
    ],
    [
      "a pattern matching nothing, with a near pattern suggested",
      ["server.*"],
      FILE,
      [
        {
          key: `${FILE}:limits.perAction.server.*`,
          message: "matches no action of the service's catalog, so it caps nothing; did you mean servers.*?",
        },
      ],
    ],
    [
      "a verb pattern matching nothing",
      ["*.provison"],
      undefined,
      [
        {
          key: "limits.perAction.*.provison",
          message: "matches no action of the service's catalog, so it caps nothing; did you mean *.provision?",
        },
      ],
    ],
    [
      "a pattern far from all",
      ["boats.*"],
      undefined,
      [{ key: "limits.perAction.boats.*", message: "matches no action of the service's catalog, so it caps nothing" }],
    ],
    [
      "several, in order",
      ["servers.provision", "x.y", "servers.delte"],
      undefined,
      [
        { key: "limits.perAction.x.y", message: "names no action of the service's catalog, so it caps nothing" },
        {
          key: "limits.perAction.servers.delte",
          message: "names no action of the service's catalog, so it caps nothing; did you mean servers.delete?",
        },
      ],
    ],
  ])("%s", (_name, keys, configFile, expected) => {
    expect(unknownPerActionKeys(keys, CATALOG, configFile)).toEqual(expected);
  });

  it("takes the limits' record as well as a list of keys", () => {
    expect(
      unknownPerActionKeys({ "servers.provision": 1n, "server.provision": 2n }, CATALOG).map((i) => i.key),
    ).toEqual(["limits.perAction.server.provision"]);
  });

  it("reports every key of an empty catalog, without suggestions", () => {
    expect(unknownPerActionKeys(["servers.*", "servers.provision"], [])).toEqual([
      { key: "limits.perAction.servers.*", message: "matches no action of the service's catalog, so it caps nothing" },
      {
        key: "limits.perAction.servers.provision",
        message: "names no action of the service's catalog, so it caps nothing",
      },
    ]);
  });
});

describe("actionAllowed", () => {
  it.each<[string[], string, boolean]>([
    [["*"], "servers.provision", true],
    [["servers.provision"], "servers.provision", true],
    [["servers.provision"], "servers.provisions", false],
    [["servers.provision"], "xservers.provision", false],
    [["servers.*"], "servers.provision", true],
    [["servers.*"], "servers.", true],
    [["servers.*"], "serversXprovision", false],
    [["servers*"], "servers.provision", true],
    [["*.provision"], "servers.provision", true],
    [["*.provision"], "servers.deprovision", false],
    [["*provision"], "servers.deprovision", true],
    [["s*s.p*n"], "servers.provision", true],
    [["domains.*", "servers.delete"], "servers.delete", true],
    [["domains.*", "servers.delete"], "servers.provision", false],
    [[], "servers.provision", false],
    [["servers.pro-vision"], "servers.pro-vision", true],
    [["servers.provisio?"], "servers.provision", false],
  ])("%j allows %s: %s", (patterns, action, allowed) => {
    expect(actionAllowed(patterns, action)).toBe(allowed);
  });
});
