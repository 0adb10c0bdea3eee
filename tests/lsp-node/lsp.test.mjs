// Drives the real `coder lsp` binary with vscode-jsonrpc over stdio, against the scripted
// mock model (`coder-mock-model`): a streamed reply, then a write that needs permission.
//
// CODER_BIN and CODER_MOCK_BIN point at the binaries (scripts/test.sh builds them).

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import * as rpc from "vscode-jsonrpc/node";

const target = process.env.CARGO_TARGET_DIR ?? resolve(import.meta.dirname, "../../target");
const coderBin = resolve(process.env.CODER_BIN ?? join(target, "debug/coder"));
const mockBin = resolve(process.env.CODER_MOCK_BIN ?? join(target, "debug/coder-mock-model"));

async function startMock(script) {
  const dir = mkdtempSync(join(tmpdir(), "coder-mock-"));
  const file = join(dir, "script.json");
  writeFileSync(file, JSON.stringify(script));
  const mock = spawn(mockBin, ["--script", file], { stdio: ["ignore", "pipe", "inherit"] });
  const firstLine = await new Promise((resolve, reject) => {
    createInterface({ input: mock.stdout }).once("line", resolve);
    mock.once("error", reject);
  });
  return { mock, url: firstLine.trim() };
}

test("a conversation with a permission request, through vscode-jsonrpc", async (t) => {
  const { mock, url } = await startMock([
    { kind: "stream", chunks: [{ type: "text", text: "Hello " }, { type: "text", text: "editor." }] },
    { kind: "stream", chunks: [{ type: "tool_call", id: "w1", name: "write", arguments: '{"path":"from-node.txt","content":"node\\n"}' }] },
    { kind: "stream", chunks: [{ type: "text", text: "Written." }] },
  ]);
  t.after(() => mock.kill());

  const workspace = mkdtempSync(join(tmpdir(), "coder-ws-"));
  mkdirSync(join(workspace, ".coder"));
  writeFileSync(join(workspace, ".coder", "config.json"), JSON.stringify({ permissions: { preset: "balanced" } }));
  const server = spawn(coderBin, ["lsp", "--stdio"], {
    cwd: workspace,
    env: { PATH: process.env.PATH, HOME: workspace, OPENAI_BASE_URL: `${url}/v1`, OPENAI_API_KEY: "k" },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => server.once("exit", (code) => resolve(code)));
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(server.stdout),
    new rpc.StreamMessageWriter(server.stdin),
  );

  const events = [];
  const waiters = [];
  connection.onNotification("conversation/event", ({ event }) => {
    events.push(event);
    for (const waiter of waiters.splice(0)) waiter();
  });
  const permissionRequests = [];
  connection.onRequest("permission/request", (params) => {
    permissionRequests.push(params);
    return { decision: "allow_once" };
  });
  connection.listen();
  const completed = async (count) => {
    while (events.filter((e) => e.type === "task_complete").length < count) {
      await new Promise((resolve) => waiters.push(resolve));
    }
  };

  const init = await connection.sendRequest("initialize", { processId: process.pid, rootUri: null, capabilities: {} });
  assert.equal(init.capabilities.experimental.coder.protocolVersion, "0.1");
  await connection.sendNotification("initialized", {});

  const { conversationId } = await connection.sendRequest("conversation/create", {});
  const { taskId } = await connection.sendRequest("conversation/send", { conversationId, text: "hi" });
  await completed(1);
  const text = events
    .filter((e) => e.taskId === taskId && e.type === "agent_message_delta")
    .map((e) => e.delta)
    .join("");
  assert.equal(text, "Hello editor.");
  for (let i = 1; i < events.length; i++) assert.equal(events[i].seq, events[i - 1].seq + 1);

  await connection.sendRequest("conversation/send", { conversationId, text: "write a file" });
  await completed(2);
  assert.equal(permissionRequests.length, 1);
  assert.equal(permissionRequests[0].toolName, "write");
  assert.equal(readFileSync(join(workspace, "from-node.txt"), "utf8"), "node\n");

  const { conversations } = await connection.sendRequest("conversation/list", {});
  assert.equal(conversations.length, 2);
  await assert.rejects(
    connection.sendRequest("conversation/history", { conversationId: "00000000-0000-0000-0000-000000000000" }),
    (err) => err.code === -32602,
  );

  await connection.sendRequest("shutdown");
  await connection.sendNotification("exit");
  assert.equal(await exited, 0);
  connection.dispose();
});
