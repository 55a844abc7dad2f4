/**
 * The console's approve and decline fail closed on the approval PIN, over real HTTP, on a
 * home's SQLite journal and on a PostgreSQL one: once the journal remembers a PIN set in this
 * home (as `set-pin` records it), its file moved aside refuses every decision with
 * `pin_unreadable` — whatever PIN is sent — and the approval stays pending; the file back,
 * the PIN is asked for and the right one decides.
 */
import { mkdtempSync, renameSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openJournal } from "../../src/app/index.js";
import { startConsole, type ConsoleHandle } from "../../src/console/server.js";
import { pinPath, setPin } from "../../src/engine/approvals/pin.js";
import { newIntent } from "../helpers/journal-records.js";
import { loginAsPerson, type ConsolePerson } from "../helpers/console-person.js";
import { startTestPostgres, type TestPostgres } from "../helpers/postgres.mjs";

const PIN = "6402-green";

let pgServer: TestPostgres | undefined;
const homes: string[] = [];
afterAll(async () => {
  await pgServer?.stop();
  for (const h of homes) rmSync(h, { recursive: true, force: true });
}, 60_000);

/** The journal a home's env names: its own SQLite file, or a fresh PostgreSQL database. */
const STORES: Array<[string, () => Promise<Record<string, string>>]> = [
  ["SQLite in the home", async () => ({})],
  [
    "PostgreSQL",
    async () => {
      pgServer ??= await startTestPostgres();
      return { PAID_ACTIONS_JOURNAL_URL: await pgServer.createDatabase() };
    },
  ],
];

describe.each(STORES)("console: the approval PIN fails closed (%s)", (_store, journalEnv) => {
  let j: Awaited<ReturnType<typeof openJournal>>;
  let handle: ConsoleHandle;
  let person: ConsolePerson;
  let home: string;

  afterAll(async () => {
    await handle?.close();
    await j?.close();
  });

  let approvals = 0;
  async function pendingApproval(): Promise<string> {
    const n = ++approvals;
    await j.journal.insertIntent(newIntent(`int_consolepin${n}`, { createdAt: Date.now() }));
    const approvalId = `apr_consolepin${n}`;
    await j.journal.insertApproval({
      approvalId,
      intentId: `int_consolepin${n}`,
      quoteId: `q_consolepin${n}`,
      action: "servers.provision",
      amount: 2_000_000n,
      payee: null,
      expiresAt: Date.now() + 600_000,
      status: "pending",
      createdAt: Date.now(),
      decidedAt: null,
    });
    return approvalId;
  }
  const status = async (id: string) => (await j.journal.approval(id))?.status;
  const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; message: string } }).error;

  it("with the PIN file moved aside, approve and decline are refused (pin_unreadable) whatever PIN is sent, and nothing is decided", async () => {
    home = mkdtempSync(join(tmpdir(), "pam-console-pin-"));
    homes.push(home);
    j = await openJournal({ PATH: process.env.PATH ?? "", PAID_ACTIONS_HOME: home, ...(await journalEnv()) });
    handle = await startConsole({
      engine: j.engine,
      journal: j.journal,
      transcripts: j.transcripts,
      home,
      config: j.configResult.ok ? j.configResult.config : undefined,
      audit: async () => ({}),
    });
    person = await loginAsPerson(handle.loginUrl("/"));

    // What `set-pin` leaves: the hash in the home, the fact in the journal.
    await j.journal.recordPin({ host: hostname(), home, setAt: Date.now() });
    await setPin(home, PIN);
    renameSync(pinPath(home), `${pinPath(home)}.aside`);

    const session = (await (await person.get("/api/session")).json()) as { pinRequired: boolean };
    expect(session.pinRequired).toBe(true);
    const approvalId = await pendingApproval();
    for (const [decide, pin] of [
      [person.approve, undefined],
      [person.approve, PIN],
      [person.approve, "anything"],
      [person.decline, PIN],
    ] as const) {
      const res = await decide(approvalId, pin);
      expect(res.status).toBe(500);
      const e = await errorOf(res);
      expect(e.code).toBe("pin_unreadable");
      expect(e.message).toContain("the home dir has no PIN file (approval-pin) any more");
      expect(e.message).not.toContain(PIN);
    }
    expect(await status(approvalId)).toBe("pending");
  });

  it("the file back, the PIN is asked for again: a wrong one decides nothing, the right one approves", async () => {
    renameSync(`${pinPath(home)}.aside`, pinPath(home));
    const approvalId = await pendingApproval();
    const missing = await person.approve(approvalId);
    expect(missing.status).toBe(403);
    expect((await errorOf(missing)).code).toBe("pin_invalid");
    const wrong = await person.approve(approvalId, "6402-blue");
    expect(wrong.status).toBe(403);
    expect(await status(approvalId)).toBe("pending");
    const right = await person.approve(approvalId, PIN);
    expect(right.status).toBe(200);
    expect(await status(approvalId)).toBe("approved");
  });
});
