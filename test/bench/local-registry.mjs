// A package registry on 127.0.0.1 for `npx -y paid-actions-mcp` before the package is
// published: it serves one package from a tarball `npm pack` made — its packument (the
// latest version, the tarball's integrity; cache headers as registry.npmjs.org sends them)
// and the tarball itself — and answers every other request with a redirect to the upstream
// registry, so that npm resolves the dependencies as it would for the published package.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

/**
 * Starts the registry for `tarball`; `url` is what npm_config_registry takes. Requests are
 * counted by kind (`packument`, `tarball`, `upstream`).
 */
export async function startLocalRegistry(tarball, upstream = "https://registry.npmjs.org/") {
  const bytes = readFileSync(tarball);
  const pkg = JSON.parse(execFileSync("tar", ["-xzOf", tarball, "package/package.json"], { encoding: "utf8" }));
  const integrity = `sha512-${createHash("sha512").update(bytes).digest("base64")}`;
  const shasum = createHash("sha1").update(bytes).digest("hex");
  const file = `/${pkg.name}/-/${pkg.name}-${pkg.version}.tgz`;
  const counts = { packument: 0, tarball: 0, upstream: 0 };
  let origin = "";
  const server = createServer((req, res) => {
    const path = decodeURIComponent((req.url ?? "/").split("?")[0]);
    if (path === `/${pkg.name}`) {
      counts.packument++;
      const headers = {
        "content-type": "application/json",
        "cache-control": "public, max-age=300",
        etag: `"${shasum}"`,
      };
      if (req.headers["if-none-match"] === headers.etag) return res.writeHead(304, headers).end();
      const version = {
        ...pkg,
        _id: `${pkg.name}@${pkg.version}`,
        dist: { tarball: origin + file, integrity, shasum },
      };
      const packument = {
        _id: pkg.name,
        name: pkg.name,
        "dist-tags": { latest: pkg.version },
        versions: { [pkg.version]: version },
      };
      return res.writeHead(200, headers).end(JSON.stringify(packument));
    }
    if (path === file) {
      counts.tarball++;
      return res
        .writeHead(200, { "content-type": "application/octet-stream", "content-length": bytes.length })
        .end(bytes);
    }
    counts.upstream++;
    res.writeHead(302, { location: upstream.replace(/\/$/, "") + req.url }).end();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${server.address().port}`;
  return {
    url: `${origin}/`,
    name: pkg.name,
    version: pkg.version,
    counts,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
