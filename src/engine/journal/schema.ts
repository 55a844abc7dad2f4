/**
 * The journal's schema: versioned migrations, applied once, in order, under the write lock.
 * A journal newer than this build knows is refused rather than misread.
 */
export const MIGRATIONS: string[] = [
  // 1: intents, approvals, the catalog cache. (meta holds facts of one row each, added without a
  // migration: the memory of approval PINs, pin-records.ts.)
  `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

  CREATE TABLE intents (
    intent_id TEXT PRIMARY KEY,
    intent_key TEXT NOT NULL UNIQUE,
    attempt INTEGER NOT NULL DEFAULT 0,
    idem_key TEXT NOT NULL UNIQUE,
    service TEXT NOT NULL,
    action TEXT NOT NULL,
    input TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    agent_budget TEXT,
    state TEXT NOT NULL,
    quote_id TEXT,
    quote TEXT,
    amount TEXT,
    payee TEXT,
    quote_expires_at INTEGER,
    quoted_at INTEGER,
    requirements TEXT,
    proof TEXT,
    payment TEXT,
    payment_tx TEXT,
    execution_id TEXT,
    execution TEXT,
    exec_status TEXT,
    output TEXT,
    refund TEXT,
    budget_state TEXT NOT NULL DEFAULT 'none',
    budget_amount TEXT,
    budget_at INTEGER,
    approval_id TEXT,
    error TEXT,
    attention TEXT,
    call_id TEXT,
    lease_owner TEXT,
    lease_until INTEGER,
    next_poll_at INTEGER,
    poll_interval_ms INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX intents_budget ON intents(budget_state, budget_at) WHERE budget_state IN ('reserved', 'spent');
  CREATE INDEX intents_unfinished ON intents(state) WHERE state IN ('new', 'quoted', 'reserved', 'signed', 'paid');
  CREATE INDEX intents_polling ON intents(next_poll_at) WHERE next_poll_at IS NOT NULL;
  CREATE INDEX intents_created ON intents(created_at DESC, intent_id DESC);
  CREATE INDEX intents_execution ON intents(execution_id) WHERE execution_id IS NOT NULL;
  CREATE INDEX intents_exec_status ON intents(exec_status, created_at DESC);
  CREATE INDEX intents_action ON intents(action, created_at DESC);

  CREATE TABLE approvals (
    approval_id TEXT PRIMARY KEY,
    intent_id TEXT NOT NULL,
    quote_id TEXT NOT NULL,
    action TEXT NOT NULL,
    amount TEXT NOT NULL,
    payee TEXT,
    expires_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    decided_at INTEGER
  );

  CREATE TABLE catalog (
    service TEXT NOT NULL,
    name TEXT NOT NULL,
    detail TEXT NOT NULL,
    fetched_at INTEGER NOT NULL,
    PRIMARY KEY (service, name)
  );
  `,
  // 2: money truth from the chain. Every signed proof is kept by its memo (the quote id) with
  // its fate; settlements and refunds carry what our own RPC showed.
  `
  ALTER TABLE intents ADD COLUMN settlement TEXT NOT NULL DEFAULT 'none';
  ALTER TABLE intents ADD COLUMN refund_state TEXT NOT NULL DEFAULT 'none';
  ALTER TABLE intents ADD COLUMN refund_credit TEXT NOT NULL DEFAULT '0';
  ALTER TABLE intents ADD COLUMN refund_tx TEXT;
  ALTER TABLE intents ADD COLUMN refund_seen_at INTEGER;
  -- Refunds credited on a status alone before this version: kept as credited, marked unverified.
  UPDATE intents SET refund_credit = COALESCE(budget_amount, '0'), budget_state = 'spent', refund_state = 'unverified'
    WHERE budget_state = 'refunded';
  UPDATE intents SET settlement = 'claimed' WHERE payment_tx IS NOT NULL;
  DROP INDEX intents_unfinished;
  CREATE INDEX intents_unfinished ON intents(state) WHERE state IN ('new', 'quoted', 'reserved', 'signed', 'unsettled', 'paid');
  CREATE INDEX intents_attention ON intents(created_at DESC) WHERE state = 'attention' OR attention IS NOT NULL;
  CREATE UNIQUE INDEX intents_refund_tx ON intents(refund_tx) WHERE refund_tx IS NOT NULL;

  CREATE TABLE payments (
    quote_id TEXT PRIMARY KEY,
    intent_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    amount TEXT NOT NULL,
    payee TEXT NOT NULL,
    payer TEXT,
    mint TEXT,
    blockhash TEXT,
    signed_at INTEGER NOT NULL,
    sent_at INTEGER,
    fate TEXT NOT NULL DEFAULT 'pending',
    tx TEXT,
    claimed_tx TEXT,
    checked_at INTEGER
  );
  CREATE INDEX payments_intent ON payments(intent_id);
  CREATE INDEX payments_signed ON payments(signed_at);
  INSERT INTO payments (quote_id, intent_id, attempt, amount, payee, signed_at, sent_at, fate, claimed_tx)
    SELECT quote_id, intent_id, attempt, amount, COALESCE(payee, ''), updated_at, updated_at,
           CASE WHEN payment_tx IS NOT NULL THEN 'landed' ELSE 'pending' END, payment_tx
    FROM intents WHERE proof IS NOT NULL AND quote_id IS NOT NULL AND amount IS NOT NULL;
  `,
  // 3: the index of tool-call transcripts (the files stay in each server's home): which
  // calls were made, when, and on which host — for a fleet sharing one journal.
  `
  CREATE TABLE transcripts (
    call_id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    host TEXT NOT NULL,
    home TEXT NOT NULL
  );
  CREATE INDEX transcripts_created ON transcripts(created_at DESC, call_id DESC);
  `,
  // 4: a payment's lifetime as our own RPC vouched for it, the watch on payments found unable
  // to land, and the token account it moves money from (the owner's, in delegate mode).
  // Those found unable to land before this version were judged by a blockhash the service
  // may have chosen: they are watched again (for up to a day after signing).
  `
  ALTER TABLE payments ADD COLUMN last_valid_height TEXT;
  ALTER TABLE payments ADD COLUMN watch INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE payments ADD COLUMN source TEXT;
  UPDATE payments SET watch = 1 WHERE fate = 'never';
  CREATE INDEX payments_watch ON payments(signed_at) WHERE watch = 1;
  `,
  // 5: the freeze, a person's stop on new payments, in the journal so that every server
  // sharing it sees it. At most one row: frozen while it exists. (FREEZE is a reserved word
  // in PostgreSQL, hence the table's name in both stores.)
  `
  CREATE TABLE payment_freeze (
    only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
    reason TEXT,
    frozen_at INTEGER NOT NULL,
    frozen_by TEXT NOT NULL
  );
  `,
  // 6: x402 resources bought with paid_fetch, beside the actions: what an intent buys, the
  // resource's origin, its request (a secret, like a proof), what its 402 offered, the answer
  // it got; the answer's body is kept apart, by intent.
  `
  ALTER TABLE intents ADD COLUMN kind TEXT NOT NULL DEFAULT 'action';
  ALTER TABLE intents ADD COLUMN origin TEXT;
  ALTER TABLE intents ADD COLUMN request TEXT;
  ALTER TABLE intents ADD COLUMN offer TEXT;
  ALTER TABLE intents ADD COLUMN response TEXT;
  CREATE INDEX intents_origin ON intents(origin, created_at DESC) WHERE origin IS NOT NULL;
  CREATE INDEX intents_kind ON intents(kind, created_at DESC, intent_id DESC);

  CREATE TABLE response_bodies (
    intent_id TEXT PRIMARY KEY,
    body BLOB NOT NULL,
    stored_at INTEGER NOT NULL
  );
  `,
  // 7: the budget's index covers the amounts it sums: a paid call reads the rolling 24 h's
  // usage twice, and with thousands of purchases a day, reading each one's row was most of a
  // call's time (the sum reads the index alone now).
  `
  DROP INDEX intents_budget;
  CREATE INDEX intents_budget ON intents(budget_state, budget_at, budget_amount, refund_credit)
    WHERE budget_state IN ('reserved', 'spent');
  `,
  // 8: the network each payment was signed for, which says which rail follows it (the
  // payments journaled before have none: they were made on the Solana network configured then).
  `
  ALTER TABLE payments ADD COLUMN network TEXT;
  `,
  // 9: passkeys (WebAuthn credentials a person registered at a terminal), and the passkey
  // assertion an approval was given with, kept whole so that a receipt can carry it. A passkey
  // removed keeps its row (removed_at): assertions it made stay checkable.
  `
  CREATE TABLE passkeys (
    credential_id TEXT PRIMARY KEY,
    public_key TEXT NOT NULL,
    algorithm INTEGER NOT NULL,
    rp_id TEXT NOT NULL,
    sign_count INTEGER NOT NULL DEFAULT 0,
    label TEXT,
    owner TEXT,
    owner_signature TEXT,
    created_at INTEGER NOT NULL,
    removed_at INTEGER
  );
  ALTER TABLE approvals ADD COLUMN assertion TEXT;
  `,
  // 10: an EVM payment's reference and lifetime: its EIP-3009 authorization's nonce (what ties
  // it to its record on chain, as a memo does on Solana) and the unix seconds it is valid after
  // and before, journaled before the proof leaves. Solana payments leave them null.
  `
  ALTER TABLE payments ADD COLUMN nonce TEXT;
  ALTER TABLE payments ADD COLUMN valid_after TEXT;
  ALTER TABLE payments ADD COLUMN valid_before TEXT;
  CREATE INDEX payments_nonce ON payments(nonce) WHERE nonce IS NOT NULL;
  `,
  // 11: the seller's signed word on a purchase (x402's offer-receipt extension): the signed
  // offer its 402 carried for the requirement paid, and the signed receipt its paid answer
  // carried, each as received with our check of it (JSON), so that a receipt can carry them.
  `
  CREATE TABLE seller_words (
    intent_id TEXT PRIMARY KEY,
    offer TEXT,
    receipt TEXT,
    updated_at INTEGER NOT NULL
  );
  `,
];
