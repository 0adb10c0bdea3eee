// The VSIX as `@vscode/vsce package` makes it from the built extension: what is in it (the
// bundles, the icon, the README and its screenshots, the licence; no node_modules, no test
// files), how large it is, and that the bundled extension needs no module VS Code and Node
// do not provide. A copy goes to the artifacts folder.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { builtinModules } from "node:module";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { inflateRawSync } from "node:zlib";

const root = resolve(import.meta.dirname, "..");
const artifacts = join(process.env.CODER_ARTIFACTS_DIR ?? resolve(root, "../../artifacts"), "vscode");

/** The entries of a zip file, by name, read from its central directory. */
function unzip(buffer) {
  const end = buffer.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  assert.ok(end >= 0, "a zip file");
  const count = buffer.readUInt16LE(end + 10);
  let at = buffer.readUInt32LE(end + 16);
  const entries = new Map();
  for (let i = 0; i < count; i++) {
    assert.equal(buffer.readUInt32LE(at), 0x02014b50, "a central directory entry");
    const method = buffer.readUInt16LE(at + 10);
    const compressed = buffer.readUInt32LE(at + 20);
    const nameLength = buffer.readUInt16LE(at + 28);
    const extra = buffer.readUInt16LE(at + 30);
    const comment = buffer.readUInt16LE(at + 32);
    const local = buffer.readUInt32LE(at + 42);
    const name = buffer.toString("utf8", at + 46, at + 46 + nameLength);
    const dataAt = local + 30 + buffer.readUInt16LE(local + 26) + buffer.readUInt16LE(local + 28);
    const data = buffer.subarray(dataAt, dataAt + compressed);
    entries.set(name, () => (method === 8 ? inflateRawSync(data) : data));
    at += 46 + nameLength + extra + comment;
  }
  return entries;
}

test("the VSIX holds the bundled extension and nothing it does not need", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "coder-vsix-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const vsix = join(dir, "coder-vscode.vsix");
  await promisify(execFile)(
    join(root, "node_modules/.bin/vsce"),
    ["package", "--no-dependencies", "--allow-missing-repository", "--no-rewrite-relative-links", "--out", vsix],
    { cwd: root },
  );
  const bytes = readFileSync(vsix);
  assert.ok(bytes.length < 1024 * 1024, `the VSIX is ${bytes.length} bytes`);
  const entries = unzip(bytes);
  const names = [...entries.keys()].sort();
  const screenshots = names.filter((name) => name.startsWith("extension/media/screenshots/"));
  assert.deepEqual(
    names.filter((name) => !screenshots.includes(name)),
    [
      "[Content_Types].xml",
      "extension.vsixmanifest",
      "extension/LICENSE.txt",
      "extension/dist/extension.js",
      "extension/dist/webview.css",
      "extension/dist/webview.js",
      "extension/media/coder.svg",
      "extension/package.json",
      "extension/readme.md",
    ],
  );
  // Every screenshot the README shows is in the VSIX.
  const readme = entries.get("extension/readme.md")().toString("utf8");
  const shown = [...readme.matchAll(/\]\((media\/screenshots\/[^)]+)\)/g)].map((m) => `extension/${m[1]}`).sort();
  assert.deepEqual(screenshots, shown);
  const manifest = JSON.parse(entries.get("extension/package.json")().toString("utf8"));
  assert.equal(manifest.main, "./dist/extension.js");
  assert.deepEqual(manifest.contributes.views.coder.map((v) => v.id), ["coder.chat"]);
  // The bundle requires only `vscode` and Node's own modules: no node_modules are needed.
  const bundle = entries.get("extension/dist/extension.js")().toString("utf8");
  const required = new Set([...bundle.matchAll(/\brequire\("([^"]+)"\)/g)].map((m) => m[1]));
  for (const name of required) {
    assert.ok(name === "vscode" || builtinModules.includes(name.replace(/^node:/, "")), `requires ${name}`);
  }
  assert.ok(required.has("vscode"));
  mkdirSync(artifacts, { recursive: true });
  copyFileSync(vsix, join(artifacts, "coder-vscode.vsix"));
});
