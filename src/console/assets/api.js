// The console's JSON API and its live events. Reads are plain same-origin GETs (the session
// cookie goes along by itself); writes carry the session's CSRF token in X-CSRF-Token, and the
// browser adds the Origin header the server checks.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let session;

async function parse(res) {
  let body;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const e = body && body.error;
    throw new ApiError(res.status, e?.code ?? `http_${res.status}`, e?.message ?? `The console answered ${res.status} ${res.statusText}.`);
  }
  return body;
}

export async function get(path) {
  let res;
  try {
    res = await fetch(path, { headers: { accept: "application/json" }, credentials: "same-origin", cache: "no-store" });
  } catch {
    throw new ApiError(0, "offline", "The console is not answering. Is `paid-actions-mcp console` still running?");
  }
  return parse(res);
}

export async function post(path, body) {
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

/** {csrf, pinRequired, home, journal, version, service}, fetched once. */
export function getSession() {
  session ??= get("/api/session").catch((e) => {
    session = undefined;
    throw e;
  });
  return session;
}

// ---- Live events (server-sent) ---------------------------------------------------------------

const listeners = new Map();
const stateListeners = new Set();
let source;
let lastApprovals;

function emit(name, data) {
  for (const fn of listeners.get(name) ?? []) {
    try {
      fn(data);
    } catch (e) {
      console.error(e);
    }
  }
}

function setState(state) {
  for (const fn of stateListeners) fn(state);
}

/** Opens the one EventSource on /api/events (it reconnects by itself). */
export function connectEvents() {
  if (source) return;
  source = new EventSource("/api/events");
  source.addEventListener("open", () => setState("live"));
  source.addEventListener("error", () => setState(source.readyState === EventSource.CLOSED ? "closed" : "reconnecting"));
  for (const name of ["approvals", "freeze", "executions"]) {
    source.addEventListener(name, (ev) => {
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

/** Calls fn(data) on each event of that name; returns the unsubscribe. */
export function on(name, fn) {
  if (!listeners.has(name)) listeners.set(name, new Set());
  listeners.get(name).add(fn);
  return () => listeners.get(name).delete(fn);
}

export function onState(fn) {
  stateListeners.add(fn);
  return () => stateListeners.delete(fn);
}

/** The last `approvals` event's data, if one came. */
export function latestApprovals() {
  return lastApprovals;
}
