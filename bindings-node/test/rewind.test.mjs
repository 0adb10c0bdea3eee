// Points, rewinds and forks through the SDK: `rewindPoints`, `rewind` (with `dryRun`) and
// `fork`, in a git repository.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { Engine } from "coder-agent-engine";
import { startMock, text, toolCall, workspace } from "./mock.mjs";

/** A git repository with `a.txt` committed. */
function repository() {
  const dir = workspace();
  writeFileSync(join(dir, "a.txt"), "original\n");
  const git = (...args) => {
    const done = spawnSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
      cwd: dir,
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: dir },
    });
    assert.equal(done.status, 0, String(done.stderr));
  };
  git("init", "-q");
  git("add", ".");
  git("commit", "-q", "-m", "start");
  return dir;
}

/** Sends `input` and waits for the session to be idle again. */
async function turn(engine, input) {
  const idle = new Promise((resolve) => {
    const off = engine.onEvent((event) => {
      if (event.type === "state_changed" && event.state === "idle") {
        off();
        resolve();
      }
    });
  });
  engine.send(engine.rootConversation, input);
  await idle;
}

test("rewindPoints, rewind with a preview, then fork into a new session", async (t) => {
  const { url } = await startMock(t, [
    toolCall("w1", "write", { path: "a.txt", content: "first turn\n" }),
    text("one"),
    toolCall("w2", "write", { path: "made.txt", content: "made\n" }),
    toolCall("w3", "write", { path: "a.txt", content: "second turn\n" }),
    text("two"),
  ]);
  const dir = repository();
  const engine = Engine.create({
    workingDir: dir,
    model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" },
    preset: "yolo",
  });
  t.after(() => engine.dispose());
  const root = engine.rootConversation;
  await turn(engine, "first");
  await turn(engine, "second\nmore lines");
  assert.deepEqual(
    engine.rewindPoints(root).map(({ point, text }) => [point, text]),
    [
      [0, "first"],
      [1, "second"],
    ],
  );

  const preview = await engine.rewind(root, 1, { dryRun: true });
  assert.equal(preview.dryRun, true);
  assert.deepEqual(preview.restored, ["a.txt"]);
  assert.deepEqual(preview.removed, ["made.txt"]);
  assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), "second turn\n");
  assert.ok(existsSync(join(dir, "made.txt")));

  const done = await engine.rewind(root, 1);
  assert.equal(done.dryRun, false);
  assert.deepEqual([done.restored, done.removed, done.kept], [["a.txt"], ["made.txt"], []]);
  assert.equal(done.filesRecorded, true);
  assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), "first turn\n");
  assert.ok(!existsSync(join(dir, "made.txt")));
  assert.deepEqual(
    engine.history(root).map((entry) => entry.text),
    ["first", "one"],
  );

  const original = engine.sessionId;
  const fork = await engine.fork(root, 0);
  assert.equal(fork.forkedFrom, original);
  assert.equal(engine.sessionId, fork.sessionId);
  assert.ok(existsSync(join(dir, ".coder/sessions", `${original}.json`)));
  assert.deepEqual(engine.rewindPoints(root), []);
  assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), "first turn\n", "a fork touches no file");

  await assert.rejects(engine.rewind(root, 5), { code: "invalid_params", message: /no point 5/ });
  await assert.rejects(engine.rewind("not-an-id", 0), { code: "invalid_params" });
});
