import { readFileSync, readdirSync } from "node:fs";
import Database from "better-sqlite3";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PaidActionError } from "../../src/engine/errors.js";
import { Journal } from "../../src/engine/journal/sqlite.js";
import { engineFixture, SMALL_SERVER, type EngineFixture } from "../helpers/engine.js";
import { on, type SeenRequest } from "../helpers/proxy.js";
import { pollUntil } from "../helpers/wait.js";

describe("secrets never leave their place", () => {
  let f: EngineFixture;
  const logs: string[] = [];
  beforeAll(async () => {
    f = await engineFixture({
      open: { log: (line) => logs.push(line), reconcile: true, reconcilerIntervalMs: { min: 20, max: 100 } },
      env: { PAID_ACTIONS_MAX_PER_CALL: "1" },
      // The service answers one confirm with an error that echoes the request: the proof must not leak through it.
      rules: [
        {
          match: on("POST", "/v1/payments/confirm"),
          times: 1,
          action: {
            kind: "raw",
            handler: (_req, res, body) => {
              res.writeHead(503, { "content-type": "application/json" });
              res.end(JSON.stringify({ error: { code: "unavailable", message: `echo: ${body}` } }));
            },
          },
        },
      ],
    });
  });
  afterAll(() => f.close());

  it("a full flow and refusals leave no API key, wallet secret or proof in transcripts, logs, errors or outputs", async () => {
    const outputs: unknown[] = [];
    const paid = await f.pa.engine.pay(
      { action: "servers.provision", input: SMALL_SERVER },
      { callId: "call_secret1" },
    );
    outputs.push(paid);
    for (const req of [
      { action: "servers.provision", input: { ...SMALL_SERVER, plan: "gpu" } },
      { action: "domains.register", input: { domain: "x" } },
    ]) {
      try {
        await f.pa.engine.pay(req, { callId: "call_secret2" });
      } catch (e) {
        outputs.push((e as PaidActionError).toJSON(), (e as Error).message, (e as Error).stack);
      }
    }
    outputs.push(await f.pa.engine.quote({ action: "servers.provision", input: SMALL_SERVER }));
    await pollUntil(
      () => f.pa.engine.getExecution(paid.executionId, true),
      (e) => e?.status === "completed",
      { timeoutMs: 5_000, intervalMs: 50 },
    );
    outputs.push(
      await f.pa.engine.getExecution(paid.executionId, false),
      await f.pa.engine.listExecutions({}),
      await f.pa.engine.spending(),
    );

    const row = (await f.pa.journal.intent(paid.intentId))!;
    const proof = row.proof!;
    expect(proof.length).toBeGreaterThan(100);
    const apiKey = f.t.sb.apiKey;
    const walletFile = readFileSync(f.t.sb.walletPath, "utf8");
    const walletBytes = Uint8Array.from(JSON.parse(walletFile) as number[]);
    const seed = Buffer.from(walletBytes.subarray(0, 32));
    const secrets: Record<string, string[]> = {
      "API key": [apiKey],
      proof: [proof, JSON.parse(Buffer.from(proof, "base64").toString()).payload.transaction],
      "wallet secret": [
        walletFile.trim(),
        seed.toString("hex"),
        seed.toString("base64"),
        JSON.stringify(Array.from(walletBytes.subarray(0, 32))).slice(1, -1),
      ],
    };
    const journalUrl = f.env.PAID_ACTIONS_JOURNAL_URL;
    if (journalUrl) {
      // On PostgreSQL: the journal's password (the test server's holds characters a URL escapes), in either form.
      const password = decodeURIComponent(new URL(journalUrl).password);
      expect(password.length).toBeGreaterThan(8);
      secrets["journal password"] = [password, encodeURIComponent(password)];
    }

    const transcriptDir = join(f.home, "transcripts");
    const haystacks: Record<string, string> = {
      logs: logs.join("\n"),
      outputs: JSON.stringify(outputs),
    };
    for (const file of readdirSync(transcriptDir))
      haystacks[`transcript ${file}`] = readFileSync(join(transcriptDir, file), "utf8");
    expect(Object.keys(haystacks).some((k) => k.startsWith("transcript call_secret1"))).toBe(true);
    expect(haystacks["transcript call_secret1.jsonl"]).toContain("[redacted]");
    expect(haystacks["transcript call_secret1.jsonl"]).toContain("/payments/confirm");

    for (const [what, values] of Object.entries(secrets)) {
      for (const value of values) {
        for (const [where, text] of Object.entries(haystacks)) {
          expect(text.includes(value), `${what} found in ${where}`).toBe(false);
        }
      }
    }

    // The journal keeps the proof in its own column, and nowhere else: read raw, below the store.
    if (!(f.pa.journal instanceof Journal)) {
      expect(journalUrl).toBeDefined();
      await expectProofOnlyInItsColumn(journalUrl!, proof, apiKey);
      return;
    }
    // SQLite: the file's rows.
    const raw = new Database((f.pa.journal as Journal).path, { readonly: true });
    try {
      for (const table of ["intents", "payments", "approvals"]) {
        for (const r of raw.prepare(`SELECT * FROM ${table}`).all() as Array<Record<string, unknown>>) {
          for (const [column, value] of Object.entries(r)) {
            if ((table === "intents" && column === "proof") || typeof value !== "string") continue;
            expect(value.includes(proof), `proof in journal column ${table}.${column}`).toBe(false);
            expect(value.includes(apiKey), `API key in journal column ${table}.${column}`).toBe(false);
          }
        }
      }
    } finally {
      raw.close();
    }
  });
});

/**
 * PostgreSQL: every text column of every table in the journal's database holds neither the
 * proof nor the API key, except intents.proof, which holds the proof exactly once.
 */
async function expectProofOnlyInItsColumn(journalUrl: string, proof: string, apiKey: string): Promise<void> {
  const db = new pg.Client({ connectionString: journalUrl });
  await db.connect();
  try {
    const columns = (
      await db.query<{ table_name: string; column_name: string }>(
        `SELECT table_name, column_name FROM information_schema.columns
          WHERE table_schema = current_schema() AND data_type IN ('text', 'character varying', 'character', 'json', 'jsonb')
          ORDER BY table_name, column_name`,
      )
    ).rows;
    // The scan must see the journal's tables, or it would prove nothing.
    expect([...new Set(columns.map((c) => c.table_name))]).toEqual(
      expect.arrayContaining(["intents", "payments", "approvals"]),
    );
    for (const { table_name: table, column_name: column } of columns) {
      if (table === "intents" && column === "proof") continue;
      for (const [what, value] of [
        ["proof", proof],
        ["API key", apiKey],
      ] as const) {
        const found = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${pg.escapeIdentifier(table)} WHERE strpos(${pg.escapeIdentifier(column)}::text, $1) > 0`,
          [value],
        );
        expect(found.rows[0]!.n, `${what} in journal column ${table}.${column}`).toBe(0);
      }
    }
    const kept = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM intents WHERE proof = $1`, [proof]);
    expect(kept.rows[0]!.n).toBe(1);
  } finally {
    await db.end();
  }
}

describe("secrets the service echoes back", () => {
  // With /payments/confirm the proof is settled (paid) before the execution is asked for; on
  // the fast path it travels with the execution request, and stays out (signed).
  it.each([
    ["paid", "true"],
    ["signed", "false"],
  ])(
    "after a restart in state %s, a service echoing the proof gets it into no transcript, error or log",
    async (state, confirm) => {
      const logs: string[] = [];
      const echo = {
        match: (r: SeenRequest) => on("POST", "/v1/executions")(r) && r.headers["x-payment-proof"] !== undefined,
        action: {
          kind: "raw" as const,
          handler: (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) => {
            res.writeHead(503, { "content-type": "application/json" });
            res.end(
              JSON.stringify({
                error: {
                  code: "unavailable",
                  message: `cannot run it now; you sent ${String(req.headers["x-payment-proof"])}`,
                },
              }),
            );
          },
        },
      };
      const f = await engineFixture({
        rules: [echo],
        configFile: { http: { timeoutMs: 500, maxAttempts: 1 } },
        env: { PAID_ACTIONS_CONFIRM_PAYMENTS: confirm },
        open: { log: (l) => logs.push(l), settleWaitMs: 0 },
      });
      try {
        const req = { action: "servers.provision", input: SMALL_SERVER, intentKey: `echo-after-restart-${state}` };
        const first = await f.pa.engine.pay(req, { callId: "call_echo1" }).catch((e: PaidActionError) => e);
        expect((first as PaidActionError).code).toBe("service_unavailable");
        const intent = (await f.pa.journal.intentByKey(req.intentKey))!;
        expect(intent.state).toBe(state);
        const proof = intent.proof!;
        // A new process: its transcripts know no proof until the journal hands it one.
        await f.reopen({ resume: false, log: (l) => logs.push(l), settleWaitMs: 0 });
        const again = await f.pa.engine.pay(req, { callId: "call_echo2" }).catch((e: PaidActionError) => e);
        expect((again as PaidActionError).code).toBe("service_unavailable");
        const transcript = readFileSync(join(f.home, "transcripts", "call_echo2.jsonl"), "utf8");
        expect(transcript).toContain("cannot run it now");
        expect(transcript.includes(proof)).toBe(false);
        expect(JSON.stringify((again as PaidActionError).toJSON()).includes(proof)).toBe(false);
        expect(logs.join("\n").includes(proof)).toBe(false);
      } finally {
        await f.close();
      }
    },
  );

  it("an API key echoed near a cut point leaves not even a part of it in errors or transcripts", async () => {
    const f = await engineFixture({
      rules: [
        {
          match: on("POST", "/v1/quotes"),
          action: {
            kind: "raw",
            handler: (req, res) => {
              // The key straddles the 500-character cut of error messages.
              const message = `${"x".repeat(480)}${String(req.headers.authorization)}${"y".repeat(100)}`;
              res.writeHead(400, { "content-type": "application/json" });
              res.end(JSON.stringify({ error: { code: "invalid_request", message } }));
            },
          },
        },
      ],
    });
    try {
      const e = await f.pa.engine
        .pay({ action: "servers.provision", input: SMALL_SERVER }, { callId: "call_cutkey" })
        .catch((x: PaidActionError) => x);
      expect((e as PaidActionError).code).toBe("invalid_input");
      const key = f.t.sb.apiKey;
      const haystack = [
        JSON.stringify((e as PaidActionError).toJSON()),
        (e as Error).message,
        readFileSync(join(f.home, "transcripts", "call_cutkey.jsonl"), "utf8"),
      ].join("\n");
      for (let i = 0; i + 8 <= key.length; i++)
        expect(haystack.includes(key.slice(i, i + 8)), `part of the API key at ${i}`).toBe(false);
    } finally {
      await f.close();
    }
  });
});
