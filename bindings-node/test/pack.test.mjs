// What `npm pack` puts in the packages, checked without a release build: the main package
// carries the compiled SDK, its types, the ES module entry and the LICENSE, and no binary,
// test or source file; a platform package carries its binary only, and the packaging check
// refuses a debug or unstripped one.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

import { problems } from "../scripts/check-native.mjs";

const root = join(import.meta.dirname, "..");

function packedFiles(dir) {
  // The prepack script runs as it does for `npm pack` (it checks the build, copies the LICENSE).
  const run = spawnSync("npm", ["pack", "--dry-run", "--json"], { cwd: dir, encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr);
  const [packed] = JSON.parse(run.stdout);
  return packed.files.map((file) => file.path).sort();
}

test("the main package ships the SDK, its types and the LICENSE, and no binary, test or source", () => {
  const files = packedFiles(root);
  for (const needed of [
    "LICENSE",
    "README.md",
    "package.json",
    "dist/cjs/index.js",
    "dist/cjs/index.d.ts",
    "dist/cjs/protocol.d.ts",
    "esm/index.mjs",
  ]) {
    assert.ok(files.includes(needed), `${needed} is packed: ${files.join(", ")}`);
  }
  const unwanted = files.filter(
    (file) =>
      file.endsWith(".node") ||
      file.startsWith("test/") ||
      file.startsWith("src/") ||
      file.startsWith("ts/") ||
      file.startsWith("scripts/") ||
      file.startsWith("npm/") ||
      file.startsWith("bench/") ||
      file.endsWith(".rs") ||
      (file.endsWith(".ts") && !file.endsWith(".d.ts")),
  );
  assert.deepEqual(unwanted, []);
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  assert.equal(manifest.exports["./package.json"], "./package.json");
  assert.equal(manifest.license, "MIT");
});

test("every platform package names its os, cpu and binary, and ships nothing else", () => {
  const keys = readdirSync(join(root, "npm"), { withFileTypes: true }).filter((entry) => entry.isDirectory());
  assert.equal(keys.length, 7);
  for (const { name: key } of keys) {
    const manifest = JSON.parse(readFileSync(join(root, "npm", key, "package.json"), "utf8"));
    const [os, cpu] = key.split("-");
    assert.equal(manifest.name, `coder-agent-engine-${key}`);
    assert.deepEqual([manifest.os, manifest.cpu], [[os], [cpu]]);
    assert.equal(manifest.main, `coder.${key}.node`);
    assert.deepEqual(manifest.files, [manifest.main]);
    const libc = key.endsWith("-gnu") ? ["glibc"] : key.endsWith("-musl") ? ["musl"] : undefined;
    assert.deepEqual(manifest.libc, libc);
  }
});

test("the packaging check refuses the debug build and a file that is not the addon", () => {
  const key = readdirSync(join(root, "native")).find((file) => file.endsWith(".node"));
  assert.ok(key, "npm run build:native has run");
  const debug = problems(join(root, "native", key));
  assert.ok(debug.some((line) => line.includes("is a debug build")), debug.join("\n"));
  if (process.platform === "linux") {
    assert.ok(debug.some((line) => line.includes("is not stripped")), debug.join("\n"));
  }
  const other = problems(process.execPath);
  assert.ok(other.some((line) => line.includes("carries no build-profile marker")), other.join("\n"));
});
