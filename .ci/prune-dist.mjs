// After `tsc`: removes what dist/ holds for a module src/ no longer has (moved or deleted), so
// it never ships; copies the console's assets, and drops those src/ no longer has. dist/ is never emptied as a whole:
// a test process may be running the built CLI while another rebuilds it.
import { cpSync, existsSync, readdirSync, rmSync } from "node:fs";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const dist = join(root, "dist");
const src = join(root, "src");

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
  );
}

const assets = join(dist, "console", "assets");
for (const file of walk(dist)) {
  if (file.startsWith(assets + "/")) continue;
  if (/^(vendor|\.vendor-\d+)\//.test(relative(dist, file))) continue; // built by vendor-dist.mjs
  const module = relative(dist, file).replace(/\.(js|js\.map|d\.ts|d\.ts\.map)$/, "");
  if (!existsSync(join(src, `${module}.ts`))) rmSync(file);
}
cpSync(join(src, "console", "assets"), assets, { recursive: true });
for (const file of walk(assets)) if (!existsSync(join(src, "console", "assets", relative(assets, file)))) rmSync(file);
