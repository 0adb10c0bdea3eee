// Where the SDK finds its addon, run in a child `node` so that each case loads it afresh:
// the package's own files are copied into an empty directory, with no development build
// beside them, and a platform package is put there or not.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const { platformKey } = createRequire(import.meta.url)("../dist/cjs/native.js");

/** A copy of the installed package (`dist/`, package.json) with no `native/` directory. */
function installedCopy(t) {
  const dir = mkdtempSync(join(tmpdir(), "coder-loader-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const pkg = join(dir, "node_modules", "coder-agent-engine");
  cpSync(join(root, "dist"), join(pkg, "dist"), { recursive: true });
  cpSync(join(root, "package.json"), join(pkg, "package.json"));
  return dir;
}

function requireIn(dir, env) {
  const childEnv = { ...process.env, ...env };
  if (env.CODER_NATIVE_PATH === undefined) {
    delete childEnv.CODER_NATIVE_PATH;
  }
  return spawnSync(
    process.execPath,
    ["-e", "const sdk = require('coder-agent-engine'); console.log(typeof sdk.Engine.builtInPrompt());"],
    { cwd: dir, env: childEnv, encoding: "utf8" },
  );
}

test("with no binary for the platform, require throws at once naming the platform and what was looked for", (t) => {
  const dir = installedCopy(t);
  const run = requireIn(dir, { CODER_NATIVE_PATH: undefined });
  assert.notEqual(run.status, 0);
  const key = platformKey();
  assert.match(run.stderr, new RegExp(`no native addon could be loaded for ${process.platform} ${process.arch}`));
  if (process.platform === "linux") {
    assert.match(run.stderr, key.endsWith("-musl") ? /\(musl\)/ : /\(glibc\)/);
  }
  assert.match(run.stderr, new RegExp(`native/coder\\.${key}\\.node: no such file`));
  assert.match(run.stderr, new RegExp(`package coder-agent-engine-${key}: Cannot find module`));
  // The failure is the loader's, at require, not a provider's at the first call.
  assert.doesNotMatch(run.stdout, /string/);
});

test("CODER_NATIVE_PATH pointing nowhere is reported, not replaced by another binary", (t) => {
  const dir = installedCopy(t);
  const missing = join(dir, "nowhere", "coder.node");
  const run = requireIn(dir, { CODER_NATIVE_PATH: missing });
  assert.notEqual(run.status, 0);
  assert.ok(run.stderr.includes(`CODER_NATIVE_PATH=${missing}: Cannot find module`), run.stderr);
});

test("the platform package is loaded when there is no development build", (t) => {
  const dir = installedCopy(t);
  const key = platformKey();
  const platformPackage = join(dir, "node_modules", `coder-agent-engine-${key}`);
  mkdirSync(platformPackage);
  const binary = `coder.${key}.node`;
  symlinkSync(join(root, "native", binary), join(platformPackage, binary));
  writeFileSync(
    join(platformPackage, "package.json"),
    JSON.stringify({ name: `coder-agent-engine-${key}`, version: "0.0.0", main: binary }),
  );
  const run = requireIn(dir, { CODER_NATIVE_PATH: undefined });
  assert.equal(run.stderr, "");
  assert.equal(run.stdout.trim(), "string");
});
