// Many engines in one process: they share one runtime and one workspace watcher, so the
// process's threads stay under a bound that does not grow with the number of engines, and
// every engine still sees its own workspace change, past the 128 inotify instances a user
// gets by default (`/proc/sys/fs/inotify/max_user_instances`).

import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

import { Engine } from "coder-agent-engine";
import { workspace } from "./mock.mjs";

const addon = createRequire(import.meta.url)("../native/index.js");

/** More engines than inotify instances a user gets by default. */
const ENGINES = 200;

/** The 2 engine threads and at most 16 blocking threads, napi's promise worker, the
 * watcher's 2 threads, and a few of Node's own that start on first use. */
const MOST_ADDED_THREADS = 28;

const threads = () => readdirSync("/proc/self/task").length;

/** Resolves once `check()` holds, or rejects after `ms`. */
async function until(what, check, ms = 30000) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test(`${ENGINES} engines in one process hold a bounded number of threads and each sees its workspace change`, async (t) => {
  const before = threads();
  const engines = [];
  t.after(async () => {
    await Promise.all(engines.map(({ engine }) => engine.dispose()));
    for (const { dir } of engines) rmSync(dir, { recursive: true, force: true });
  });
  for (let i = 0; i < ENGINES; i++) {
    const dir = workspace();
    const engine = Engine.create({
      workingDir: dir,
      // Never called: the engines stay idle.
      model: { provider: "openai", model: "mock", baseUrl: "http://127.0.0.1:9/v1", apiKey: "k" },
      saveSessions: false,
    });
    const reloaded = [];
    engine.onEvent((event) => event.type === "workspace_reloaded" && reloaded.push(event));
    engines.push({ engine, dir, reloaded });
  }
  // Each session's first walk of its workspace runs on a thread of its own, and ends.
  await until("the threads to settle", () => threads() - before <= MOST_ADDED_THREADS);

  for (const [i, { dir }] of engines.entries()) {
    writeFileSync(join(dir, "AGENTS.md"), `Rule of engine ${i}.\n`);
  }
  for (const [i, { engine, dir, reloaded }] of engines.entries()) {
    await until(`engine ${i}'s reload`, () => reloaded.some((event) => event.what === "rules"));
    assert.deepEqual(reloaded.map((event) => event.paths), [[join(dir, "AGENTS.md")]], `engine ${i}`);
    assert.ok(
      engine.rules().some((rule) => rule.path === join(dir, "AGENTS.md")),
      `engine ${i} holds its rules file`,
    );
  }
  assert.ok(threads() - before <= MOST_ADDED_THREADS, `${threads() - before} threads added`);
});

test("disposed engines leave no task running on the shared engine threads", async () => {
  const engines = [];
  for (let i = 0; i < 20; i++) {
    const dir = workspace();
    engines.push({
      dir,
      engine: Engine.create({
        workingDir: dir,
        model: { provider: "openai", model: "mock", baseUrl: "http://127.0.0.1:9/v1", apiKey: "k" },
        saveSessions: false,
      }),
    });
  }
  assert.ok(addon.runtimeTasks() > 0);
  await Promise.all(engines.map(({ engine }) => engine.dispose()));
  for (const { dir } of engines) rmSync(dir, { recursive: true, force: true });
  await until("the runtime's tasks to end", () => addon.runtimeTasks() === 0, 10000);
});
