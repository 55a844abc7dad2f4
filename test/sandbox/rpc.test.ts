/**
 * The sandbox's Solana JSON-RPC endpoint, driven by a standard client (@solana/kit's
 * createSolanaRpc) over real HTTP: every answer must parse with kit's own response
 * transformers and agree with the ledger's real state. (Its rate limit:
 * rpc-rate-limit.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AccountRole,
  address,
  appendTransactionMessageInstructions,
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getSignatureFromTransaction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  signature as toSignature,
  type AccountSignerMeta,
  type Address,
  type Instruction,
  type KeyPairSigner,
} from "@solana/kit";
import {
  TOKEN_PROGRAM_ADDRESS,
  getCreateAssociatedTokenIdempotentInstruction,
  getMintDecoder,
  getTransferCheckedInstruction,
} from "@solana-program/token";
import { associatedTokenAddress } from "../../src/sandbox/ledger/chain.js";
import { SERVER_INPUT, rawRpc, rpcCall, startTestSandbox, type TestSandbox } from "../helpers/sandbox.js";

const SYSTEM_PROGRAM = address("11111111111111111111111111111111");
const USDC = 1_000_000n;
const SOL = 1_000_000_000n;

/** A System Program Transfer instruction, built by hand (index 2, u64 lamports LE). */
function systemTransfer(from: KeyPairSigner, to: Address, lamports: bigint): Instruction {
  const data = new Uint8Array(12);
  const view = new DataView(data.buffer);
  view.setUint32(0, 2, true);
  view.setBigUint64(4, lamports, true);
  return {
    programAddress: SYSTEM_PROGRAM,
    accounts: [
      { address: from.address, role: AccountRole.WRITABLE_SIGNER, signer: from } as AccountSignerMeta,
      { address: to, role: AccountRole.WRITABLE },
    ],
    data,
  };
}

describe("the sandbox Solana JSON-RPC endpoint answers a standard @solana/kit client", () => {
  let t: TestSandbox;
  let rpc: ReturnType<typeof createSolanaRpc>;
  let mint: Address;
  let walletAta: Address;

  /** Builds and fully signs a v0 transaction against the blockhash the RPC hands out. */
  async function signedTx(feePayer: KeyPairSigner, instructions: Instruction[]) {
    const { value: latest } = await rpc.getLatestBlockhash().send();
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(feePayer, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(latest, m),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    const signed = await signTransactionMessageWithSigners(message);
    return { wire: getBase64EncodedWireTransaction(signed), signature: getSignatureFromTransaction(signed) };
  }

  beforeAll(async () => {
    t = await startTestSandbox();
    rpc = createSolanaRpc(t.sb.rpcUrl);
    mint = address(t.sb.asset);
    walletAta = await associatedTokenAddress(t.wallet.address, t.sb.asset);
  });
  afterAll(() => t?.close());

  it("getLatestBlockhash: a blockhash the ledger accepts, with a lastValidBlockHeight beyond the current slot", async () => {
    const res = await rpc.getLatestBlockhash().send();
    expect(typeof res.value.blockhash).toBe("string");
    expect(res.value.blockhash).toBe(t.sb.ledger.currentBlockhash());
    expect(typeof res.value.lastValidBlockHeight).toBe("bigint");
    expect(typeof res.context.slot).toBe("bigint");
    expect(res.value.lastValidBlockHeight).toBeGreaterThan(res.context.slot);
  });

  it("getAccountInfo (base64): the USDC mint is owned by the token program and decodes to 6 decimals", async () => {
    const res = await rpc.getAccountInfo(mint, { encoding: "base64" }).send();
    const account = res.value;
    expect(account).not.toBeNull();
    expect(account!.owner).toBe(TOKEN_PROGRAM_ADDRESS);
    expect(account!.owner).toBe("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
    expect(account!.executable).toBe(false);
    expect(typeof account!.lamports).toBe("bigint");
    const [data, encoding] = account!.data;
    expect(encoding).toBe("base64");
    const decoded = getMintDecoder().decode(getBase64Encoder().encode(data));
    expect(decoded.decimals).toBe(6);
    expect(decoded.isInitialized).toBe(true);
    // The wallet was funded with 1000 USDC at genesis, so the supply holds at least that.
    expect(decoded.supply).toBeGreaterThanOrEqual(1000n * USDC);
    expect(decoded.mintAuthority).toEqual({ __option: "Some", value: t.sb.keys.mintAuthority.address });

    const missing = await rpc.getAccountInfo((await generateKeyPairSigner()).address, { encoding: "base64" }).send();
    expect(missing.value).toBeNull();
  });

  it("getBalance: the fee payer holds SOL, the agent key holds none (the payer needs no SOL), the demo wallet only what signing its own allowance changes costs", async () => {
    const feePayer = await rpc.getBalance(t.sb.keys.feePayer.address).send();
    expect(typeof feePayer.value).toBe("bigint");
    expect(feePayer.value).toBeGreaterThan(0n);
    expect(feePayer.value).toBe(t.sb.ledger.lamports(t.sb.keys.feePayer.address));
    expect((await rpc.getBalance(t.agent.address).send()).value).toBe(0n);
    expect((await rpc.getBalance(t.wallet.address).send()).value).toBe(SOL);
  });

  it("getTokenAccountBalance: the demo wallet's associated token account holds 1000 USDC at start", async () => {
    const res = await rpc.getTokenAccountBalance(walletAta).send();
    expect(res.value.amount).toBe((1000n * USDC).toString());
    expect(res.value.decimals).toBe(6);
    expect(res.value.uiAmountString).toBe("1000");
    expect(res.value.uiAmount).toBe(1000);
  });

  it("getSignatureStatuses and getTransaction: a settled payment, with token balances moving exactly the quoted amount", async () => {
    const quote = await t.quote("servers.provision", SERVER_INPUT, "5");
    const requirements = quote.paymentRequirement.accepts[0];
    const confirm = await t.call("POST", "/payments/confirm", {
      body: { quoteId: quote.quoteId, paymentProof: await t.proof(requirements) },
      headers: { "idempotency-key": `rpc-confirm-${quote.quoteId}` },
    });
    expect(confirm.status).toBe(200);
    const sig = toSignature(confirm.body.transaction);
    const amount = BigInt(requirements.amount);
    expect(amount).toBeGreaterThan(0n);

    const unknown = toSignature("1".repeat(64));
    const statuses = await rpc.getSignatureStatuses([sig, unknown]).send();
    expect(statuses.value).toHaveLength(2);
    expect(statuses.value[0]).toMatchObject({ err: null, confirmationStatus: "finalized" });
    expect(typeof statuses.value[0]!.slot).toBe("bigint");
    expect(statuses.value[1]).toBeNull();

    const tx = await rpc.getTransaction(sig, { encoding: "base64", maxSupportedTransactionVersion: 0 }).send();
    expect(tx).not.toBeNull();
    expect(tx!.meta!.err).toBeNull();
    expect(tx!.slot).toBe(statuses.value[0]!.slot);
    const [wire, enc] = tx!.transaction;
    expect(enc).toBe("base64");
    expect(wire.length).toBeGreaterThan(0);
    // The fee payer (account 0) is the service's, never the payer.
    expect(tx!.meta!.preBalances.length).toBeGreaterThan(0);
    expect(tx!.meta!.preBalances[0]! - tx!.meta!.postBalances[0]!).toBe(tx!.meta!.fee);

    const treasury = t.sb.keys.treasury.address;
    const pre = tx!.meta!.preTokenBalances!;
    const post = tx!.meta!.postTokenBalances!;
    const find = (list: typeof pre, owner: string) => list.find((b) => b.owner === owner && b.mint === mint);
    const payerPre = find(pre, t.wallet.address);
    const payerPost = find(post, t.wallet.address);
    const treasuryPre = find(pre, treasury);
    const treasuryPost = find(post, treasury);
    for (const b of [payerPre, payerPost, treasuryPre, treasuryPost]) {
      expect(b).toBeDefined();
      expect(b!.uiTokenAmount.decimals).toBe(6);
      expect(b!.programId).toBe(TOKEN_PROGRAM_ADDRESS);
    }
    expect(BigInt(payerPre!.uiTokenAmount.amount) - BigInt(payerPost!.uiTokenAmount.amount)).toBe(amount);
    expect(BigInt(treasuryPost!.uiTokenAmount.amount) - BigInt(treasuryPre!.uiTokenAmount.amount)).toBe(amount);
    expect(BigInt(payerPost!.uiTokenAmount.amount)).toBe(1000n * USDC - amount);

    expect(
      await rpc.getTransaction(unknown, { encoding: "base64", maxSupportedTransactionVersion: 0 }).send(),
    ).toBeNull();

    // "json" (a Solana node's default encoding) gives the transaction as an object, not
    // the wire bytes; the same without any encoding.
    const json = await rpc.getTransaction(sig, { encoding: "json", maxSupportedTransactionVersion: 0 }).send();
    const byDefault = await rpcCall(t.sb.rpcUrl, "getTransaction", [sig, { maxSupportedTransactionVersion: 0 }]);
    expect(byDefault.transaction.signatures).toEqual([...json!.transaction.signatures]);
    expect(byDefault.transaction.message.accountKeys).toEqual([...json!.transaction.message.accountKeys]);
    expect(json).not.toBeNull();
    expect(json!.version).toBe(0);
    expect(json!.transaction.signatures[0]).toBe(sig);
    const message = json!.transaction.message;
    expect(message.accountKeys[0]).toBe(t.sb.keys.feePayer.address);
    expect(message.header.numRequiredSignatures).toBe(2); // fee payer and the payer
    expect(message.accountKeys).toContain(t.wallet.address);
    expect(message.recentBlockhash).toBe(requirements.extra.recentBlockhash);
    const programs = message.instructions.map((ix) => message.accountKeys[ix.programIdIndex]);
    expect(programs).toContain(TOKEN_PROGRAM_ADDRESS);
    expect(programs).toContain("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
    expect(json!.meta!.preTokenBalances).toEqual(tx!.meta!.preTokenBalances);

    // jsonParsed: account keys with their roles, instructions by program id.
    const parsed = await rpc.getTransaction(sig, { encoding: "jsonParsed", maxSupportedTransactionVersion: 0 }).send();
    const keys = parsed!.transaction.message.accountKeys;
    expect(keys[0]).toMatchObject({ pubkey: t.sb.keys.feePayer.address, signer: true, writable: true });
    expect(keys.find((k) => k.pubkey === t.wallet.address)).toMatchObject({ signer: true, writable: false });
    expect(parsed!.transaction.message.instructions.map((ix) => ix.programId)).toContain(TOKEN_PROGRAM_ADDRESS);
  });

  it("sendTransaction: a client-built, fully signed transfer lands and changes balances", async () => {
    const payer = await generateKeyPairSigner();
    const recipient = await generateKeyPairSigner();
    t.sb.ledger.airdrop(payer.address, 2n * SOL);
    expect((await rpc.getBalance(payer.address).send()).value).toBe(2n * SOL);

    const recipientAta = await associatedTokenAddress(recipient.address, t.sb.asset);
    const walletBefore = BigInt((await rpc.getTokenAccountBalance(walletAta).send()).value.amount);
    const walletSolBefore = (await rpc.getBalance(t.wallet.address).send()).value;
    const usdcAmount = 1_250_000n; // 1.25 USDC from the demo wallet, fees paid by `payer`
    const solAmount = 10_000_000n; // 0.01 SOL from payer to recipient

    const { wire, signature } = await signedTx(payer, [
      getCreateAssociatedTokenIdempotentInstruction({ payer, ata: recipientAta, owner: recipient.address, mint }),
      getTransferCheckedInstruction({
        source: walletAta,
        mint,
        destination: recipientAta,
        authority: t.wallet,
        amount: usdcAmount,
        decimals: 6,
      }),
      systemTransfer(payer, recipient.address, solAmount),
    ]);

    const sent = await rpc.sendTransaction(wire, { encoding: "base64" }).send();
    expect(sent).toBe(signature);

    expect((await rpc.getTokenAccountBalance(recipientAta).send()).value.amount).toBe(usdcAmount.toString());
    expect((await rpc.getTokenAccountBalance(walletAta).send()).value.amount).toBe(
      (walletBefore - usdcAmount).toString(),
    );
    expect((await rpc.getBalance(recipient.address).send()).value).toBe(solAmount);
    const payerAfter = (await rpc.getBalance(payer.address).send()).value;
    // payer paid the SOL, the rent of the new token account and the fee
    expect(payerAfter).toBeLessThan(2n * SOL - solAmount);
    expect(payerAfter).toBeGreaterThan(2n * SOL - solAmount - SOL / 100n);
    // The demo wallet's SOL did not move: it only signed as token authority.
    expect((await rpc.getBalance(t.wallet.address).send()).value).toBe(walletSolBefore);

    const status = await rpc.getSignatureStatuses([signature]).send();
    expect(status.value[0]).toMatchObject({ err: null });
    const tx = await rpc.getTransaction(signature, { encoding: "base64", maxSupportedTransactionVersion: 0 }).send();
    expect(tx?.meta?.err).toBeNull();
    expect(tx!.meta!.preBalances[0]! - tx!.meta!.postBalances[0]!).toBeGreaterThan(solAmount);

    // The same transaction again is a duplicate: rejected, and balances do not move twice.
    await expect(rpc.sendTransaction(wire, { encoding: "base64" }).send()).rejects.toThrow();
    expect((await rpc.getTokenAccountBalance(recipientAta).send()).value.amount).toBe(usdcAmount.toString());
    expect((await rpc.getBalance(recipient.address).send()).value).toBe(solAmount);
  });

  it("sendTransaction: the agent key cannot pay fees; the error is a JSON-RPC error and nothing moves", async () => {
    const recipient = await generateKeyPairSigner();
    const walletBefore = (await rpc.getTokenAccountBalance(walletAta).send()).value.amount;
    const { wire, signature } = await signedTx(t.agent, [systemTransfer(t.agent, recipient.address, 1n)]);
    let error: any;
    try {
      await rpc.sendTransaction(wire, { encoding: "base64" }).send();
    } catch (e) {
      error = e;
    }
    expect(error).toBeDefined();
    expect(error.context?.__code ?? error.context?.code).toBe(-32002);
    expect((await rpc.getSignatureStatuses([signature]).send()).value[0]).toBeNull();
    expect((await rpc.getBalance(recipient.address).send()).value).toBe(0n);
    expect((await rpc.getTokenAccountBalance(walletAta).send()).value.amount).toBe(walletBefore);
  });

  it("simulateTransaction: runs a signed transaction without landing it; a failing one reports err", async () => {
    const payer = await generateKeyPairSigner();
    const recipient = await generateKeyPairSigner();
    t.sb.ledger.airdrop(payer.address, SOL);
    const ok = await signedTx(payer, [systemTransfer(payer, recipient.address, 5_000_000n)]);
    const sim = await rpc.simulateTransaction(ok.wire, { encoding: "base64" }).send();
    expect(sim.value.err).toBeNull();
    expect(Array.isArray(sim.value.logs)).toBe(true);
    expect(sim.value.logs!.some((l) => l.includes(SYSTEM_PROGRAM))).toBe(true);
    expect(typeof sim.value.unitsConsumed).toBe("bigint");
    // Nothing landed.
    expect((await rpc.getBalance(recipient.address).send()).value).toBe(0n);
    expect((await rpc.getBalance(payer.address).send()).value).toBe(SOL);
    expect((await rpc.getSignatureStatuses([ok.signature]).send()).value[0]).toBeNull();

    // More lamports than the payer has: the simulation fails.
    const tooMuch = await signedTx(payer, [systemTransfer(payer, recipient.address, 5n * SOL)]);
    const failed = await rpc.simulateTransaction(tooMuch.wire, { encoding: "base64" }).send();
    expect(failed.value.err).not.toBeNull();
    expect((await rpc.getBalance(payer.address).send()).value).toBe(SOL);
  });

  it("isBlockhashValid: the latest blockhash is valid; an unknown one is not", async () => {
    const { value: latest } = await rpc.getLatestBlockhash().send();
    expect((await rpc.isBlockhashValid(latest.blockhash).send()).value).toBe(true);
    const other = (await generateKeyPairSigner()).address as unknown as typeof latest.blockhash;
    expect((await rpc.isBlockhashValid(other).send()).value).toBe(false);
  });

  it("an unknown method is JSON-RPC error -32601, with the request id echoed", async () => {
    const { status, json } = await rawRpc(
      t.sb.rpcUrl,
      JSON.stringify({ jsonrpc: "2.0", id: 42, method: "getNoSuchThing", params: [] }),
    );
    expect(status).toBe(200);
    expect(json).toMatchObject({ jsonrpc: "2.0", id: 42, error: { code: -32601 } });
    expect(json.result).toBeUndefined();
    // The kit client surfaces it as an error too.
    await expect((rpc as any).getStakeMinimumDelegation().send()).rejects.toThrow();
  });

  it("only the endpoint's own methods are dispatched: Object.prototype's names are -32601 and reveal nothing", async () => {
    for (const method of [
      "constructor",
      "toString",
      "__proto__",
      "hasOwnProperty",
      "valueOf",
      "isPrototypeOf",
      "__defineGetter__",
    ]) {
      const { status, json } = await rawRpc(t.sb.rpcUrl, JSON.stringify({ jsonrpc: "2.0", id: 7, method, params: [] }));
      expect(status).toBe(200);
      expect(json, method).toEqual({ jsonrpc: "2.0", id: 7, error: { code: -32601, message: "Method not found" } });
    }
    const batch = await rawRpc(
      t.sb.rpcUrl,
      JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "constructor", params: [] }]),
    );
    expect(JSON.stringify(batch.json)).not.toContain(t.sb.home);
    expect(batch.json[0].error.code).toBe(-32601);
  });

  it("malformed JSON is JSON-RPC error -32700 with id null", async () => {
    const { json } = await rawRpc(t.sb.rpcUrl, '{"jsonrpc": "2.0", "id": 1, "method": "getSlot"');
    expect(json).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
  });

  it("a batch request is answered with one response per request, in order, each with its id", async () => {
    const batch = [
      { jsonrpc: "2.0", id: 1, method: "getBalance", params: [t.sb.keys.feePayer.address] },
      { jsonrpc: "2.0", id: "two", method: "nope", params: [] },
      { jsonrpc: "2.0", id: 3, method: "getTokenAccountBalance", params: [walletAta] },
      { jsonrpc: "2.0", id: 4, method: "getLatestBlockhash", params: [] },
    ];
    const { status, json } = await rawRpc(t.sb.rpcUrl, JSON.stringify(batch));
    expect(status).toBe(200);
    expect(Array.isArray(json)).toBe(true);
    expect(json).toHaveLength(4);
    expect(json.map((r: any) => r.id)).toEqual([1, "two", 3, 4]);
    expect(BigInt(json[0].result.value)).toBe(t.sb.ledger.lamports(t.sb.keys.feePayer.address));
    expect(json[1].error.code).toBe(-32601);
    expect(json[2].result.value.decimals).toBe(6);
    expect(BigInt(json[2].result.value.amount)).toBe(t.sb.ledger.tokenAccount(walletAta)!.amount);
    expect(json[3].result.value.blockhash).toBe(t.sb.ledger.currentBlockhash());

    const empty = await rawRpc(t.sb.rpcUrl, "[]");
    expect(empty.json).toMatchObject({ id: null, error: { code: -32600 } });
  });
});
