// `@` path completion through the SDK: Engine.completePaths.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

import { Engine } from "coder-agent-engine";
import { workspace } from "./mock.mjs";

function put(path, content) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
}

test("completePaths ranks path-shaped queries, narrows to a folder and never leaves the workspace", async (t) => {
  const dir = workspace();
  for (const file of ["server/core/src/lib.rs", "server/core/src/main.rs", "docs/my notes.md", "target/lib.rs"]) {
    put(join(dir, file), "");
  }
  put(join(dir, ".gitignore"), "target/\n");
  // A model is required to create an engine; completion never calls it.
  const engine = Engine.create({ workingDir: dir, model: { provider: "openai", model: "mock", baseUrl: "http://127.0.0.1:9/v1", apiKey: "k" }, saveSessions: false });
  t.after(async () => {
    await engine.dispose();
    rmSync(dir, { recursive: true, force: true });
  });
  assert.deepEqual(engine.completePaths("src/lib"), [
    { path: "server/core/src/lib.rs", kind: "file", indices: [12, 13, 14, 15, 16, 17, 18] },
  ]);
  assert.deepEqual(
    engine.completePaths("server/core/src/").map((match) => match.path),
    ["server/core/src/lib.rs", "server/core/src/main.rs"],
  );
  assert.deepEqual(
    engine.completePaths('"my no').map((match) => match.path),
    ["docs/my notes.md"],
  );
  assert.equal(engine.completePaths("rs", 1).length, 1);
  for (const query of ["../../etc/passwd", "/etc/passwd", "../".repeat(300_000)]) {
    assert.deepEqual(engine.completePaths(query), [], query.slice(0, 20));
  }
});
