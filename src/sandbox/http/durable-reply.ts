/**
 * No answer leaves before what it tells is on disk: every response's `end()` waits for the
 * store's group fsync (group-sync.ts) to cover the writes made so far — its own, and those
 * of any request whose effects it may have read. An answer that changed and read nothing
 * new goes out at once. When the store cannot be synced, the connection is cut instead:
 * the client sees what it would see of a crash, and retries with the same key.
 */
import type { ServerResponse } from "node:http";
import type { GroupSync } from "../group-sync.js";

const ending = new WeakSet<ServerResponse>();

/** Whether the response was ended already (its answer may still wait for the disk). */
export function answered(res: ServerResponse): boolean {
  return ending.has(res) || res.headersSent || res.destroyed;
}

/** Makes `res.end(...)` wait for durability. Every part of the HTTP surface answers with one `end` call. */
export function holdUntilDurable(res: ServerResponse, sync: GroupSync, log: (line: string) => void): void {
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.end = ((...args: unknown[]) => {
    if (ending.has(res)) return res;
    ending.add(res);
    if (sync.isDurable()) return end(...args);
    sync.durable().then(
      () => end(...args),
      (e: Error) => {
        log(`not answering: ${e.message}`);
        res.destroy();
      },
    );
    return res;
  }) as ServerResponse["end"];
}
