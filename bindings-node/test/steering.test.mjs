// Steering through the SDK: input steered while a task runs reaches its model at the next
// checkpoint without ending the task, with a receipt; queued input can be withdrawn.

import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

import { Engine } from "coder-agent-engine";
import { startMock, text, toolCall, workspace } from "./mock.mjs";

function engineOn(url, dir) {
  return Engine.create({
    workingDir: dir,
    model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" },
    preset: "yolo",
    saveSessions: false,
  });
}

test("a steer reaches the running task's model with a receipt", async (t) => {
  const dir = workspace();
  // The command runs until the test has steered (a file it waits for).
  const command = "echo started; while [ ! -e steered ]; do sleep 0.05; done";
  const { url, requests } = await startMock(t, [toolCall("c1", "bash", { command }), text("done")]);
  const engine = engineOn(url, dir);
  t.after(() => engine.dispose());
  const events = [];
  let steered;
  const done = new Promise((resolve) => {
    engine.onEvent((event) => {
      events.push(event);
      if (event.type === "tool_call_output_delta" && steered === undefined) {
        steered = engine.steer(engine.rootConversation, "also run the tests");
        writeFileSync(join(dir, "steered"), "");
      }
      if (event.type === "task_complete") resolve();
    });
  });
  engine.send(engine.rootConversation, "make it");
  await done;
  assert.equal(steered.steering, true);
  const receipt = events.find((event) => event.type === "input_receipt" && event.inputId === steered.inputId);
  assert.equal(receipt?.receipt, "steered");
  assert.equal(receipt?.step, 2);
  assert.equal(events.filter((event) => event.type === "task_started").length, 1);
  const second = (await requests())[1];
  assert.match(JSON.stringify(second.body.messages.at(-1)), /also run the tests/);
});

test("queued input withdrawn never runs", async (t) => {
  const dir = workspace();
  const command = "while [ ! -e withdrawn ]; do sleep 0.05; done";
  const { url, requests } = await startMock(t, [toolCall("c1", "bash", { command }), text("done")]);
  const engine = engineOn(url, dir);
  t.after(() => engine.dispose());
  const events = [];
  const done = new Promise((resolve) => {
    engine.onEvent((event) => {
      events.push(event);
      if (event.type === "task_complete") resolve();
    });
  });
  engine.send(engine.rootConversation, "wait");
  const queued = engine.steer(engine.createConversation(), "elsewhere, later");
  assert.equal(queued.steering, false);
  assert.equal(engine.withdrawInput(queued.inputId), true);
  writeFileSync(join(dir, "withdrawn"), "");
  await done;
  assert.equal(engine.withdrawInput(queued.inputId), false);
  const receipts = events.filter((event) => event.type === "input_receipt" && event.inputId === queued.inputId);
  assert.deepEqual(
    receipts.map((event) => event.receipt),
    ["queued", "dropped"],
  );
  assert.equal((await requests()).length, 2);
});
