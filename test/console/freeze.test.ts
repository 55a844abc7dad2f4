/**
 * The console over real HTTP shows whether payments are frozen: GET /api/freeze, and the
 * live `freeze` event on /api/events as a freeze is made (by the built CLI, as a person or an
 * agent's shell makes it) and lifted (by another process on the same journal). The console
 * only reads it: freezing and lifting are the terminal's. Runs on SQLite and (the "engine on
 * postgres" project) on a PostgreSQL journal.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startConsole, type ConsoleHandle } from "../../src/console/server.js";
import { openEvents, type SseStream } from "../helpers/console-http.js";
import { loginAsPerson, type ConsolePerson } from "../helpers/console-person.js";
import { engineFixture, type EngineFixture } from "../helpers/engine.js";
import { ensureBuilt, runCli } from "../helpers/mcp.js";

let f: EngineFixture;
let handle: ConsoleHandle;
let person: ConsolePerson;
let stream: SseStream | undefined;

beforeAll(async () => {
  ensureBuilt();
  f = await engineFixture();
  handle = await startConsole({
    engine: f.pa.engine,
    journal: f.pa.journal,
    transcripts: f.pa.transcripts,
    home: f.home,
    config: f.pa.config,
    audit: async () => ({}),
  });
  person = await loginAsPerson(handle.loginUrl());
}, 120_000);

afterAll(async () => {
  stream?.close();
  await handle?.close();
  await f?.close();
});

const freezeNow = async () => ((await (await person.get("/api/freeze")).json()) as { freeze: unknown }).freeze;

describe("console: the freeze", () => {
  it("the API says whether payments are frozen, and the event stream tells every change as it happens", async () => {
    expect(await freezeNow()).toBeNull();
    stream = await openEvents(handle.port, person.cookie);
    await stream.next((e) => e.event === "freeze" && e.data.freeze === null, 5_000);

    const frozen = await runCli(["freeze", "--reason", "quarterly audit"], f.env as Record<string, string>);
    expect(frozen.code, frozen.stderr).toBe(0);
    const told = await stream.next((e) => e.event === "freeze" && e.data.freeze !== null, 5_000);
    expect(told.data.freeze).toEqual({
      reason: "quarterly audit",
      since: expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/),
      by: expect.stringMatching(/^[^/\s]+\/\d+$/),
    });
    const atRest = await freezeNow();
    expect(atRest).toEqual(told.data.freeze);
    expect(Date.parse((atRest as { since: string }).since)).toBe((await f.pa.journal.frozen())!.since);

    const before = stream.events.length;
    await f.pa.journal.unfreeze();
    await stream.next(
      (e) => e.event === "freeze" && e.data.freeze === null && stream!.events.indexOf(e) >= before,
      5_000,
    );
    expect(await freezeNow()).toBeNull();
  });

  it("the console only reads the freeze: no write reaches it", async () => {
    await f.pa.journal.freeze({ reason: "kept", since: Date.now(), by: "terminal" });
    try {
      for (const method of ["POST", "DELETE", "PUT"]) {
        const res = await fetch(new URL("/api/freeze", person.origin), {
          method,
          headers: { cookie: person.cookie, origin: person.origin, "x-csrf-token": person.csrf },
        });
        expect(res.status, method).toBe(405);
      }
      expect(await freezeNow()).toMatchObject({ reason: "kept" });
    } finally {
      await f.pa.journal.unfreeze();
    }
  });

  it("every page carries the banner's place, and the script that fills it is served", async () => {
    for (const path of ["/approvals", "/executions", "/spending", "/transcripts", "/audit"]) {
      const page = await (await person.get(path)).text();
      expect(page, path).toContain(`<div class="freeze-banner" id="freeze-banner" role="alert" hidden></div>`);
    }
    const app = await (await person.get("/assets/app.js")).text();
    expect(app).toContain(`getFreeze()`);
    expect(app).toContain(`on("freeze"`);
    expect(await (await person.get("/assets/api.js")).text()).toContain(`get("/api/freeze")`);
  });
});
