// @ts-check
// The JSON the console's API answers, as JSDoc types for the checker: the fields the pages read,
// as the server writes them (each typedef names the server's type it follows). Nothing imports
// this file at run time; the browser never loads it. Money is decimal strings, times ISO 8601.

/**
 * GET /api/session (src/console/api.ts).
 * @typedef {object} Session
 * @property {string} csrf
 * @property {boolean} pinRequired
 * @property {number} passkeys how many passkeys are registered: approving needs one when any is
 * @property {string} home
 * @property {string} journal
 * @property {string} version
 * @property {string} service
 */

/**
 * A freeze of every server on the journal (engine/intent/freeze.ts freezeView).
 * @typedef {object} Freeze
 * @property {string | null} reason
 * @property {string} since
 * @property {string} by
 */

/**
 * An approval as a person reviews it (engine/approvals/review.ts ApprovalReview); `fetch` for
 * a paid_fetch purchase (its URL with the query values redacted).
 * @typedef {object} Approval
 * @property {string} approvalId
 * @property {string} intentId
 * @property {string} action
 * @property {"pending" | "approved" | "declined" | "used"} status
 * @property {unknown} input
 * @property {{ method: string, url: string, origin: string }} [fetch]
 * @property {string} amount
 * @property {string | null} payee
 * @property {string} quoteId
 * @property {string} expiresAt
 * @property {string} createdAt
 * @property {string | null} decidedAt
 * @property {boolean} expired
 * @property {{ spentLast24h: string, maxPerDay: string | null, spentTotal: string, maxTotal: string | null }} after
 * @property {string} [next] only on a decision's answer: what happens next (a waiting call takes it now, or the agent's next call)
 */

/**
 * One purchase (engine/model/types.ts ExecutionView).
 * @typedef {object} Execution
 * @property {string} intentId
 * @property {string | null} executionId
 * @property {string} action
 * @property {string} status
 * @property {string} state
 * @property {string | null} quoteId
 * @property {string | null} amount
 * @property {string | null} payee
 * @property {string | null} paymentTransaction
 * @property {"none" | "claimed" | "verified" | "mismatch"} settlement
 * @property {unknown} [output]
 * @property {unknown} [error]
 * @property {unknown} [refund]
 * @property {string} [refundCredited]
 * @property {unknown} [providerMeta]
 * @property {string} [attention]
 * @property {string | null} callId
 * @property {string} createdAt
 * @property {string} updatedAt
 */

/**
 * An x402 resource bought with paid_fetch (engine/read/purchases.ts PurchaseView): never its
 * request's header values, body or query values.
 * @typedef {object} Purchase
 * @property {string} intentId
 * @property {string} intentKey
 * @property {string | null} origin
 * @property {string | null} method
 * @property {string | null} url the URL with its query values redacted
 * @property {string} state
 * @property {number | null} status the answer's HTTP status
 * @property {string | null} contentType
 * @property {number | null} bodyBytes
 * @property {string | null} amount
 * @property {string | null} payTo
 * @property {string | null} network
 * @property {string | null} transaction
 * @property {"none" | "claimed" | "verified" | "mismatch"} settlement
 * @property {string} [attention]
 * @property {{ code?: string, message?: string }} [error]
 * @property {string | null} callId
 * @property {string} createdAt
 * @property {string} updatedAt
 */

/**
 * GET /api/purchases/<intentId>.
 * @typedef {{ purchase: Purchase, timeline: TimelineEntry[], transcripts: string[] }} PurchaseDetail
 */

/**
 * One step of a purchase's timeline (console/timeline.ts TimelineEntry; request, price and
 * answer are a paid_fetch purchase's).
 * @typedef {object} TimelineEntry
 * @property {string} at
 * @property {"quote" | "approval" | "reservation" | "payment" | "settlement" | "execution" | "refund" | "error"
 *   | "request" | "price" | "answer"} step
 * @property {string} title
 * @property {string} [detail]
 * @property {string} [transaction]
 * @property {string} [status]
 */

/**
 * GET /api/executions/<id>.
 * @typedef {{ execution: Execution, timeline: TimelineEntry[], transcripts: string[] }} ExecutionDetail
 */

/**
 * The limits as configured (engine/read/executions.ts limitsView).
 * @typedef {object} Limits
 * @property {string} maxPerCall
 * @property {string} maxPerDay
 * @property {string | null} maxTotal
 * @property {string} approvalAbove
 * @property {string[]} allowActions
 * @property {Record<string, string>} perAction
 */

/**
 * GET /api/spending: engine/read/executions.ts spending() with engine/read/spending-view.ts
 * spendingBreakdown() (ActionSpendView, OriginSpendView, DaySpendView).
 * @typedef {object} Spending
 * @property {Limits | null} limits
 * @property {string} spentLast24h
 * @property {string} reserved
 * @property {string} committedLast24h
 * @property {string | null} remainingToday
 * @property {string} spentTotal
 * @property {string} refundsCredited
 * @property {string | null} remainingTotal
 * @property {Array<{ key: string, message: string }>} [configIssues]
 * @property {ActionSpend[]} byAction
 * @property {OriginSpend[]} [byOrigin] paid_fetch's purchases, by origin
 * @property {NetworkSpend[]} [byNetwork] where the money went, by network paid on
 * @property {string[]} [allowOrigins] the origins paid_fetch may pay ("*": any public one)
 * @property {Array<{ day: string, spent: string }>} days
 */

/**
 * engine/read/spending-view.ts NetworkSpendView.
 * @typedef {object} NetworkSpend
 * @property {string} network CAIP-2
 * @property {string} name its short name (base-sepolia, …), or the CAIP-2 id
 * @property {string} spentLast24h
 * @property {string} spentTotal
 * @property {string} refunded
 * @property {number} count
 */

/**
 * @typedef {object} OriginSpend
 * @property {string} origin
 * @property {string} spentLast24h
 * @property {string} spentTotal
 * @property {string | null} perCallCap
 * @property {number} count
 */

/**
 * @typedef {object} ActionSpend
 * @property {string} action
 * @property {string} spentLast24h
 * @property {string} spentTotal
 * @property {string} refunded
 * @property {string | null} perCallCap
 * @property {number} count
 */

/**
 * GET /api/transcripts: the recent tool calls (engine/read/recent-calls.ts); path is null when
 * another host keeps the file.
 * @typedef {{ callId: string, at: string | null, host: string | null, path: string | null }} RecentCall
 */

/**
 * One step of a tool call's transcript (engine/read/transcripts.ts TranscriptEntry: t and step, then
 * whatever that step recorded, redacted). The fields the console reads, as the engine writes
 * them; the pages still look before trusting the nested ones.
 * @typedef {{
 *   t: string,
 *   step: string,
 *   action?: string,
 *   tool?: string,
 *   intentId?: string,
 *   executionId?: string,
 *   status?: unknown,
 *   durationMs?: number,
 *   attempt?: number,
 *   request?: { method?: string, path?: string, body?: unknown },
 *   response?: unknown,
 *   body?: unknown,
 *   error?: unknown,
 *   decision?: string,
 *   amount?: string,
 *   payTo?: string,
 *   fate?: string,
 *   transaction?: string,
 *   why?: string,
 *   from?: string,
 *   to?: string,
 *   outcome?: string,
 *   state?: string,
 *   code?: string,
 *   message?: string,
 *   serviceCode?: string,
 * } & Record<string, unknown>} TranscriptEntry
 */

/**
 * GET /api/audit: the AuditRun of `paid-actions-mcp audit` (app/audit.ts), whose report is
 * engine/audit/report.ts AuditReport with the scan it read, per rail (app/audit.ts).
 * @typedef {object} AuditReport
 * @property {boolean} ok
 * @property {string} since
 * @property {string} wallet
 * @property {string} walletTokenAccount
 * @property {string} mint
 * @property {{ rpc?: string, transactionsRead?: number, signatures?: number, from?: string, failed?: number }} [scan]
 * @property {Discrepancy[]} [discrepancies]
 * @property {AuditPayment[]} [payments]
 * @property {AuditRefund[]} [refunds]
 * @property {Array<{ transaction: string }>} [outflows]
 * @property {Array<{ transaction: string, at: string | null, amount: string }>} [deposits]
 * @property {Array<{ quoteId: string, amount: string, intentState: string | null, why: string }>} [inFlight]
 * @property {Array<{ quoteId: string }>} [otherWallet]
 * @property {AuditRail[]} [rails] each network's account and scan (app/audit.ts RailAudit)
 */

/**
 * One network's part of the audit (app/audit.ts RailAudit); `network` is null for a report
 * made before there were several.
 * @typedef {object} AuditRail
 * @property {string | null} network
 * @property {string} wallet
 * @property {string} walletTokenAccount the account money moves from (EVM: the key itself)
 * @property {string} mint
 * @property {{ rpc?: string, transactionsRead?: number, signatures?: number, from?: string, failed?: number }} [scan]
 */

/**
 * A journaled payment as the audit found it (engine/audit/report.ts PaymentView).
 * @typedef {object} AuditPayment
 * @property {string} quoteId
 * @property {string} intentId
 * @property {string} amount
 * @property {string} signedAt
 * @property {string | null} chainTransaction
 * @property {string} status
 */

/**
 * A refund as the audit found it (engine/audit/report.ts RefundView).
 * @typedef {object} AuditRefund
 * @property {string} intentId
 * @property {{ amount: string, transaction: string } | null} claimed
 * @property {string | null} chainAmount
 * @property {string} refundState
 * @property {string} status
 */

/**
 * One disagreement between the journal and the chain (engine/audit/report.ts Discrepancy).
 * @typedef {object} Discrepancy
 * @property {string} kind
 * @property {string} message
 * @property {string} [transaction]
 * @property {string} [quoteId]
 * @property {string} [intentId]
 * @property {string} [journalAmount]
 * @property {string} [chainAmount]
 * @property {string} [at]
 */

/**
 * The events on /api/events (console/events.ts), by name.
 * @typedef {object} Events
 * @property {{ items: Approval[] }} approvals
 * @property {{ freeze: Freeze | null }} freeze
 * @property {{ changed: string[] }} executions
 * @property {{ changed: string[] }} purchases
 */

export {};

/**
 * A passkey as the console lists it (public parts only).
 * @typedef {object} Passkey
 * @property {string} credentialId
 * @property {string | null} label
 * @property {number} algorithm
 * @property {string} createdAt
 * @property {string | null} removedAt
 * @property {string | null} owner the owner who bound it with a signature, if one did
 * @property {number} signCount
 */

/**
 * The ceremony a terminal's `passkey add` or `passkey remove` offers on the passkey page.
 * @typedef {{ kind: "add", challenge: string, rpId: string, user: { id: string, name: string, displayName: string }, excludeCredentials: string[], label: string | null }
 *   | { kind: "remove", challenge: string, rpId: string, credentialId: string, allowCredentials: string[] }} PasskeyCeremony
 */

/**
 * A purchase's receipt (engine/evidence/receipt.ts ReceiptDocument): the fields the receipt
 * page reads. The whole document is what GET /api/receipts/<id> offers for download.
 * @typedef {object} Receipt
 * @property {string} receipt
 * @property {string} id
 * @property {string} madeAt
 * @property {{ kind: "action" | "fetch", intentId: string, executionId: string | null, action: string | null, inputDigest: string, request: { method: string, url: string, origin: string } | null }} bought
 * @property {{ quoteId: string, amount: string, currency: string, quotedAt: string, expiresAt: string }} quote
 * @property {{ approvalId: string, status: string, channel: "passkey" | "host" | "person", decidedAt: string | null, evidence: unknown } | null} approval
 * @property {{ network: string, transaction: string | null, payer: string, source: string, payee: string, asset: string, amount: string, memo: string, signedAt: string, fate: string }} payment
 * @property {{ readAt: string, slot: string, blockHash: string | null, blockTime: number | null, finality: string | null, failed: boolean, transfer: { source: string, destination: string, authority: string, mint: string | null, amount: string } | null } | null} chain
 * @property {string | null} chainUnread
 * @property {{ state: string, status: string | null, settlement: string, outputDigest: string | null, answer: { status: number, contentType: string | null, size: number, bodyDigest: string } | null, refunds: Array<{ transaction: string | null, claimed: string | null, seenOnChain: string | null, state: string }>, attention: string | null, error: string | null }} outcome
 * @property {{ offer: ReceiptSellerPart | null, receipt: ReceiptSellerPart | null } | null} seller
 * @property {{ scheme: string, signer: string, value: string }} signature
 */

/**
 * One part of the seller's signed word in a receipt.
 * @typedef {object} ReceiptSellerPart
 * @property {"verified" | "mismatch" | "invalid" | "unchecked"} state
 * @property {string | null} signer
 * @property {string[]} problems
 * @property {string | null} withheld
 */

/**
 * GET /api/receipts/<id>/checked (console/receipts-api.ts): the receipt and `receipt verify`'s checks of it.
 * @typedef {object} ReceiptChecked
 * @property {Receipt} receipt
 * @property {{ holds: boolean, checks: Array<{ check: string, holds: boolean, detail: string }> }} verdict
 */
