/**
 * Whose lease an intent's lease is: owners are `<pid>-<random>`, and a lease of a process
 * that no longer runs on this machine is stale (the SQLite journal is on this machine only).
 */

/** Whether the process named by a lease owner still runs (an owner that names no pid counts as alive). */
export function leaseOwnerAlive(owner: string): boolean {
  const pid = Number(owner.split("-")[0]);
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
