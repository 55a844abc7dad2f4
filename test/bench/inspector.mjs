// The bench's window into a process it spawned: the Chrome DevTools Protocol over Node's
// `--inspect=127.0.0.1:0` WebSocket (loopback only), for what the process cannot be asked
// from outside — a full GC and its heap in use, a heap snapshot, a CPU profile between two
// moments — without a line of the server's code changed or a switch of its own. Also the
// CPU time a process has used, read from /proc (all its threads, user + system).
import { createWriteStream, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { WebSocket } from "undici";

/** The flag that opens the inspector on a free loopback port; the URL is printed on stderr. */
export const INSPECT_FLAG = "--inspect=127.0.0.1:0";

/** The inspector's WebSocket URL, read from the lines a child writes to `stderr` (a stream). */
export function inspectorUrl(stderr, timeoutMs = 30_000) {
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`no inspector URL on stderr within ${timeoutMs} ms`)), timeoutMs);
    const onData = (chunk) => {
      seen += chunk;
      const m = /Debugger listening on (ws:\/\/\S+)/.exec(seen);
      if (!m) return;
      clearTimeout(timer);
      stderr.off("data", onData);
      // Keep draining: a child whose stderr pipe fills up blocks.
      stderr.on("data", () => undefined);
      resolve(m[1]);
    };
    stderr.on("data", onData);
  });
}

/** A CDP session: `send(method, params)` resolves with the result; `on(event, fn)`; `close()`. */
export async function connectInspector(url) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", (e) => reject(new Error(`inspector: ${e.message ?? "connection failed"}`)), {
      once: true,
    });
  });
  let nextId = 1;
  const pending = new Map();
  const listeners = new Map();
  ws.addEventListener("message", (event) => {
    const msg = JSON.parse(String(event.data));
    if (msg.id !== undefined) {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) p?.reject(new Error(`${p.method}: ${msg.error.message}`));
      else p?.resolve(msg.result);
    } else for (const fn of listeners.get(msg.method) ?? []) fn(msg.params);
  });
  return {
    send: (method, params = {}) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve, reject, method });
        ws.send(JSON.stringify({ id, method, params }));
      }),
    on: (event, fn) => listeners.set(event, [...(listeners.get(event) ?? []), fn]),
    off: (event) => listeners.delete(event),
    close: () => ws.close(),
  };
}

/** Three full GCs, then the process's `process.memoryUsage()` (bytes). */
export async function heapAfterGc(session) {
  for (let i = 0; i < 3; i++) await session.send("HeapProfiler.collectGarbage");
  const { result } = await session.send("Runtime.evaluate", {
    expression: "JSON.stringify(process.memoryUsage())",
    returnByValue: true,
  });
  return JSON.parse(result.value);
}

/**
 * V8's heap by space — new (both semi-spaces), old, code, large objects — as the process has it
 * committed and resident now (no GC forced), from `v8.getHeapSpaceStatistics()`: bytes.
 */
export async function heapSpaces(session) {
  const { result } = await session.send("Runtime.evaluate", {
    // The inspector's command line API gives `require` in an ES module process too.
    expression:
      "JSON.stringify(require('node:v8').getHeapSpaceStatistics().map((s) => [s.space_name, s.physical_space_size, s.space_used_size]))",
    includeCommandLineAPI: true,
    returnByValue: true,
  });
  return JSON.parse(result.value).map(([name, resident, used]) => ({ name, resident, used }));
}

/**
 * The process's anonymous resident memory by who mapped it (/proc/<pid>/smaps, MB): the main
 * thread's malloc heap (`[heap]`), other threads' malloc arenas (a read-write mapping followed by
 * its reserved rest, 64 MB together) and every other anonymous mapping (V8's heap among them).
 */
export function anonymousByKind(pid) {
  const maps = [];
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      maps.push({ start: BigInt(`0x${head[1]}`), end: BigInt(`0x${head[2]}`), perm: head[3], name: head[4], rssKb: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+)/.exec(line);
    if (rss && maps.length) maps[maps.length - 1].rssKb = Number(rss[1]);
  }
  const ARENA = 64n * 2n ** 20n;
  const out = { mallocMainMb: 0, mallocArenasMb: 0, otherAnonMb: 0 };
  maps.forEach((m, i) => {
    const next = maps[i + 1];
    if (m.name === "[heap]") out.mallocMainMb += m.rssKb / 1024;
    else if (m.name !== "") return;
    else if (next?.name === "" && next.perm === "---p" && next.start === m.end && next.end - m.start === ARENA)
      out.mallocArenasMb += m.rssKb / 1024;
    else out.otherAnonMb += m.rssKb / 1024;
  });
  return out;
}

/** A heap snapshot (V8 takes it after a full GC) streamed to `path`; resolves with its size in bytes. */
export async function writeHeapSnapshot(session, path) {
  const out = createWriteStream(path);
  let bytes = 0;
  session.on("HeapProfiler.addHeapSnapshotChunk", ({ chunk }) => {
    bytes += chunk.length;
    out.write(chunk);
  });
  try {
    await session.send("HeapProfiler.takeHeapSnapshot", { reportProgress: false, captureNumericValue: false });
  } finally {
    session.off("HeapProfiler.addHeapSnapshotChunk");
    await new Promise((resolve, reject) => out.end((e) => (e ? reject(e) : resolve())));
  }
  return bytes;
}

/** Starts V8's sampling CPU profiler; the returned function stops it and resolves with the profile. */
export async function startCpuProfile(session, intervalUs = 200) {
  await session.send("Profiler.enable");
  await session.send("Profiler.setSamplingInterval", { interval: intervalUs });
  await session.send("Profiler.start");
  return async () => {
    const { profile } = await session.send("Profiler.stop");
    await session.send("Profiler.disable");
    return profile;
  };
}

let ticksPerSecond;
/** CPU time a process has used so far, in ms: utime + stime of /proc/<pid>/stat (every thread). */
export function cpuMs(pid) {
  ticksPerSecond ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name, which may hold spaces, closed by the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
}

/** The CPU time (ms) of a process's main thread alone (/proc/<pid>/task/<pid>/stat): the event loop's share of cpuMs. */
export function mainThreadCpuMs(pid) {
  ticksPerSecond ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
}
