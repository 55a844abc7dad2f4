// @ts-check
// The console's JSON API and its live events. Reads are plain same-origin GETs (the session
// cookie goes along by itself); writes carry the session's CSRF token in X-CSRF-Token, and the
// browser adds the Origin header the server checks. Each read is typed by what its path answers
// (wire.js): the server validated what it sends, so the page takes the JSON as that type.

/** @typedef {import("./wire.js").Approval} Approval */
/** @typedef {import("./wire.js").AuditReport} AuditReport */
/** @typedef {import("./wire.js").Events} Events */
/** @typedef {import("./wire.js").Execution} Execution */
/** @typedef {import("./wire.js").ExecutionDetail} ExecutionDetail */
/** @typedef {import("./wire.js").Freeze} Freeze */
/** @typedef {import("./wire.js").Purchase} Purchase */
/** @typedef {import("./wire.js").PurchaseDetail} PurchaseDetail */
/** @typedef {import("./wire.js").ReceiptChecked} ReceiptChecked */
/** @typedef {import("./wire.js").RecentCall} RecentCall */
/** @typedef {import("./wire.js").Session} Session */
/** @typedef {import("./wire.js").Spending} Spending */
/** @typedef {import("./wire.js").TranscriptEntry} TranscriptEntry */

/** @typedef {"live" | "reconnecting" | "closed"} LiveState */

export class ApiError extends Error {
  /**
   * @param {number} status the HTTP status, 0 when the console did not answer
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * A caught error as the pages show it: the API's code (none for anything else) and a message.
 * @param {unknown} e
 * @returns {{ code?: string, message: string }}
 */
export function failure(e) {
  return e instanceof ApiError ? e : { message: e instanceof Error ? e.message : String(e) };
}

/** @type {Promise<Session> | undefined} */
let session;

/**
 * The answer's JSON (its type is the caller's: see the reads below), or an ApiError.
 * @param {Response} res
 * @returns {Promise<any>}
 */
async function parse(res) {
  let body;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const e = body && body.error;
    throw new ApiError(
      res.status,
      e?.code ?? `http_${res.status}`,
      e?.message ?? `The console answered ${res.status} ${res.statusText}.`,
    );
  }
  return body;
}

/**
 * @param {string} path
 * @returns {Promise<any>}
 */
async function get(path) {
  let res;
  try {
    res = await fetch(path, { headers: { accept: "application/json" }, credentials: "same-origin", cache: "no-store" });
  } catch {
    throw new ApiError(0, "offline", "The console is not answering. Is `paid-actions-mcp console` still running?");
  }
  return parse(res);
}

/**
 * @param {string} path
 * @param {unknown} body
 * @returns {Promise<any>}
 */
async function post(path, body) {
  const { csrf } = await getSession();
  let res;
  try {
    res = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf, accept: "application/json" },
      credentials: "same-origin",
      body: JSON.stringify(body ?? {}),
    });
  } catch {
    throw new ApiError(0, "offline", "The console is not answering. Is `paid-actions-mcp console` still running?");
  }
  return parse(res);
}

/**
 * {csrf, pinRequired, home, journal, version, service}, fetched once.
 * @returns {Promise<Session>}
 */
export function getSession() {
  session ??= get("/api/session").catch((e) => {
    session = undefined;
    throw e;
  });
  return session;
}

// ---- Reads and the one write -------------------------------------------------------------------

/** @returns {Promise<{ items: Approval[] }>} */
export const getApprovals = () => get("/api/approvals");

/**
 * @param {string} id
 * @returns {Promise<{ approval: Approval }>}
 */
export const getApproval = (id) => get(`/api/approvals/${encodeURIComponent(id)}`);

/**
 * Approves or declines; answers the approval as it now stands (when the server still has it).
 * @param {string} id
 * @param {"approve" | "decline"} kind
 * @param {{ pin?: string, assertion?: unknown }} body
 * @returns {Promise<{ approval?: Approval, agentCall?: "waiting" | "none" | "unknown", next?: string }>}
 */
export const postDecision = (id, kind, body) => post(`/api/approvals/${encodeURIComponent(id)}/${kind}`, body);

/**
 * @param {URLSearchParams} query status, action, limit, cursor
 * @returns {Promise<{ items: Execution[], nextCursor?: string }>}
 */
export const getExecutions = (query) => get(`/api/executions?${query}`);

/**
 * @param {string} id an execution's id or its intent's
 * @returns {Promise<ExecutionDetail>}
 */
export const getExecution = (id) => get(`/api/executions/${encodeURIComponent(id)}`);

/**
 * @param {URLSearchParams} query origin, limit, cursor
 * @returns {Promise<{ items: Purchase[], nextCursor?: string }>}
 */
export const getPurchases = (query) => get(`/api/purchases?${query}`);

/**
 * @param {string} id the purchase's intent id
 * @returns {Promise<PurchaseDetail>}
 */
export const getPurchase = (id) => get(`/api/purchases/${encodeURIComponent(id)}`);

/**
 * A purchase's receipt, made now, with its checks.
 * @param {string} id an execution's id or a purchase's intent id
 * @returns {Promise<ReceiptChecked>}
 */
export const getReceiptChecked = (id) => get(`/api/receipts/${encodeURIComponent(id)}/checked`);

/**
 * Where the receipt is downloaded from (the same JSON `paid-actions-mcp receipt` writes).
 * @param {string} id
 */
export const receiptFileUrl = (id) => `/api/receipts/${encodeURIComponent(id)}`;

/** @returns {Promise<Spending>} */
export const getSpending = () => get("/api/spending");

/**
 * @param {number} limit
 * @returns {Promise<{ items: RecentCall[] }>}
 */
export const getTranscripts = (limit) => get(`/api/transcripts?limit=${limit}`);

/**
 * @param {string} callId
 * @returns {Promise<{ callId: string, entries: TranscriptEntry[] }>}
 */
export const getTranscript = (callId) => get(`/api/transcripts/${encodeURIComponent(callId)}`);

/**
 * The audit's report (the page also reads one wrapped in its run: `{report}`).
 * @returns {Promise<{ report: AuditReport & { report?: AuditReport } }>}
 */
export const getAudit = () => get("/api/audit");

/** @returns {Promise<{ freeze: Freeze | null }>} */
export const getFreeze = () => get("/api/freeze");

// ---- Passkeys (webauthn.js runs the ceremonies) ---------------------------------------------

/**
 * The passkeys registered (and removed), and the ceremony a terminal's `passkey` command offers here.
 * @returns {Promise<{ items: import("./wire.js").Passkey[], ceremony: import("./wire.js").PasskeyCeremony | null }>}
 */
export const getPasskeys = () => get("/api/passkeys");

/**
 * The challenge an approval's passkey signs: the digest of its terms.
 * @param {string} id
 * @returns {Promise<{ challenge: { challenge: string, rpId: string, credentialIds: string[], terms: unknown } }>}
 */
export const getApprovalChallenge = (id) => get(`/api/approvals/${encodeURIComponent(id)}/challenge`);

/**
 * The authenticator's answer to the terminal's ceremony.
 * @param {unknown} body
 * @returns {Promise<{ message: string }>}
 */
export const postCeremony = (body) => post("/api/passkeys/ceremony", body);

/**
 * A one-time link to `next` on the console's localhost name (WebAuthn takes no IP address).
 * @param {string} next
 * @returns {Promise<{ url: string }>}
 */
export const localhostLink = (next) => post("/api/session/localhost", { next });

// ---- Live events (server-sent) ---------------------------------------------------------------

/** @typedef {{ [K in keyof Events]: (data: Events[K]) => void }} Listeners */

/** @type {Map<keyof Events, Set<(data: any) => void>>} */
const listeners = new Map();
/** @type {Set<(state: LiveState) => void>} */
const stateListeners = new Set();
/** @type {EventSource | undefined} */
let source;
/** @type {Events["approvals"] | undefined} */
let lastApprovals;

/**
 * @template {keyof Events} K
 * @param {K} name
 * @param {Events[K]} data
 */
function emit(name, data) {
  for (const fn of listeners.get(name) ?? []) {
    try {
      fn(data);
    } catch (e) {
      console.error(e);
    }
  }
}

/** @param {LiveState} state */
function setState(state) {
  for (const fn of stateListeners) fn(state);
}

/** Opens the one EventSource on /api/events (it reconnects by itself). */
export function connectEvents() {
  if (source) return;
  const es = new EventSource("/api/events");
  source = es;
  es.addEventListener("open", () => setState("live"));
  es.addEventListener("error", () => setState(es.readyState === EventSource.CLOSED ? "closed" : "reconnecting"));
  for (const name of /** @type {const} */ (["approvals", "freeze", "executions", "purchases"])) {
    es.addEventListener(name, (ev) => {
      let data;
      try {
        data = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (name === "approvals") lastApprovals = data;
      emit(name, data);
    });
  }
}

/**
 * Calls fn(data) on each event of that name; returns the unsubscribe.
 * @template {keyof Events} K
 * @param {K} name
 * @param {Listeners[K]} fn
 * @returns {() => boolean}
 */
export function on(name, fn) {
  const set = listeners.get(name) ?? new Set();
  listeners.set(name, set);
  set.add(fn);
  return () => set.delete(fn);
}

/**
 * @param {(state: LiveState) => void} fn
 * @returns {() => boolean}
 */
export function onState(fn) {
  stateListeners.add(fn);
  return () => stateListeners.delete(fn);
}

/**
 * The last `approvals` event's data, if one came.
 * @returns {Events["approvals"] | undefined}
 */
export function latestApprovals() {
  return lastApprovals;
}
