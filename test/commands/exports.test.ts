/**
 * `purchases --csv` and `executions --csv` (the built CLI) over a real SQLite journal: one row
 * per purchase that holds money, amounts as decimals, the network, the transaction, the
 * status and who approved it (a passkey by its label and owner, a person, or none needed),
 * bounded by --since/--until; read back with an RFC 4180 parser. When LibreOffice is on the
 * machine, the file is also converted by it, headless, and must keep its rows.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Journal } from "../../src/engine/journal/sqlite.js";
import type { Intent, IntentPatch } from "../../src/engine/model/types.js";
import { parseCsv } from "../helpers/csv.js";
import { newIntent, payment } from "../helpers/journal-records.js";
import { runCli } from "../helpers/mcp.js";
import { ensureBuilt } from "../helpers/process.js";

const NETWORK = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
const PAYEE = "Se11erPayee1111111111111111111111111111111";
const DAY1 = Date.UTC(2026, 10, 1, 9, 0, 0);
const DAY2 = Date.UTC(2026, 10, 2, 9, 0, 0);
const DAY3 = Date.UTC(2026, 10, 3, 9, 0, 0);
const HEADER = ["date", "what", "amount", "network", "transaction", "status", "approved by"];

let home: string;
const env = () => ({ PATH: process.env.PATH ?? "", PAID_ACTIONS_HOME: home });

const requirements = (amount: bigint) =>
  ({
    scheme: "exact",
    network: NETWORK,
    amount: amount.toString(),
    asset: "Mint111",
    payTo: PAYEE,
    maxTimeoutSeconds: 60,
    extra: {},
  }) as Intent["requirements"];

/** A purchase signed and sent (its money held), as the engine records it. */
async function recordPaid(
  j: Journal,
  id: string,
  at: number,
  o: { fetchUrl?: string; amount: bigint; tx: string; approvalId?: string },
) {
  const fetch = o.fetchUrl !== undefined;
  const origin = "https://api.seller.example";
  await j.insertIntent(
    newIntent(id, {
      service: "svc",
      action: fetch ? "paid_fetch" : "servers.provision",
      input: fetch ? { method: "GET", url: o.fetchUrl, origin, headers: [], bodyBytes: 0 } : { region: "eu" },
      createdAt: at,
      ...(fetch
        ? { fetch: { origin, request: { url: o.fetchUrl!, origin, method: "GET", headers: {}, body: null } } }
        : {}),
    }),
  );
  const quoteId = `q_${id}`;
  const priced: IntentPatch = {
    state: "quoted",
    quoteId,
    amount: o.amount,
    payee: PAYEE,
    quotedAt: at,
    quoteExpiresAt: at + 300_000,
    approvalId: o.approvalId ?? null,
    leaseOwner: null,
    leaseUntil: null,
    ...(fetch
      ? { offer: {}, requirements: requirements(o.amount) }
      : {
          quote: {
            quoteId,
            action: "servers.provision",
            amount: "x",
            currency: "USDC",
            expiresAt: new Date(at + 300_000).toISOString(),
            paymentRequirement: { scheme: "exact", resource: "/v1/executions", network: NETWORK },
          },
        }),
  };
  await j.update(id, priced, at + 1);
  await j.update(
    id,
    {
      state: "reserved",
      budgetState: "reserved",
      budgetAmount: o.amount,
      budgetAt: at + 2,
      requirements: requirements(o.amount),
    },
    at + 2,
  );
  await j.recordSigned(payment(quoteId, id, { amount: o.amount, payee: PAYEE, signedAt: at + 3 }), {
    intentId: id,
    patch: { state: "signed", proof: "PROOF", paymentTx: o.tx },
    now: at + 3,
    expect: { state: "reserved" },
  });
}

beforeAll(async () => {
  ensureBuilt();
  home = mkdtempSync(join(tmpdir(), "pam-csv-"));
  const j = new Journal(join(home, "journal.sqlite"));
  await recordPaid(j, "int_fetch1", DAY1, {
    fetchUrl: 'https://api.seller.example/a,b"c?q=[redacted]',
    amount: 10_000n,
    tx: "TxFetch1",
  });
  await recordPaid(j, "int_fetch2", DAY2, {
    fetchUrl: "https://api.seller.example/weather",
    amount: 1_234_567n,
    tx: "TxFetch2",
  });
  await recordPaid(j, "int_act1", DAY1, { amount: 288_000n, tx: "TxAct1" });
  // Approved by a passkey labelled like a formula, with its (unchecked here) kept assertion.
  await j.insertApproval({
    approvalId: "apr_1",
    intentId: "int_act2",
    quoteId: "q_int_act2",
    action: "servers.provision",
    amount: 5_000_000n,
    payee: PAYEE,
    expiresAt: DAY3 + 300_000,
    status: "pending",
    createdAt: DAY3,
    decidedAt: null,
  });
  j.insertPasskey({
    credentialId: "cred_laptop_0000000000000000",
    publicKey: "AQID",
    algorithm: -7,
    rpId: "localhost",
    signCount: 0,
    label: "=laptop",
    owner: null,
    ownerSignature: null,
    createdAt: DAY1,
    removedAt: null,
  });
  const kept = {
    v: 1,
    rpId: "localhost",
    origin: "http://localhost:1234",
    terms: "{}",
    challenge: "abc",
    credential: {
      id: "cred_laptop_0000000000000000",
      publicKey: "AQID",
      algorithm: -7,
      owner: null,
      ownerSignature: null,
    },
    authenticatorData: "AA",
    clientDataJSON: "AA",
    signature: "AA",
    signCount: 1,
    verifiedAt: new Date(DAY3).toISOString(),
  };
  expect(j.approveWithAssertion("apr_1", DAY3, JSON.stringify(kept), "cred_laptop_0000000000000000", 1)).toBe(
    "approved",
  );
  await recordPaid(j, "int_act2", DAY3, { amount: 5_000_000n, tx: "TxAct2", approvalId: "apr_1" });
  // Refused before any money was held: not a purchase for the books.
  await j.insertIntent(newIntent("int_refused", { createdAt: DAY2, action: "servers.provision" }));
  await j.update("int_refused", { state: "refused", leaseOwner: null, leaseUntil: null }, DAY2);
  j.close();
}, 60_000);
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe("exports for the books", () => {
  it("purchases --csv: one row per paid_fetch purchase, amounts as decimals, quoted as RFC 4180 says", async () => {
    const r = await runCli(["purchases", "--csv"], env());
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const rows = parseCsv(r.stdout);
    expect(rows).toEqual([
      HEADER,
      [
        "2026-11-01T09:00:00.000Z",
        'GET https://api.seller.example/a,b"c?q=[redacted]',
        "0.01",
        NETWORK,
        "TxFetch1",
        "signed",
        "no approval needed",
      ],
      [
        "2026-11-02T09:00:00.000Z",
        "GET https://api.seller.example/weather",
        "1.234567",
        NETWORK,
        "TxFetch2",
        "signed",
        "no approval needed",
      ],
    ]);
  });

  it("executions --csv: actions only, the approving passkey named, --since/--until bound it (a date alone includes the day)", async () => {
    const all = parseCsv((await runCli(["executions", "--csv"], env())).stdout);
    expect(all.map((r) => r[1])).toEqual(["what", "servers.provision", "servers.provision"]);
    expect(all[1]).toEqual([
      "2026-11-01T09:00:00.000Z",
      "servers.provision",
      "0.288",
      NETWORK,
      "TxAct1",
      "signed",
      "no approval needed",
    ]);
    expect(all[2]).toEqual([
      "2026-11-03T09:00:00.000Z",
      "servers.provision",
      "5.00",
      NETWORK,
      "TxAct2",
      "signed",
      "passkey =laptop (apr_1)",
    ]);
    const day3 = parseCsv(
      (await runCli(["executions", "--csv", "--since", "2026-11-02", "--until", "2026-11-03"], env())).stdout,
    );
    expect(day3.map((r) => r[4])).toEqual(["transaction", "TxAct2"]);
    const none = parseCsv((await runCli(["executions", "--csv", "--until", "2026-11-01T09:00:00Z"], env())).stdout);
    expect(none).toEqual([HEADER]);
  });

  it("refuses --since without --csv, a bad date, --until before --since, and listing options with --csv (exit 2)", async () => {
    for (const args of [
      ["purchases", "--since", "2026-11-01"],
      ["executions", "--csv", "--since", "yesterday"],
      ["executions", "--csv", "--since", "2026-11-02", "--until", "2026-11-01"],
      ["purchases", "--csv", "--origin", "https://x.example"],
    ]) {
      const r = await runCli(args, env());
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout).toBe("");
    }
  });

  it("opens in a spreadsheet (LibreOffice, headless) with one row per purchase, when LibreOffice is here", async () => {
    const office = ["/usr/bin/libreoffice", "/usr/bin/soffice"].find((p) => existsSync(p));
    if (!office) return; // The parse-back tests above are the required ones; this runs where .ci/run or a person installed it.
    const dir = mkdtempSync(join(tmpdir(), "pam-csv-office-"));
    try {
      const csv = join(dir, "purchases.csv");
      writeFileSync(csv, (await runCli(["purchases", "--csv"], env())).stdout);
      execFileSync(
        office,
        ["--headless", "--convert-to", "csv:Text - txt - csv (StarCalc):44,34,76,1", "--outdir", join(dir, "out"), csv],
        {
          env: { ...process.env, HOME: dir },
          timeout: 120_000,
          stdio: "ignore",
        },
      );
      const back = parseCsv(readFileSync(join(dir, "out", "purchases.csv"), "utf8").replace(/\r?\n/g, "\r\n"));
      expect(back.length).toBe(3);
      expect(back[1]![1]).toBe('GET https://api.seller.example/a,b"c?q=[redacted]');
      expect(back[2]![2]).toBe("1.234567");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
