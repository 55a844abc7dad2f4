// @ts-check
// What one transcript entry becomes in a sequence diagram (sequence.js draws them): the four
// lifelines (the agent, this MCP server, the service, the chain) and, per entry, the arrows
// between the two it passed between, with their label, note, HTTP status and tone. Steps the
// server takes on its own (checks, reservations, state changes) are arrows from its lifeline
// to itself.

/** @typedef {import("./wire.js").TranscriptEntry} TranscriptEntry */

/** @typedef {"good" | "bad" | "warn" | "info"} Tone */

/**
 * One arrow: between two lifelines (their indexes in LIFELINES; the same one for a step of
 * the server's own), its text, and what was recorded with it.
 * @typedef {object} Arrow
 * @property {number} from
 * @property {number} to
 * @property {string} label
 * @property {unknown} note shown as text, clipped
 * @property {unknown} [status] the HTTP status, as recorded
 * @property {Tone} [tone]
 * @property {number} [durationMs]
 */

export const LIFELINES = ["Agent", "MCP server", "Service", "Chain"];
const AGENT = 0;
const MCP = 1;
const SERVICE = 2;
const CHAIN = 3;

const SERVICE_ANSWERS = new Set(["quote", "preflight", "prepare", "confirm", "execution"]);
const BAD_STATES = new Set(["refused", "failed", "attention", "unsettled"]);

/**
 * A field of a recorded value that may be an object (a body, a response, an error), or
 * undefined when it is not one: a transcript holds whatever the service answered.
 * @param {unknown} value
 * @param {string} key
 * @returns {unknown}
 */
export function field(value, key) {
  return value !== null && typeof value === "object" ? /** @type {Record<string, unknown>} */ (value)[key] : undefined;
}

/**
 * @param {unknown} id
 * @returns {string}
 */
function short(id, n = 8) {
  return typeof id === "string" && id.length > n * 2 + 1 ? `${id.slice(0, n)}…${id.slice(-4)}` : String(id ?? "");
}

/**
 * @param {unknown} status
 * @returns {Tone | undefined}
 */
function tone(status) {
  if (typeof status !== "number") return undefined;
  if (status >= 200 && status < 300) return "good";
  if (status === 402) return "info";
  return "bad";
}

/**
 * A request this server sent the service, and its answer (or why there was none).
 * @param {TranscriptEntry} e
 * @returns {Arrow[]}
 */
function httpArrows(e) {
  const res = /** @type {Record<string, unknown> | null} */ (
    e.response && typeof e.response === "object" ? e.response : null
  );
  const code = res?.status;
  const req = e.request ?? {};
  return [
    {
      from: MCP,
      to: SERVICE,
      label: `${req.method ?? "HTTP"} ${req.path ?? ""}${(e.attempt ?? 0) > 1 ? ` (attempt ${e.attempt})` : ""}`,
      note: code !== undefined ? `→ ${code}` : `no answer: ${typeof e.error === "string" ? e.error : "error"}`,
      status: code,
      tone: code !== undefined ? tone(code) : "bad",
      durationMs: e.durationMs,
    },
  ];
}

/**
 * A person's approval: asked of the agent, answered in the host's prompt, or recorded.
 * @param {TranscriptEntry} e
 * @returns {Arrow[]}
 */
function approvalArrows(e) {
  const d = String(e.decision ?? "");
  if (/waiting/.test(d)) return [{ from: MCP, to: AGENT, label: "approval required", note: d, tone: "warn" }];
  if (/accepted by the human|not accepted/.test(d))
    return [
      {
        from: AGENT,
        to: MCP,
        label: "the person answers (host prompt)",
        note: d,
        tone: /not accepted/.test(d) ? "bad" : "good",
      },
    ];
  return [{ from: MCP, to: MCP, label: "approval", note: d, tone: "good" }];
}

/**
 * The arrows of the steps known by name; a step whose arrows are undefined here (a `reserved`
 * that is a state change) is drawn as the steps not named.
 * @type {Record<string, (e: TranscriptEntry) => Arrow[] | undefined>}
 */
const BY_STEP = {
  intent: (e) => [{ from: AGENT, to: MCP, label: `tools/call ${e.action ?? ""}`, note: "intent recorded" }],
  http: httpArrows,
  challenge: (e) => [
    {
      from: MCP,
      to: MCP,
      label: "check the payment challenge",
      note: e.decision ?? "",
      tone: e.decision === "drift" ? "bad" : "good",
    },
  ],
  reserved: (e) =>
    e.from !== undefined && e.outcome !== undefined
      ? undefined
      : [{ from: MCP, to: MCP, label: `reserve ${e.amount ?? ""} USDC`, note: e.decision ?? "budget held" }],
  signed: (e) => [{ from: MCP, to: MCP, label: `sign payment ${e.amount ?? ""} USDC`, note: `to ${short(e.payTo)}` }],
  approval: approvalArrows,
  fate: (e) => [
    {
      from: CHAIN,
      to: MCP,
      label: `payment on chain: ${e.fate ?? "?"}`,
      note: e.transaction ? `tx ${short(e.transaction)}` : (e.why ?? ""),
      tone: e.fate === "landed" ? "good" : "warn",
    },
  ],
  status: (e) => [
    {
      from: SERVICE,
      to: MCP,
      label: `execution ${e.to ?? "?"}`,
      note: `was ${e.from ?? "?"} · ${short(e.executionId)}`,
      tone: e.to === "completed" ? "good" : e.to === "failed" ? "bad" : undefined,
    },
  ],
  unsettled: (e) => [
    {
      from: SERVICE,
      to: MCP,
      label: "not settled",
      note: `${e.serviceCode ?? ""} ${e.message ?? ""}`.trim(),
      tone: "bad",
    },
  ],
  tool_error: (e) => {
    const err = /** @type {Record<string, unknown>} */ (e.error && typeof e.error === "object" ? e.error : {});
    return [
      { from: MCP, to: AGENT, label: `tool error: ${err.code ?? "error"}`, note: err.message ?? "", tone: "bad" },
    ];
  },
  // A call that lands on a purchase already recorded: the agent called again.
  resume: (e) => [
    { from: AGENT, to: MCP, label: "tools/call again", note: `resumes the purchase (${e.state ?? "?"})` },
  ],
  retry: (e) => [{ from: MCP, to: MCP, label: e.step, note: e.decision ?? e.state ?? "" }],
};

/**
 * The service's answer to one of the steps it takes part in (a confirm also shows the service
 * settling the payment on chain).
 * @param {TranscriptEntry} e
 * @returns {Arrow[]}
 */
function serviceAnswerArrows(e) {
  const b = /** @type {Record<string, unknown>} */ (e.body && typeof e.body === "object" ? e.body : {});
  const status = typeof e.status === "number" ? e.status : undefined;
  /** @type {Arrow[]} */
  const arrows = [];
  if (e.step === "confirm" && typeof b.transaction === "string") {
    arrows.push({
      from: SERVICE,
      to: CHAIN,
      label: "settles the payment",
      note: `tx ${short(b.transaction)}`,
      tone: "good",
    });
  }
  const label =
    e.step === "quote" && b.quoteId
      ? `quote: ${b.amount ?? "?"} USDC`
      : e.step === "execution" && b.executionId
        ? `execution ${b.status ?? "started"}`
        : e.step === "confirm" && b.status
          ? `payment ${b.status}`
          : e.step === "preflight" && status === 402
            ? "402: payment required"
            : `${e.step}: ${b.code ?? "answer"}`;
  const id = b.executionId ?? b.quoteId ?? b.paymentId;
  arrows.push({
    from: SERVICE,
    to: MCP,
    label,
    note: [status, id ? short(id) : null].filter((x) => x !== undefined && x !== null).join(" · "),
    status,
    tone: tone(status),
  });
  return arrows;
}

/**
 * The arrows one entry becomes: {from, to, label, note, status, tone}.
 * @param {TranscriptEntry} e
 * @returns {Arrow[]}
 */
export function arrowsOf(e) {
  const named = Object.hasOwn(BY_STEP, e.step) ? BY_STEP[e.step]?.(e) : undefined;
  if (named) return named;
  if (SERVICE_ANSWERS.has(e.step)) return serviceAnswerArrows(e);
  // A state change of the intent (pay-flow): the server's own step.
  if (e.from !== undefined && e.outcome !== undefined) {
    return [
      {
        from: MCP,
        to: MCP,
        label: `state ${e.from} → ${e.step}`,
        note: e.code ? `${e.code}: ${e.message ?? ""}` : e.outcome,
        tone: BAD_STATES.has(e.step) ? "bad" : undefined,
      },
    ];
  }
  return [{ from: MCP, to: MCP, label: e.step, note: "" }];
}
