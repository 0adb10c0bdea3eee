// The extension's protocol client (src/session.ts, bundled to dist/session.mjs) over
// vscode-jsonrpc, the library VS Code's LanguageClient is built on, driving the real
// `coder lsp` binary against the scripted mock model (`coder-mock-model`): a streamed
// reply, a write that needs permission, an interrupt, the other methods, shutdown.
//
// CODER_BIN and CODER_MOCK_BIN point at the binaries (scripts/test.sh builds them).

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import * as rpc from "vscode-jsonrpc/node";

import { CoderSession } from "../dist/session.mjs";

const target = process.env.CARGO_TARGET_DIR ?? resolve(import.meta.dirname, "../../../target");
const coderBin = resolve(process.env.CODER_BIN ?? join(target, "debug/coder"));
const mockBin = resolve(process.env.CODER_MOCK_BIN ?? join(target, "debug/coder-mock-model"));

/** Mocks and their script directories, also ended when the test process exits before a
 * test's own cleanup ran (a timeout, a crash). */
const leftovers = [];
process.once("exit", () => {
  for (const { mock, dir } of leftovers) {
    mock.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

async function startMock(t, script) {
  const dir = mkdtempSync(join(tmpdir(), "coder-mock-"));
  const file = join(dir, "script.json");
  writeFileSync(file, JSON.stringify(script));
  const mock = spawn(mockBin, ["--script", file], { stdio: ["ignore", "pipe", "inherit"] });
  leftovers.push({ mock, dir });
  t.after(() => {
    mock.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  const firstLine = await new Promise((resolve, reject) => {
    createInterface({ input: mock.stdout }).once("line", resolve);
    mock.once("error", reject);
  });
  return firstLine.trim();
}

/** `coder lsp` in a fresh workspace, connected and initialized. */
async function startServer(t, url) {
  const workspace = mkdtempSync(join(tmpdir(), "coder-ws-"));
  mkdirSync(join(workspace, ".coder"));
  writeFileSync(join(workspace, ".coder", "config.json"), JSON.stringify({ permissions: { preset: "balanced" } }));
  const server = spawn(coderBin, ["lsp", "--stdio"], {
    cwd: workspace,
    env: { PATH: process.env.PATH, HOME: workspace, OPENAI_BASE_URL: `${url}/v1`, OPENAI_API_KEY: "k" },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => server.once("exit", (code) => resolve(code)));
  // The server is gone (the test stopped it, or it is killed now) before its workspace is.
  t.after(async () => {
    server.kill();
    await exited;
    rmSync(workspace, { recursive: true, force: true });
  });
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(server.stdout),
    new rpc.StreamMessageWriter(server.stdin),
  );
  const session = new CoderSession(connection);
  connection.listen();
  const init = await connection.sendRequest("initialize", { processId: process.pid, rootUri: null, capabilities: {} });
  await connection.sendNotification("initialized", {});
  return { workspace, connection, session, init, exited };
}

const text = (t) => ({ kind: "stream", chunks: [{ type: "text", text: t }] });

test("a conversation with a permission request, through vscode-jsonrpc", async (t) => {
  const url = await startMock(t, [
    { kind: "stream", chunks: [{ type: "text", text: "Hello " }, { type: "text", text: "editor." }] },
    { kind: "stream", chunks: [{ type: "tool_call", id: "w1", name: "write", arguments: '{"path":"from-node.txt","content":"node\\n"}' }] },
    text("Written."),
    { kind: "stream", chunks: [{ type: "tool_call", id: "w2", name: "write", arguments: '{"path":"refused.txt","content":"no\\n"}' }] },
    text("Understood."),
  ]);
  const { workspace, connection, session, init, exited } = await startServer(t, url);
  assert.equal(init.capabilities.experimental.coder.protocolVersion, "0.1");
  const events = [];
  session.onEvent((event) => events.push(event));
  const asked = [];
  session.onPermission((request) => {
    asked.push(request);
    // The answer names one of the request's own options.
    return asked.length === 1
      ? { optionId: request.options[0].optionId }
      : { optionId: "deny", message: "not that file" };
  });

  const conversationId = await session.create();
  assert.equal(await session.ask(conversationId, "hi"), "Hello editor.");
  const streamed = events
    .filter((e) => e.type === "agent_message_delta")
    .map((e) => e.delta)
    .join("");
  assert.equal(streamed, "Hello editor.");

  assert.equal(await session.ask(conversationId, "write a file"), "Written.");
  assert.equal(asked[0].toolName, "write");
  assert.deepEqual(
    asked[0].options.map((option) => [option.optionId, option.kind]),
    [
      ["allow_once", "allow_once"],
      ["allow_always", "allow_always"],
      ["deny", "reject_once"],
      ["reject_always", "reject_always"],
      ["refuse", "reject_once"],
    ],
  );
  assert.equal(asked[0].options[1].covers, "`write` on any file in this project");
  assert.equal(readFileSync(join(workspace, "from-node.txt"), "utf8"), "node\n");

  assert.equal(await session.ask(conversationId, "write another"), "Understood.");
  assert.equal(asked.length, 2);
  assert.throws(() => readFileSync(join(workspace, "refused.txt")), /ENOENT/);
  // seq increases strictly; it skips numbers only where the server merged consecutive deltas
  // for a reader that fell behind (docs/events.md).
  for (let i = 1; i < events.length; i++) {
    assert.ok(events[i].seq > events[i - 1].seq, "events in seq order");
    if (events[i].seq !== events[i - 1].seq + 1) {
      assert.match(events[i].type, /_delta$/, `a gap only where deltas merged: ${JSON.stringify(events[i])}`);
    }
  }

  // A built-in command typed as input answers at once with its text, no task.
  assert.match(await session.ask(conversationId, "/tools"), /apply_patch/);
  assert.deepEqual(await session.send(conversationId, "/mode"), { text: "mode: default" });

  const conversations = await session.list();
  assert.deepEqual(conversations.map((c) => [c.id, c.isRoot]), [[conversationId, true]], "the first conversation is the root");
  const history = await session.history(conversationId, 2);
  assert.deepEqual(history.map((e) => e.role), ["user", "assistant"]);
  assert.equal(history[1].text, "Understood.");
  assert.equal((await session.destroy(conversationId)).ok, false, "the root cannot be destroyed");
  await assert.rejects(session.history("00000000-0000-0000-0000-000000000000"), (err) => err.code === -32602);

  await connection.sendRequest("shutdown");
  await connection.sendNotification("exit");
  assert.equal(await exited, 0);
  connection.dispose();
});

test("a request the engine withdraws is cancelled for the editor, which closes its prompt", async (t) => {
  const url = await startMock(t, [
    { kind: "stream", chunks: [{ type: "tool_call", id: "w1", name: "write", arguments: '{"path":"later.txt","content":"x\\n"}' }] },
    text("Done."),
  ]);
  const { workspace, session } = await startServer(t, url);
  const conversationId = await session.create();
  let withdrawn;
  const prompted = new Promise((resolve) => {
    session.onPermission((request, cancelled) => {
      resolve(request);
      // The prompt stays open until the server cancels it.
      return new Promise((answer) => {
        withdrawn = () => cancelled.isCancellationRequested;
        cancelled.onCancellationRequested(() => answer({ optionId: "deny", message: "closed" }));
      });
    });
  });
  const done = session.ask(conversationId, "write it");
  await prompted;
  // Plan mode decides the call again, without an answer: denied.
  await session.send(conversationId, "/mode plan");
  assert.equal(await done, "Done.");
  assert.equal(withdrawn(), true, "the request was cancelled");
  assert.throws(() => readFileSync(join(workspace, "later.txt")), /ENOENT/);
});

test("interrupt ends the running task as aborted, and the conversation goes on", async (t) => {
  const url = await startMock(t, [
    { kind: "stream", chunks: Array.from({ length: 500 }, () => ({ type: "text", text: "slow " })), delay_ms: 20 },
    text("Back."),
  ]);
  const { connection, session } = await startServer(t, url);
  const conversationId = await session.create();
  const second = await session.create();
  assert.notEqual(second, conversationId);
  const stop = session.onEvent((event) => {
    if (event.type === "agent_message_delta") {
      stop();
      session.interrupt(conversationId);
    }
  });
  await assert.rejects(session.ask(conversationId, "talk"), /aborted: interrupted/);
  assert.equal(await session.ask(conversationId, "again"), "Back.");
  assert.deepEqual(await session.destroy(second), { ok: true });
  connection.dispose();
});

test("ask follows a handoff to its continuation and resolves with the work's last message", async (t) => {
  const toolCall = (id, name, args) => ({ kind: "stream", chunks: [{ type: "tool_call", id, name, arguments: JSON.stringify(args) }] });
  const url = await startMock(t, [
    toolCall("c1", "conv_create", { user_instruction: "Summarise the plan." }),
    text("The plan, summarised."),
    text("Done with the handoff."),
  ]);
  const { connection, session } = await startServer(t, url);
  const conversationId = await session.create();
  assert.equal(await session.ask(conversationId, "delegate"), "Done with the handoff.");
  connection.dispose();
});
