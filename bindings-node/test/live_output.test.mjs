// A running command's output, and an MCP tool's progress, reach the SDK while the call runs
// (`tool_call_output_delta`), every delta before the call's end.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { Engine } from "coder-agent-engine";
import { mcpServerScript, startMock, text, toolCall, workspace } from "./mock.mjs";

test("a running command's lines arrive before it ends", async (t) => {
  const dir = workspace();
  const command = "for i in 1 2 3; do echo tick $i; sleep 1; done; touch ended";
  const { url } = await startMock(t, [toolCall("c1", "bash", { command }), text("done")]);
  const engine = Engine.create({
    workingDir: dir,
    model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" },
    preset: "yolo",
    saveSessions: false,
  });
  t.after(() => engine.dispose());
  const events = [];
  let endedAtFirstLine;
  const done = new Promise((resolve) => {
    engine.onEvent((event) => {
      events.push(event);
      if (event.type === "tool_call_output_delta" && endedAtFirstLine === undefined) {
        endedAtFirstLine = existsSync(join(dir, "ended"));
      }
      if (event.type === "task_complete") resolve();
    });
  });
  engine.send(engine.rootConversation, "count");
  await done;
  assert.equal(endedAtFirstLine, false, "the first line came only once the command had ended");
  const deltas = events.filter((event) => event.type === "tool_call_output_delta");
  assert.equal(deltas.map((event) => event.delta).join(""), "tick 1\ntick 2\ntick 3\n");
  assert.ok(deltas.every((event) => event.callId === "c1" && event.stream === "stdout"));
  const completed = events.findIndex((event) => event.type === "tool_call_completed");
  assert.ok(events.indexOf(deltas.at(-1)) < completed, "a delta came after the call ended");
});

// A small MCP server: its tool `work` reports its progress twice, then answers.
const progressServer = mcpServerScript("p", ["work"], `
      const progressToken = m.params._meta.progressToken;
      send({ method: "notifications/progress", params: { progressToken, progress: 1, total: 2, message: "Copying" } });
      send({ method: "notifications/progress", params: { progressToken, progress: 2, total: 2 } });
      send({ id: m.id, result: { content: [{ type: "text", text: "worked" }] } });`);

test("an MCP tool's progress arrives as progress lines before it ends", async (t) => {
  const dir = workspace();
  writeFileSync(join(dir, "server.js"), progressServer);
  const { url } = await startMock(t, [toolCall("c1", "p__work", {}), text("done")]);
  const engine = Engine.create({
    workingDir: dir,
    model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" },
    preset: "yolo",
    saveSessions: false,
    mcpServers: { p: { command: "node", args: [join(dir, "server.js")] } },
  });
  t.after(() => engine.dispose());
  const events = [];
  const done = new Promise((resolve) => {
    engine.onEvent((event) => {
      events.push(event);
      if (event.type === "task_complete") resolve();
    });
  });
  engine.send(engine.rootConversation, "work");
  await done;
  const deltas = events.filter((event) => event.type === "tool_call_output_delta");
  assert.equal(deltas.map((event) => event.delta).join(""), "Copying (1/2)\n2/2\n");
  assert.ok(deltas.every((event) => event.callId === "c1" && event.stream === "progress"));
  const completed = events.findIndex((event) => event.type === "tool_call_completed");
  assert.equal(events[completed].output, "worked");
  assert.ok(events.indexOf(deltas.at(-1)) < completed, "a delta came after the call ended");
});
