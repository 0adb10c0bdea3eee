// Puts a release build of the addon into its platform package and checks it.
//
//   node scripts/dist.mjs <platform key>      e.g. linux-x64-gnu
//
// Run after `napi build --platform --profile release-node ... --output-dir release` (the
// `build:native:dist` script, or the release workflow): copies `release/coder.<key>.node`
// to `npm/<key>/`, refuses it unless it is a stripped release build, and on Linux prints
// the newest glibc symbol version it needs (`objdump -T`), the oldest glibc it runs on.

import { copyFileSync, existsSync, statSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";

import { problems } from "./check-native.mjs";

const root = join(import.meta.dirname, "..");
const key = process.argv[2];
if (!key || !existsSync(join(root, "npm", key, "package.json"))) {
  console.error(`usage: node scripts/dist.mjs <platform key>, one of the directories of npm/ (got ${key ?? "nothing"})`);
  process.exit(2);
}
const binary = `coder.${key}.node`;
const from = join(root, "release", binary);
const to = join(root, "npm", key, binary);
const found = problems(from);
if (found.length > 0) {
  for (const line of found) {
    console.error(`error: ${line}`);
  }
  process.exit(1);
}
copyFileSync(from, to);
console.log(`${to}: ${(statSync(to).size / 1e6).toFixed(1)} MB`);
if (key.endsWith("-gnu")) {
  const objdump = spawnSync("objdump", ["-T", to], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (objdump.status === 0) {
    const versions = [...new Set(objdump.stdout.match(/GLIBC_[0-9.]+/g) ?? [])];
    const newest = versions.sort((a, b) =>
      a.slice(6).localeCompare(b.slice(6), undefined, { numeric: true }),
    ).at(-1);
    console.log(`needs glibc ${newest?.slice(6) ?? "(none)"} or newer`);
  }
}
