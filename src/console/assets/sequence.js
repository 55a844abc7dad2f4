// @ts-check
// One tool call's transcript as a sequence diagram in SVG: four lifelines (the agent, this MCP
// server, the service, the chain) and, for each transcript entry, an arrow between the two it
// passed between, labelled with its step, the time since the call started, its HTTP duration
// and status. Steps the server takes on its own (checks, reservations, state changes) are
// arrows from its lifeline to itself. Selecting an arrow shows that entry's (already
// redacted) record via `onSelect(index)`.
import { s } from "./dom.js";

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
 * The arrows one entry becomes: {from, to, label, note, status, tone}.
 * @param {TranscriptEntry} e
 * @returns {Arrow[]}
 */
export function arrowsOf(e) {
  const b = /** @type {Record<string, unknown>} */ (e.body && typeof e.body === "object" ? e.body : {});
  const status = typeof e.status === "number" ? e.status : undefined;
  switch (e.step) {
    case "intent":
      return [{ from: AGENT, to: MCP, label: `tools/call ${e.action ?? ""}`, note: "intent recorded" }];
    case "http": {
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
    case "challenge":
      return [
        {
          from: MCP,
          to: MCP,
          label: "check the payment challenge",
          note: e.decision ?? "",
          tone: e.decision === "drift" ? "bad" : "good",
        },
      ];
    case "reserved":
      if (e.from !== undefined && e.outcome !== undefined) break;
      return [{ from: MCP, to: MCP, label: `reserve ${e.amount ?? ""} USDC`, note: e.decision ?? "budget held" }];
    case "signed":
      return [{ from: MCP, to: MCP, label: `sign payment ${e.amount ?? ""} USDC`, note: `to ${short(e.payTo)}` }];
    case "approval": {
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
    case "fate":
      return [
        {
          from: CHAIN,
          to: MCP,
          label: `payment on chain: ${e.fate ?? "?"}`,
          note: e.transaction ? `tx ${short(e.transaction)}` : (e.why ?? ""),
          tone: e.fate === "landed" ? "good" : "warn",
        },
      ];
    case "status":
      return [
        {
          from: SERVICE,
          to: MCP,
          label: `execution ${e.to ?? "?"}`,
          note: `was ${e.from ?? "?"} · ${short(e.executionId)}`,
          tone: e.to === "completed" ? "good" : e.to === "failed" ? "bad" : undefined,
        },
      ];
    case "unsettled":
      return [
        {
          from: SERVICE,
          to: MCP,
          label: "not settled",
          note: `${e.serviceCode ?? ""} ${e.message ?? ""}`.trim(),
          tone: "bad",
        },
      ];
    case "tool_error": {
      const err = /** @type {Record<string, unknown>} */ (e.error && typeof e.error === "object" ? e.error : {});
      return [
        { from: MCP, to: AGENT, label: `tool error: ${err.code ?? "error"}`, note: err.message ?? "", tone: "bad" },
      ];
    }
    case "resume":
      // A call that lands on a purchase already recorded: the agent called again.
      return [{ from: AGENT, to: MCP, label: "tools/call again", note: `resumes the purchase (${e.state ?? "?"})` }];
    case "retry":
      return [{ from: MCP, to: MCP, label: e.step, note: e.decision ?? e.state ?? "" }];
    default:
      break;
  }
  if (SERVICE_ANSWERS.has(e.step)) {
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

/** @param {number} ms */
function fmtMs(ms) {
  if (!Number.isFinite(ms)) return "";
  return ms < 10_000 ? `+${Math.round(ms)} ms` : `+${(ms / 1000).toFixed(1)} s`;
}

/**
 * @param {unknown} text
 * @param {number} max
 */
function clip(text, max) {
  const t = String(text ?? "");
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/**
 * The diagram. Returns {svg, select(index)}; each arrow group carries data-entry (its index in
 * `entries`) and is focusable; clicking it (or Enter) calls onSelect(index).
 * @param {TranscriptEntry[]} entries
 * @param {((index: number) => void) | undefined} onSelect
 * @returns {{ svg: SVGSVGElement, select(index: number): void }}
 */
export function sequenceDiagram(entries, onSelect, width = 980) {
  const W = Math.max(720, Math.round(width));
  const gutter = 84;
  const colW = (W - gutter) / LIFELINES.length;
  /** The x of lifeline i. */
  const X = (/** @type {number} */ i) => gutter + colW * (i + 0.5);
  const headH = 56;
  const headW = Math.min(150, colW - 20);
  const rowH = 50;
  const rows = entries.flatMap((e, i) => arrowsOf(e).map((a) => ({ ...a, index: i, entry: e })));
  const H = headH + rows.length * rowH + 24;
  const t0 = Date.parse(entries[0]?.t ?? "");
  const svg = s("svg", {
    class: "sequence",
    viewBox: `0 0 ${W} ${H}`,
    role: "group",
    "aria-label": `Sequence of ${entries.length} transcript entries`,
  });
  const defs = s("defs", {});
  for (const t of ["plain", "good", "bad", "warn", "info"]) {
    defs.append(
      s(
        "marker",
        {
          id: `arrow-${t}`,
          viewBox: "0 0 10 10",
          refX: 9,
          refY: 5,
          markerWidth: 7,
          markerHeight: 7,
          orient: "auto-start-reverse",
          class: `mk mk-${t}`,
        },
        s("path", { d: "M0,0 L10,5 L0,10 z" }),
      ),
    );
  }
  svg.append(defs);
  LIFELINES.forEach((name, i) => {
    svg.append(
      s("line", { class: "lifeline", x1: X(i), x2: X(i), y1: headH - 10, y2: H - 8, "data-lifeline": name }),
      s("rect", { class: "lifeline-head", x: X(i) - headW / 2, y: 8, width: headW, height: 34, rx: 6 }),
      s("text", { class: "lifeline-name", x: X(i), y: 30, "text-anchor": "middle" }, name),
    );
  });
  /** @type {SVGGElement[]} */
  const groups = [];
  rows.forEach((r, k) => {
    const y = headH + k * rowH + 30;
    const t = r.tone ?? "plain";
    const g = s("g", {
      class: ["arrow", `tone-${t}`],
      "data-entry": r.index,
      "data-step": r.entry.step,
      tabindex: 0,
      role: "button",
      "aria-label": `${r.entry.step}: ${r.label}`,
    });
    g.append(s("rect", { class: "row-hit", x: 0, y: y - 30, width: W, height: rowH }));
    const at = Date.parse(r.entry.t);
    g.append(
      s(
        "text",
        { class: "seq-time", x: 6, y: y - 8 },
        Number.isFinite(at) && Number.isFinite(t0) ? fmtMs(at - t0) : "",
      ),
    );
    if (Number.isFinite(r.durationMs)) g.append(s("text", { class: "seq-dur", x: 6, y: y + 8 }, `${r.durationMs} ms`));
    if (r.from === r.to) {
      const x = X(r.from);
      g.append(s("path", { class: "seq-line", d: `M${x},${y - 12} h34 v16 h-34`, "marker-end": `url(#arrow-${t})` }));
      g.append(s("text", { class: "seq-label", x: x + 42, y: y - 6 }, clip(r.label, 44)));
      g.append(s("text", { class: "seq-note", x: x + 42, y: y + 10 }, clip(r.note, 52)));
    } else {
      const x1 = X(r.from);
      const x2 = X(r.to);
      const mid = (x1 + x2) / 2;
      const span = Math.abs(x2 - x1);
      // A label may run a little past its two lifelines.
      const chars = Math.max(18, Math.floor((span + 40) / 7.4));
      g.append(
        s("line", {
          class: "seq-line",
          x1,
          x2: x2 + (x2 > x1 ? -2 : 2),
          y1: y,
          y2: y,
          "marker-end": `url(#arrow-${t})`,
        }),
      );
      g.append(s("text", { class: "seq-label", x: mid, y: y - 8, "text-anchor": "middle" }, clip(r.label, chars)));
      if (r.note)
        g.append(s("text", { class: "seq-note", x: mid, y: y + 15, "text-anchor": "middle" }, clip(r.note, chars)));
    }
    g.append(s("title", {}, `${r.entry.step} · ${r.label}${r.note ? ` · ${r.note}` : ""}`));
    const pick = () => onSelect?.(r.index);
    g.addEventListener("click", pick);
    g.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        pick();
      }
    });
    groups.push(g);
    svg.append(g);
  });
  return {
    svg,
    /** @param {number} index */
    select(index) {
      for (const g of groups) g.classList.toggle("selected", Number(g.dataset.entry) === index);
    },
  };
}
