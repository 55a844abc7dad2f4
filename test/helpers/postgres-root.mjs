/**
 * As root, PostgreSQL's side of the test helper (postgres.mjs): the user it runs as (it refuses
 * root), the command line that drops to that user, and what that user can reach — npm's
 * binaries inside a clone in a private directory are not, so they are copied where they are.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";

export const INSTALL_HINT = "install PostgreSQL's server package (Debian: apt-get install postgresql)";

/**
 * As root, the user PostgreSQL runs as: `postgres` where a server package created it, else
 * `nobody` (a machine whose server comes from npm has no such user, and a test must not add
 * one); undefined when not root. By number: `nobody`'s group is not called nobody everywhere.
 * @returns {{ name: string, uid: number, gid: number } | undefined}
 */
export function serverUser() {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ["postgres", "nobody"]) {
    try {
      const id = (/** @type {string} */ flag) =>
        Number(
          execFileSync("id", [flag, name], { stdio: ["ignore", "pipe", "ignore"] })
            .toString()
            .trim(),
        );
      return { name, uid: id("-u"), gid: id("-g") };
    } catch {
      /* no such user: try the next */
    }
  }
  throw new Error(
    "running as root, and there is neither a `postgres` nor a `nobody` user to run PostgreSQL as (it refuses root)",
  );
}

/** A command line that runs `argv` as `user` (setpriv execs: same pid), or as is without one. */
/** @param {string[]} argv @param {{ uid: number, gid: number } | undefined} user @returns {string[]} */
export function asServerUser(argv, user) {
  if (user === undefined) return argv;
  return ["setpriv", `--reuid=${user.uid}`, `--regid=${user.gid}`, "--init-groups", "--", ...argv];
}

/**
 * Whether `argv` runs and exits 0 as `user` (a quick probe: `postgres -V` loads every shared
 * library the server needs, `test -w DIR` says whether the user can reach and write a dir).
 * @param {string[]} argv @param {{ uid: number, gid: number } | undefined} user
 */
function succeedsAs(argv, user) {
  const [cmd, ...args] = asServerUser(argv, user);
  try {
    execFileSync(/** @type {string} */ (cmd), args, {
      stdio: "ignore",
      timeout: 30_000,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    });
    return true;
  } catch {
    return false;
  }
}

/**
 * npm's binaries as a dropped-root `user` can run them. They live inside the clone's
 * node_modules; a clone in a private directory (as root: /root, mode 0700) is out of that
 * user's reach, and the server fails to load its own libraries. Then the package's `native`
 * folder is copied once per version into the temp dir (root-owned, 0755, made aside and
 * renamed into place, so concurrent test files share one whole copy) and run from there.
 * Throws one line saying what to change when even that copy cannot be run.
 * @param {import("./postgres.d.mts").PostgresBinaries} bins
 * @param {{ name: string, uid: number, gid: number }} user
 * @returns {import("./postgres.d.mts").PostgresBinaries}
 */
export function reachableBinaries(bins, user) {
  if (succeedsAs([bins.postgres, "-V"], user)) return bins;
  const native = dirname(dirname(bins.postgres));
  let version = "unknown";
  try {
    version = JSON.parse(readFileSync(join(dirname(native), "package.json"), "utf8")).version;
  } catch {
    /* a layout without the package's manifest: one copy for all */
  }
  const base = join(reachableTmp(user), `pam-postgres-${version}-${process.platform}-${process.arch}`);
  if (!existsSync(base)) {
    const aside = mkdtempSync(`${base}.`);
    try {
      cpSync(native, join(aside, "native"), { recursive: true, verbatimSymlinks: true });
      chmodSync(aside, 0o755);
      renameSync(aside, base);
    } catch {
      rmSync(aside, { recursive: true, force: true }); // another test file put its copy in place first
    }
  }
  const copy = {
    initdb: join(base, "native", "bin", basename(bins.initdb)),
    postgres: join(base, "native", "bin", basename(bins.postgres)),
    source: bins.source,
  };
  const st = statSync(base);
  if (st.uid === 0 && (st.mode & 0o022) === 0 && succeedsAs([copy.postgres, "-V"], user)) return copy;
  throw new Error(
    `as root, PostgreSQL runs as ${user.name}, who cannot run npm's binaries at ${bins.postgres} (a directory above it is private, as /root is) ` +
      `nor a copy at ${base} (remove it if it is not root's): move the clone to a directory others may enter (chmod o+x on each parent), or ${INSTALL_HINT}`,
  );
}

/**
 * The temp dir if the dropped-root user can enter it, else /tmp: test servers keep their
 * data, socket and (when needed) binaries there.
 * @param {{ uid: number, gid: number } | undefined} user
 */
export function reachableTmp(user) {
  const dir = tmpdir();
  if (user === undefined || dir === "/tmp" || succeedsAs(["test", "-x", dir], user)) return dir;
  return "/tmp";
}
