// The app's main-process side under Node: the real engine, the scripted model, the same
// handlers `main.js` gives to `ipcMain`.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { host, startMock, text, toolCall, workspace } from "./events.mjs";

test("a message runs, asks before a command with the engine's options, and streams the answer", async (t) => {
  const mock = await startMock(t, [
    toolCall("c1", "bash", { command: "echo hello > note.txt" }),
    text("Made **note.txt**."),
  ]);
  const dir = workspace();
  const { chat, events, until } = host(t, mock.url, dir);
  const call = chat.handlers();
  const info = await call["coder:info"]();
  assert.equal(info.workingDir, dir);

  await call["coder:send"]("make a note");
  const asked = await until((e) => e.type === "permission_requested");
  assert.equal(asked.command, "echo hello > note.txt");
  const ids = asked.options.map((option) => option.optionId);
  assert.deepEqual(ids.slice(0, 1), ["allow_once"]);
  assert.ok(ids.includes("deny") && ids.includes("refuse"), ids.join(", "));
  await call["coder:answer"](asked.requestId, "allow_once", "");
  await until((e) => e.type === "task_complete");
  const answer = events
    .filter((e) => e.type === "agent_message_delta" && e.conversationId === info.conversationId)
    .map((e) => e.delta)
    .join("");
  assert.equal(answer, "Made **note.txt**.");
  assert.equal(readFileSync(join(dir, "note.txt"), "utf8"), "hello\n");

  // The session is saved and listed; taken up again, its transcript comes back.
  await until((e) => e.type === "state_changed" && e.state === "idle");
  await chat.dispose();
  const again = host(t, mock.url, dir);
  const sessions = await again.chat.handlers()["coder:sessions"]();
  assert.equal(sessions[0]?.sessionId, info.sessionId);
  assert.equal(sessions[0]?.title, "make a note");
  const resumed = await again.chat.handlers()["coder:resume"](info.sessionId);
  assert.equal(resumed.sessionId, info.sessionId);
  assert.deepEqual(resumed.transcript, [
    { role: "user", text: "make a note" },
    { role: "assistant", text: "Made **note.txt**." },
  ]);
  // A new session starts empty and is another one.
  const fresh = await again.chat.handlers()["coder:new"]();
  assert.notEqual(fresh.sessionId, info.sessionId);
});

test("a denial carries the person's reason to the model", async (t) => {
  const mock = await startMock(t, [
    toolCall("c1", "bash", { command: "rm -r build" }),
    text("Left it."),
  ]);
  const dir = workspace();
  const { chat, until } = host(t, mock.url, dir);
  const call = chat.handlers();
  await call["coder:send"]("clean up");
  const asked = await until((e) => e.type === "permission_requested");
  await call["coder:answer"](asked.requestId, "deny", "keep the build folder");
  await until((e) => e.type === "task_complete");
  const requests = await mock.requests();
  const tool = requests.at(-1).body.messages.find((m) => m.role === "tool");
  assert.match(tool.content, /keep the build folder/);
});

test("stop interrupts the answer being written", async (t) => {
  const mock = await startMock(t, [
    { kind: "stream", chunks: Array.from({ length: 500 }, () => ({ type: "text", text: "slow " })), delay_ms: 20 },
  ]);
  const { chat, until } = host(t, mock.url, workspace());
  const call = chat.handlers();
  await call["coder:send"]("talk");
  await until((e) => e.type === "agent_message_delta");
  assert.equal(await call["coder:stop"](), true);
  const aborted = await until((e) => e.type === "turn_aborted", 0, 5_000);
  assert.equal(aborted.reason, "interrupted");
});

test("an empty message is refused with a clear error and nothing runs", async (t) => {
  const mock = await startMock(t, [text("never")]);
  const { chat, events } = host(t, mock.url, workspace());
  assert.throws(() => chat.handlers()["coder:send"]("   "), /non-empty string/);
  assert.equal(events.filter((e) => e.type === "task_started").length, 0);
  assert.equal((await mock.requests()).length, 0);
});
