/**
 * What a buyer checks on its own (FIELD-NOTES, "Money on chain"): getSignaturesForAddress
 * on its USDC token account, getTransaction (base64, maxSupportedTransactionVersion 0) for
 * each signature, isBlockhashValid for a proof that never landed — through @solana/kit's
 * createSolanaRpc against the sandbox over real HTTP, answered as a Solana node would.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  address,
  appendTransactionMessageInstructions,
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getSignatureFromTransaction,
  getTransactionDecoder,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  signature as toSignature,
  type Address,
  type KeyPairSigner,
} from "@solana/kit";
import { associatedTokenAddress, fundWallet } from "../../src/sandbox/ledger/chain.js";
import { freshKey } from "../helpers/api.js";
import { rpcCall, SERVER_INPUT, startTestSandbox, waitForExecution, type TestSandbox } from "../helpers/sandbox.js";

const MEMO_PROGRAM = address("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
const USDC = 1_000_000n;
const SOL = 1_000_000_000n;

type Rpc = ReturnType<typeof createSolanaRpc>;

/** A Memo instruction (no signers). */
const memoIx = (text: string) => ({ programAddress: MEMO_PROGRAM, accounts: [], data: new TextEncoder().encode(text) });

/** Token balance change of `owner`'s USDC in a landed transaction, per getTransaction meta. */
function usdcDelta(tx: any, owner: string, mint: string): bigint {
  const pick = (list: any[]) =>
    BigInt(list.find((b) => b.owner === owner && b.mint === mint)?.uiTokenAmount.amount ?? "0");
  return pick(tx.meta.postTokenBalances) - pick(tx.meta.preTokenBalances);
}

describe("getSignaturesForAddress, getTransaction and isBlockhashValid for a buyer's own checks", () => {
  let t: TestSandbox;
  let rpc: Rpc;
  let payer: KeyPairSigner;
  let payerAta: Address;
  /** Every transaction that touched payerAta, oldest first, with what we expect of it. */
  const history: Array<{ signature: string; memo: string | null; delta: bigint; names: "ata" | "both" }> = [];

  async function pay(
    outcome: "succeed" | "fail",
  ): Promise<{ quoteId: string; signature: string; executionId: string }> {
    const quote = await t.quote("servers.provision", SERVER_INPUT);
    const proof = await t.proof(quote.paymentRequirement.accepts[0], { signer: payer });
    const res = await t.call("POST", "/executions", {
      body: { action: "servers.provision", input: SERVER_INPUT },
      headers: {
        "idempotency-key": freshKey("pay"),
        "x-quote-id": quote.quoteId,
        "x-payment-proof": proof,
        "x-sandbox-outcome": outcome,
      },
    });
    expect(res.status, res.text).toBe(201);
    const settle = JSON.parse(Buffer.from(res.headers["payment-response"]!, "base64").toString("utf8")) as {
      transaction: string;
    };
    return { quoteId: quote.quoteId, signature: settle.transaction, executionId: res.body.executionId };
  }

  beforeAll(async () => {
    t = await startTestSandbox();
    rpc = createSolanaRpc(t.sb.rpcUrl);
    payer = await generateKeyPairSigner();
    payerAta = await associatedTokenAddress(payer.address, t.sb.asset);

    // Funding: creating the token account, then minting 10 USDC into it.
    const before = t.sb.ledger.slot();
    await fundWallet(t.sb.ledger, t.sb.keys, t.sb.asset, payer.address, 10n * USDC);
    const funding = (
      t.sb.db
        .prepare(`SELECT signature FROM ledger_log WHERE kind = 'tx' AND slot >= ? ORDER BY seq`)
        .all(Number(before)) as Array<{ signature: string }>
    )
      .map((r) => r.signature)
      .slice(-2);
    history.push({ signature: funding[0]!, memo: null, delta: 0n, names: "both" });
    history.push({ signature: funding[1]!, memo: null, delta: 10n * USDC, names: "ata" });

    // Three payments (memo = quote id), the last one failing and so refunded.
    for (const outcome of ["succeed", "succeed", "fail"] as const) {
      const p = await pay(outcome);
      history.push({
        signature: p.signature,
        memo: `[${p.quoteId.length}] ${p.quoteId}`,
        delta: -288_000n,
        names: "both",
      });
      if (outcome === "fail") {
        const done = await waitForExecution(t.call, p.executionId, (e) => e.status === "refunded");
        const refundMemo = `refund ${p.executionId}`; // names what it refunds
        history.push({
          signature: done.refund.transaction,
          memo: `[${refundMemo.length}] ${refundMemo}`,
          delta: 288_000n,
          names: "ata",
        });
      }
    }

    // A transaction of the payer's own with two memos (the payer pays its fee in SOL).
    t.sb.ledger.airdrop(payer.address, SOL);
    const { value: latest } = await rpc.getLatestBlockhash().send();
    const signed = await signTransactionMessageWithSigners(
      pipe(
        createTransactionMessage({ version: 0 }),
        (m) => setTransactionMessageFeePayerSigner(payer, m),
        (m) => setTransactionMessageLifetimeUsingBlockhash(latest, m),
        (m) => appendTransactionMessageInstructions([memoIx("first"), memoIx("séc; ✓")], m),
      ),
    );
    const sent = await rpc.sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: "base64" }).send();
    expect(sent).toBe(getSignatureFromTransaction(signed));
    // It names the owner only, not the token account.
    history.push({
      signature: sent,
      memo: `[5] first; [${new TextEncoder().encode("séc; ✓").length}] séc; ✓`,
      delta: 0n,
      names: "both",
    });
  });
  afterAll(() => t?.close());

  const onAta = () =>
    history
      .filter((h) => h.memo === null || h.delta !== 0n)
      .map((h) => h.signature)
      .reverse();

  it("lists every landed transaction naming the token account, newest first, shaped as a node's", async () => {
    const items = await rpc.getSignaturesForAddress(payerAta).send();
    expect(items.map((i) => i.signature)).toEqual(onAta());
    let lastSlot = BigInt(Number.MAX_SAFE_INTEGER);
    for (const item of items) {
      expect(Object.keys(item).sort()).toEqual(["blockTime", "confirmationStatus", "err", "memo", "signature", "slot"]);
      expect(item.err).toBeNull();
      expect(item.confirmationStatus).toBe("finalized");
      expect(typeof item.slot).toBe("bigint");
      expect(item.slot).toBeLessThanOrEqual(lastSlot);
      lastSlot = item.slot;
      expect(Math.abs(Number(item.blockTime) - Date.now() / 1000)).toBeLessThan(120);
      expect(item.memo).toBe(history.find((h) => h.signature === item.signature)!.memo);
    }
    // The payments carry their quote id as memo, in the node's "[<bytes>] <text>" form.
    expect(items.filter((i) => i.memo?.includes("qt_"))).toHaveLength(3);
  });

  it("getTransaction (base64, maxSupportedTransactionVersion 0) of each: meta.err null, token balances with owner, mint and amount", async () => {
    for (const entry of history.filter((h) => h.delta !== 0n)) {
      const tx = await rpc
        .getTransaction(toSignature(entry.signature), { encoding: "base64", maxSupportedTransactionVersion: 0 })
        .send();
      expect(tx, entry.signature).not.toBeNull();
      expect(tx!.meta!.err).toBeNull();
      const [wire, encoding] = tx!.transaction;
      expect(encoding).toBe("base64");
      const decoded = getTransactionDecoder().decode(getBase64Encoder().encode(wire));
      expect(Object.keys(decoded.signatures)[0]).toBe(t.sb.keys.feePayer.address);
      for (const b of [...tx!.meta!.preTokenBalances!, ...tx!.meta!.postTokenBalances!]) {
        expect(typeof b.owner).toBe("string");
        expect(typeof b.mint).toBe("string");
        expect(b.uiTokenAmount.amount).toMatch(/^\d+$/);
      }
      expect(usdcDelta(tx, payer.address, t.sb.asset)).toBe(entry.delta);
    }
    // Without maxSupportedTransactionVersion, a v0 transaction is refused, as a node refuses it.
    await expect(
      rpcCall(t.sb.rpcUrl, "getTransaction", [history[2]!.signature, { encoding: "base64" }]),
    ).rejects.toThrow(/maxSupportedTransactionVersion/);
  });

  it("the owner's own address lists what names it, but not a refund into its token account", async () => {
    const items = await rpc.getSignaturesForAddress(payer.address).send();
    const expected = history
      .filter((h) => h.names === "both")
      .map((h) => h.signature)
      .reverse();
    expect(items.map((i) => i.signature)).toEqual(expected);
    const refund = history.find((h) => h.memo?.includes("refund exe_"))!;
    expect(items.map((i) => i.signature)).not.toContain(refund.signature);
  });

  it("pages with limit, before and until like a node", async () => {
    const all = onAta();
    expect(all.length).toBeGreaterThanOrEqual(5);
    const page1 = await rpc.getSignaturesForAddress(payerAta, { limit: 2 }).send();
    expect(page1.map((i) => i.signature)).toEqual(all.slice(0, 2));
    const page2 = await rpc.getSignaturesForAddress(payerAta, { limit: 2, before: page1[1]!.signature }).send();
    expect(page2.map((i) => i.signature)).toEqual(all.slice(2, 4));
    const rest = await rpc.getSignaturesForAddress(payerAta, { before: page2[1]!.signature }).send();
    expect(rest.map((i) => i.signature)).toEqual(all.slice(4));
    // until: stop before reaching it (exclusive); with before, the window between.
    const newer = await rpc.getSignaturesForAddress(payerAta, { until: toSignature(all[3]!) }).send();
    expect(newer.map((i) => i.signature)).toEqual(all.slice(0, 3));
    const between = await rpc
      .getSignaturesForAddress(payerAta, { before: toSignature(all[0]!), until: toSignature(all[3]!) })
      .send();
    expect(between.map((i) => i.signature)).toEqual(all.slice(1, 3));
    // An unknown `before` finds nothing; an unknown `until` bounds nothing.
    const unknown = toSignature("1".repeat(64));
    expect(await rpc.getSignaturesForAddress(payerAta, { before: unknown }).send()).toEqual([]);
    expect((await rpc.getSignaturesForAddress(payerAta, { until: unknown }).send()).map((i) => i.signature)).toEqual(
      all,
    );
    // A signature that does not name the address still marks a position.
    const ownerOnly = history[history.length - 1]!.signature;
    expect(
      (await rpc.getSignaturesForAddress(payerAta, { before: toSignature(ownerOnly) }).send()).map((i) => i.signature),
    ).toEqual(all);
    // An address with no history.
    expect(await rpc.getSignaturesForAddress((await generateKeyPairSigner()).address).send()).toEqual([]);
  });

  it("refuses what a node refuses: limit outside 1-1000, processed commitment, a malformed address or signature", async () => {
    for (const config of [{ limit: 0 }, { limit: 1001 }, { limit: 1.5 }]) {
      await expect(rpcCall(t.sb.rpcUrl, "getSignaturesForAddress", [payerAta, config])).rejects.toThrow(
        /Invalid limit; max 1000/,
      );
    }
    await expect(
      rpcCall(t.sb.rpcUrl, "getSignaturesForAddress", [payerAta, { commitment: "processed" }]),
    ).rejects.toThrow(/commitment/);
    await expect(rpcCall(t.sb.rpcUrl, "getSignaturesForAddress", ["not-an-address"])).rejects.toThrow(/Invalid/);
    await expect(rpcCall(t.sb.rpcUrl, "getSignaturesForAddress", [payerAta, { before: "xyz" }])).rejects.toThrow(
      /signature/,
    );
    expect(
      await rpcCall(t.sb.rpcUrl, "getSignaturesForAddress", [payerAta, { limit: 1000, commitment: "confirmed" }]),
    ).toHaveLength(onAta().length);
  });

  it("isBlockhashValid: a proof's blockhash is valid until the ledger moves on, then never again", async () => {
    const quote = await t.quote("servers.provision", SERVER_INPUT);
    const blockhash = quote.paymentRequirement.accepts[0].extra.recentBlockhash;
    expect((await rpc.isBlockhashValid(blockhash).send()).value).toBe(true);
    t.sb.ledger.rotateBlockhash();
    expect((await rpc.isBlockhashValid(blockhash).send()).value).toBe(false);
  });
});

describe("a blockhash expires with time, whether or not anyone asks for a new one", () => {
  let t: TestSandbox;
  // The sandbox's clock runs ahead of the wall clock by `skew`: the lifetime passes by moving it on.
  let skew = 0;
  beforeAll(async () => {
    t = await startTestSandbox({ blockhashTtlMs: 300, now: () => Date.now() + skew });
  });
  afterAll(() => t?.close());

  it("isBlockhashValid turns false once the blockhash's lifetime has passed", async () => {
    const rpc = createSolanaRpc(t.sb.rpcUrl);
    const quote = await t.quote("servers.provision", SERVER_INPUT);
    const blockhash = quote.paymentRequirement.accepts[0].extra.recentBlockhash;
    expect((await rpc.isBlockhashValid(blockhash).send()).value).toBe(true);
    skew += 400;
    expect((await rpc.isBlockhashValid(blockhash).send()).value).toBe(false);
  });
});

describe("the address index of an older sandbox is built from its ledger log", () => {
  const home = mkdtempSync(join(tmpdir(), "pam-backfill-"));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it("a database at schema version 1 is migrated, and getSignaturesForAddress lists the transactions it already held", async () => {
    let t = await startTestSandbox({ home });
    const walletAta = await associatedTokenAddress(t.wallet.address, t.sb.asset);
    const quote = await t.quote("servers.provision", SERVER_INPUT);
    const confirm = await t.call("POST", "/payments/confirm", {
      body: { quoteId: quote.quoteId, paymentProof: await t.proof(quote.paymentRequirement.accepts[0]) },
    });
    expect(confirm.status, confirm.text).toBe(200);
    const before = await rpcCall<Array<{ signature: string; memo: string | null }>>(
      t.sb.rpcUrl,
      "getSignaturesForAddress",
      [walletAta],
    );
    expect(before.map((i) => i.signature)).toContain(confirm.body.transaction);
    await t.close();

    // Back to what version 1 had: no index, no payment blockhash, no facilitator, no EVM ledger columns.
    const db = new Database(join(home, "sandbox.sqlite"));
    db.exec(`DROP TABLE ledger_addresses; ALTER TABLE payments DROP COLUMN blockhash;
      DROP TABLE facilitator_settlements; DROP TABLE discovery_resources;
      ALTER TABLE quotes DROP COLUMN evm_requirements; ALTER TABLE payments DROP COLUMN network;
      ALTER TABLE payments DROP COLUMN evm_proof; PRAGMA user_version = 1;`);
    db.close();

    t = await startTestSandbox({ home });
    try {
      expect(t.sb.db.pragma("user_version", { simple: true })).toBe(5);
      const after = await rpcCall<Array<{ signature: string; memo: string | null }>>(
        t.sb.rpcUrl,
        "getSignaturesForAddress",
        [walletAta],
      );
      expect(after).toEqual(before);
      expect(after[0]).toMatchObject({
        signature: confirm.body.transaction,
        memo: `[${quote.quoteId.length}] ${quote.quoteId}`,
      });
      // The lookup walks the (address, seq) key, never the whole log.
      const plan = t.sb.db
        .prepare(
          `EXPLAIN QUERY PLAN SELECT l.signature FROM ledger_addresses a JOIN ledger_log l ON l.seq = a.seq
           WHERE a.address = 'x' AND a.seq < 10 AND a.seq > 0 ORDER BY a.seq DESC LIMIT 5`,
        )
        .all() as Array<{ detail: string }>;
      expect(plan.map((p) => p.detail).join("\n")).toMatch(
        /SEARCH a USING PRIMARY KEY \(address=\? AND seq>\? AND seq<\?\)/,
      );
      expect(plan.map((p) => p.detail).join("\n")).not.toMatch(/TEMP B-TREE/);
    } finally {
      await t.close();
    }
  });
});
