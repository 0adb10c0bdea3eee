// Custom slash commands and skills through the SDK: listed for completion, a command
// expanded before the model sees it, an unknown one refused.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

import { Engine } from "coder-agent-engine";
import { startMock, text, workspace } from "./mock.mjs";

function put(path, content) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
}

test("commands and skills are listed, a command expands, an unknown one is refused", async (t) => {
  const { url, requests } = await startMock(t, [text("ok")]);
  const dir = workspace();
  put(join(dir, ".coder/commands/review.md"), "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 with care.\n");
  put(join(dir, ".coder/skills/notes/SKILL.md"), "---\nname: notes\ndescription: Write release notes.\n---\nBody\n");
  const engine = Engine.create({ workingDir: dir, model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" }, saveSessions: false });
  t.after(async () => {
    await engine.dispose();
    rmSync(dir, { recursive: true, force: true });
  });
  const review = engine.commands().find((command) => command.name === "review");
  assert.deepEqual(review, {
    name: "review",
    description: "Review a file",
    argumentHint: "<file>",
    source: "workspace",
    path: join(dir, ".coder/commands/review.md"),
    body: "Review $1 with care.\n",
  });
  assert.deepEqual(
    engine.skills().filter((skill) => skill.source === "workspace"),
    [{ name: "notes", description: "Write release notes.", source: "workspace", path: join(dir, ".coder/skills/notes/SKILL.md") }],
  );
  assert.throws(() => engine.send(engine.rootConversation, "/nosuch"), {
    code: "invalid_params",
    message: /unknown command \/nosuch; known commands: .*\/review/,
  });
  const done = new Promise((resolve) => engine.onEvent((event) => event.type === "task_complete" && resolve()));
  engine.send(engine.rootConversation, "/review lib.rs");
  await done;
  const sent = await requests();
  assert.equal(sent.length, 1);
  assert.equal(sent[0].body.messages[1].content, "Review lib.rs with care.\n");
});

test("command() runs built-in commands: text, a task to follow, a refusal for an unknown one", async (t) => {
  const { url, requests } = await startMock(t, [text("one"), text("two"), text("Summary.")]);
  const dir = workspace();
  const engine = Engine.create({ workingDir: dir, model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" }, saveSessions: false });
  t.after(async () => {
    await engine.dispose();
    rmSync(dir, { recursive: true, force: true });
  });
  const root = engine.rootConversation;
  assert.ok(engine.command(root, "/help").text.includes("/compact"));
  assert.deepEqual(engine.command(root, "/plan"), { text: "mode: plan" });
  assert.equal(engine.command(root, "/default").text, "mode: default");
  assert.equal(engine.command(root, "/todos").text, "No todos.");
  assert.throws(() => engine.command(root, "/nosuch"), { code: "invalid_params" });
  assert.equal((await requests()).length, 0);
  for (const input of ["first", "second"]) {
    const done = new Promise((resolve) => engine.onEvent((event) => event.type === "task_complete" && resolve()));
    engine.send(root, input);
    await done;
  }
  const compacted = new Promise((resolve) => engine.onEvent((event) => event.type === "compacted" && resolve(event)));
  const started = engine.command(root, "/compact");
  assert.equal(typeof started.taskId, "string");
  const event = await compacted;
  assert.equal(event.taskId, started.taskId);
  assert.equal(event.summary, "Summary.");
});

test("input() and processUserInput take a built-in command as the terminal does: it runs and reaches no model", async (t) => {
  const { url, requests } = await startMock(t, [text("ok")]);
  const dir = workspace();
  const engine = Engine.create({ workingDir: dir, model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" }, saveSessions: false });
  t.after(async () => {
    await engine.dispose();
    rmSync(dir, { recursive: true, force: true });
  });
  const root = engine.rootConversation;
  const help = engine.input(root, "/help");
  assert.ok(help.text.includes("/compact"), help.text);
  assert.equal(help.taskId, undefined);
  assert.deepEqual(engine.input(root, "/mode plan"), { text: "mode: plan" });
  assert.equal(engine.command(root, "/mode").text, "mode: plan");
  assert.throws(() => engine.input(root, "/nosuch"), { code: "invalid_params", message: /unknown command \/nosuch/ });
  // Plain input is queued, its task named.
  const done = new Promise((resolve) => engine.onEvent((event) => event.type === "task_complete" && resolve()));
  const started = engine.input(root, "hello");
  assert.equal(typeof started.taskId, "string");
  await done;
  const sent = await requests();
  assert.equal(sent.length, 1);
  assert.ok(sent[0].body.messages.some((message) => message.content === "hello"));
});
