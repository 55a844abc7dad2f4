/**
 * What each error code carries: its context's type (what a reader acts on, kept in the
 * journal and shown to the agent as structured fields) and, for a few codes, the facts its
 * message alone reads. The templates that turn these into words are in error-table.ts.
 *
 * A code whose message has several shapes says which with `problem`, so that a reader can
 * branch on it too; free text that only the caller knows (a service's own message, an
 * exception's) is `detail`.
 */
import type { KeypairFileError } from "../domain/keypair.js";
import type { Drift } from "./budget/policy.js";
import type { Money } from "./model/states.js";
import type { PasskeyProblem } from "./evidence/webauthn.js";

/** What any refusal may also say: which purchase it is about, and where that purchase stands. */
export interface PurchaseContext {
  intentId?: string;
  intentKey?: string;
  /** The intent's state once the outcome was recorded (an IntentState). */
  state?: string;
  quoteId?: string | null;
  /**
   * Where the purchase's money is, from the journal when the engine answered: the state's word
   * and the fate of every proof signed for it (intent/money.ts). What the agent is told to do
   * follows it (error-table.ts): "nothing was paid" only where it is `none`.
   */
  money?: Money;
}

/** A limit that refused a payment, as budget/policy.ts says it (decimal USDC strings). */
export interface LimitContext {
  limit?: string;
  amount?: string;
  ceiling?: string;
  maxPerDay?: string;
  spentLast24h?: string;
  maxTotal?: string;
  spentTotal?: string;
  remaining?: string;
  /** Found when the proof was about to be signed (the call's lowest budget), not when the quote was decided. */
  stage?: "sign";
}

/** One problem with the agent's input: where (a dotted path) and what. */
export interface InputIssue {
  path: string;
  message: string;
}

/** The one key whose absence or fault stops the engine, each with its own sentence (error-table.ts). */
export type ConfigKeyProblem = "SOLANA_RPC_URL" | "PAID_ACTIONS_JOURNAL_URL" | "PAID_ACTIONS_FACILITATOR_URL";

/** An input the agent gave that breaks a fixed rule, one sentence each (error-table.ts). */
export type InputRule =
  | "cursor"
  | "origin"
  | "action_name"
  | "input_object"
  | "input_json"
  | "input_size"
  | "budget_amount"
  | "intent_key"
  | "arguments_object"
  | "arguments_depth";

/** Why an approvalId cannot be used, one sentence each (error-table.ts). */
export type ApprovalProblem =
  /** No approval has this id. */
  | "missing"
  /** It was given for another quote or a lower amount. */
  | "mismatch"
  /** It was given for another action or input. */
  | "other_input"
  /** Its quote expired before it was used. */
  | "expired"
  /** It was used for its one payment already. */
  | "used"
  /** A person decided it already (`status` says how). */
  | "decided"
  /** It changed while a person was approving it. */
  | "changed"
  /** It expired or is gone while the call waited for a person. */
  | "gone"
  /** The call came back with an input_required state this server did not issue. */
  | "foreign_state"
  /** The approval question was asked for another call. */
  | "other_call"
  /** A passkey is registered: it counts only with the person's passkey assertion over its terms (the console). */
  | "passkey_required"
  /** Its passkey assertion was refused (`passkey` says which check failed). */
  | "passkey_invalid";

/** Who was handed a proof: the v1 service (an action), or the x402 resource itself (a fetch). */
export type Payee = "service" | "resource";

/** When a call was cancelled, one sentence each (error-messages.ts). */
export type CancelStage =
  | "before_start"
  /** A paid_fetch, before anything was sent. */
  | "fetch_before_start"
  | "before_quote"
  | "before_request"
  | "after_quote"
  | "after_price"
  | "before_reserve"
  | "before_sign"
  | "waiting_for_service"
  | "waiting_for_person";

/** A service's refusal as it said it: its code, its HTTP status, its own message. */
interface ServiceSaid {
  serviceCode: string;
  status: number;
  /** The service's own message, as it gave it (cut short). */
  detail: string;
}

/** Each code's context. */
export interface ErrorContexts {
  config_invalid:
    | { issues: ReadonlyArray<{ key: string; message: string }> }
    | { key: ConfigKeyProblem }
    /** A command that reads only was asked for what only paying needs: a payer or the chain. */
    | { needs: "payer" | "chain" };
  /** `detail`: the wallet reader's own sentence about the file, when it gave one. */
  wallet_invalid: { walletPath: string; reason: KeypairFileError["reason"]; detail?: string };
  /** `field`: which of the agent's fields; `issues`: the service's own, when it refused the input. */
  invalid_input: { field?: string; serviceCode?: string; issues?: readonly unknown[] } & (
    | { problem: InputRule }
    | { problem: "budget_currency"; got: string }
    /** The arguments carry a `__proto__` key: `issues` names where. */
    | { problem: "proto_key"; issues: readonly InputIssue[] }
    /** The arguments do not match the tool's schema (`tool`): `issues` says how. */
    | { problem: "arguments"; tool: string; issues: readonly InputIssue[] }
    /** The paid tool's input does not match the action's schema. */
    | { problem: "schema"; tool: string; issues: readonly InputIssue[] }
    /** One of a paid tool's own arguments (budget, intentKey, approvalId) is malformed. */
    | { problem: "extras"; issues: readonly InputIssue[] }
    /** paid_fetch's request, as its reader says what is wrong with it. */
    | { problem: "request"; detail: string }
    /** The service refused the input it was asked to quote. */
    | { problem: "service"; serviceCode: string; detail: string }
    /** The service refused a marketplace search as such. */
    | ({ problem: "search" } & ServiceSaid)
  );
  action_unknown: { serviceCode?: string; detail?: string };
  action_not_allowed: { action?: string; allowActions?: readonly string[] };
  budget_exceeded: LimitContext;
  approval_required: {
    approvalId: string;
    action: string;
    amount: string;
    currency: "USDC";
    payee?: string | null;
    expiresAt: string;
    /** A one-time sign-in link to the console's page for it, when the person was sent there (URL mode). */
    consoleUrl?: string;
    /** The one-time code to type at `consoleUrl` (the console's /approve page), for a host that opens links inside itself. */
    consoleCode?: string;
    /** Why the call returned before a person decided (the host could not ask, no decision yet, ...). */
    detail?: string;
  };
  /**
   * `answer`: what the host's prompt answered (decline, cancel). `amount` and `action`: what
   * the person was asked to approve, when the engine asked them itself.
   */
  approval_declined: { approvalId?: string; answer?: string; amount?: string; action?: string };
  /** The agent's approvalId, as it gave it (maybe not even a string); `problem`: why it cannot be used. */
  approval_invalid: {
    approvalId?: unknown;
    problem: ApprovalProblem;
    /** How a person decided it (problem `decided`). */
    status?: string;
    /** When its quote expired (problem `expired`, when a person tried to approve it). */
    expiresAt?: string;
    /** Which check a passkey assertion failed (problem `passkey_invalid`). */
    passkey?: PasskeyProblem;
  };
  quote_drift: { serviceCode?: string; drifts?: Drift[] } &
    /** The payment challenge differs from the quote: `drifts` says where. */
    (
      | { problem: "challenge"; drifts: Drift[] }
      /** The service says the quote is for another intent (its preflight answered so). */
      | { problem: "other_intent"; serviceCode: string; detail: string }
      /** /payments/prepare answered for another quote. */
      | { problem: "prepared_other"; preparedFor: string }
      /** The quote itself is malformed (`detail` says how) or for another action. */
      | { problem: "quote"; detail: string }
    );
  /** `stage`: where the expiry was found; `expiredAt`: when, by our clock. */
  quote_expired: { expiredAt?: string; stage: "service" | "challenge" | "decide" | "sign" };
  quote_rejected: { serviceCode?: string; status?: number } &
    /** The service refused the intent at its preflight. */
    (
      | ({ problem: "preflight" } & ServiceSaid)
      /** The service refused to prepare a payment challenge. */
      | ({ problem: "prepare" } & ServiceSaid)
      /** The service refused to quote. */
      | ({ problem: "quote" } & ServiceSaid)
      /** No challenge anywhere: not in the quote, /payments/prepare or the preflight's 402. */
      | { problem: "no_challenge" }
    );
  payee_not_allowed: { payee?: string };
  payment_invalid:
    /** The service confirmed a payment that does not match the quote: `transaction` is what a human checks. */
    | { problem?: undefined; serviceCode?: string; transaction?: string }
    /**
     * `who` refused the proof and the chain shows it can never land; `why`: the chain's facts,
     * as the rail read them (Solana: its blockhash expired, no transfer for its memo; EVM: the
     * newest block is past validBefore, the nonce unused).
     */
    | { problem: "never_landed"; who: Payee; why: string; serviceCode?: string };
  /**
   * The service confirmed a settlement that does not match the quote: money moved, and the
   * purchase is held for a person; `transaction`, the one it names.
   */
  payment_mismatch: { transaction: string; serviceCode?: string };
  payment_failed: { transaction?: string } &
    /** Our Solana RPC could not be read (`what`): nothing was signed, a retry may succeed. */
    (
      | { problem: "rpc"; what: "allowance" | "blockhash"; detail: string }
      /** Our EVM RPC for `network` could not be read (the key's USDC balance): nothing was signed. */
      | { problem: "rpc"; what: "balance"; network: string; detail: string }
      /** The payment transaction (on EVM, with `network`: the authorization) could not be built. */
      | { problem: "build"; detail: string; network?: string }
      /** The transaction was not built with the blockhash our RPC gave. */
      | { problem: "blockhash"; blockhash: string }
      /** A payment landed other than as priced, or after it was given up: `detail` is the evidence. */
      | { problem: "landed"; transaction: string; detail: string }
    );
  payment_loop: { executionId?: string; transaction?: string | null };
  outcome_unknown: { serviceCode?: string; reason?: unknown } &
    /** The intent stopped in `state` without an outcome this call can answer with; it is still followed. */
    (
      | { problem: "stopped"; intentId: string; state: string }
      /** The intent is executed but names no execution. */
      | { problem: "no_execution"; intentId: string }
      /** The service is still settling the payment, or still running the execution request. */
      | { problem: "settling" | "executing" }
      /**
       * `who` did not settle a proof that left (it answered `status` with `serviceCode` and its own
       * `detail`; `reason`, the settlement's own when it gave one): the chain is asked.
       */
      | { problem: "not_settled"; who: Payee; status: number; serviceCode: string; detail: string }
      /** `who` did not settle it and the chain cannot tell yet whether it landed (`why`). */
      | { problem: "chain_unsure"; who: Payee; why: string }
    );
  execution_rejected: { serviceCode?: string; transaction?: string | null } &
    /** The service refused the execution of a settled payment (its words are the message's facts). */
    (
      | { problem?: undefined }
      /** A fetch's payment landed on chain, but `origin` did not deliver (`answered`: its HTTP status, null: no answer). */
      | { problem: "undelivered"; origin: string; answered: number | null }
    );
  service_unavailable: { lastProblem?: string; retryAfterSeconds?: number } &
    /** The service did not answer `request` usefully in `attempts` attempts. */
    (
      | { problem: "no_answer"; request: string; attempts: number; lastProblem: string }
      /** The journal cannot be opened. */
      | { problem: "journal"; detail: string }
      /** The embedded sandbox of `home` is locked by a process that does not answer. */
      | { problem: "sandbox_locked"; home: string }
      /** The facilitator's discovery list (`url`) did not answer. */
      | { problem: "discovery"; url: string; detail: string }
    );
  service_error: { status?: number } &
    /** The service answered `request` with a redirect (to `location`). */
    (
      | { problem: "redirect"; request: string; status: number; location?: string }
      /** The service's answer to `request` is not the v1 interface's: `detail` says where. */
      | { problem: "off_interface"; request: string; status: number; detail: string }
      /** The service refused to show a company. */
      | ({ problem: "company"; companyId: string } & ServiceSaid)
      /** The service refused a marketplace search. */
      | ({ problem: "search" } & ServiceSaid)
      /** The facilitator's discovery list (`url`) is too large, not JSON, or answered `status`. */
      | { problem: "discovery_size" | "discovery_json"; url: string }
      | { problem: "discovery_status"; url: string; status: number }
      /** The service returned an execution whose id has characters an id cannot have. */
      | { problem: "execution_id" }
      /** The service returned an execution for another action or quote (`forAction`, `forQuote`). */
      | { problem: "execution_other"; forAction: string; forQuote: string | null }
      /** Anything else that went wrong: `detail`, the failure's own message. */
      | { problem: "unexpected"; detail: string }
    );
  not_found:
    | { executionId: string }
    /** The service knows no such company. */
    | ({ companyId: string } & ServiceSaid);
  intent_conflict: Record<never, never>;
  /** `by`: what holds the purchase (another call, one waiting for a person, another process, the journal's writer). */
  busy: { by?: "call" | "waiting_call" | "process" | "journal" };
  /** `stage`: when the call was cancelled. */
  cancelled: { stage?: CancelStage };
  /** Delegate mode: the allowance left on chain (decimal USDC), below the price; `detail`, the shortfall in words. */
  allowance_exhausted: { owner: string; delegate: string; allowance: string; amount: string; detail?: string };
  frozen: { reason: string | null; since: string; frozenBy: string };
  /**
   * Addressed to the person: `reason` names what refused it (not listed, or the address it
   * resolves to); `rule`, the standing rule that refused the address it resolves to.
   */
  origin_not_allowed: {
    origin: string;
    reason?: string;
    allowOrigins?: readonly string[];
    rule?: "public_only" | "loopback_only";
  };
  /**
   * An outbound request of paid_fetch failed: `reason` is timeout, too_large, network, redirects or
   * cancelled; `sent` is false only when no connection was made (else the request may have reached the server).
   */
  fetch_failed: {
    origin: string;
    reason: "timeout" | "too_large" | "network" | "redirects" | "cancelled";
    status?: number;
    sent: boolean;
  };
  /** A 402 this server cannot pay: `offered` is what it asked for, one line per accepted way to pay. */
  payment_unsupported: { origin?: string; offered?: readonly string[] } &
    /** No requirement is scheme exact on this server's `network` in its USDC `mint`. */
    (
      | { problem?: "no_match"; network?: string; mint?: string; terms?: string }
      /** The resource answered `status`, not 402, when it was asked again. */
      | { problem: "not_402"; status: number }
      /** A 402 without x402 v2 payment requirements. */
      | { problem: "no_requirements" }
      /** The one requirement it could be paid by names our wallet (or its owner) as the fee payer. */
      | { problem: "fee_payer" }
      /**
       * Its transfer memo is one another purchase of this wallet carries or is paying with now:
       * the chain could not tell the two payments apart.
       */
      | { problem: "memo_in_use"; memo: string }
    );
  /**
   * EVM: EIP-3009 has no delegate, so the ceiling the chain enforces is the agent key's own
   * USDC balance (`wallet`, on `network`), which a person tops up; it is below the price.
   */
  balance_insufficient: { wallet: string; network: string; balance: string; amount: string };
}

export type ErrorCode = keyof ErrorContexts;
export type ErrorContext<C extends ErrorCode = ErrorCode> = PurchaseContext & ErrorContexts[C];

/**
 * What a code's message says beyond its context: facts that explain, that no reader acts on,
 * so they are not kept as context (a fetch's context is exactly origin, reason, status, sent).
 */
export interface ErrorFacts {
  /** `errno`: the system's error code; `host`: the name that did not resolve; `limit`: the bytes or redirects allowed. */
  fetch_failed: { errno?: string; host?: string; limit?: number };
  /** What the service confirmed instead of the quote: its quote id and amount, as it said them (a stored error's words). */
  payment_invalid: { quote?: string; amount?: string };
  /** What the service confirmed instead of the quote: its quote id and amount, as it said them. */
  payment_mismatch: { quote?: string; amount?: string };
  /** How the service refused the execution: its HTTP status and its own message. */
  execution_rejected: { status?: number; detail?: string };
}
