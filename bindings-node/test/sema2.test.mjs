// SemaCore 2's API against the mock model: the session pool, `SemaSession`'s methods and
// events with SemaCore 2's payloads, SemaCore 1.0's methods on the active session, the
// subpath exports, and the methods coder has no feature for.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";

import { SemaCore, SemaSession } from "coder-agent-engine";
import { MAIN_AGENT_ID, SESSION_EVENTS, PROCESS_EVENTS } from "coder-agent-engine/event";
import { MAIN_AGENT_ID as TYPES_MAIN } from "coder-agent-engine/types";
import * as mcp from "coder-agent-engine/mcp";
import { next, startMock, text, toolCall, workspace, freshSemaRoot } from "./mock.mjs";

async function core(t, url, config = {}) {
  const dir = workspace();
  freshSemaRoot();
  const sema = new SemaCore({ workingDir: dir, logLevel: "none", saveSessions: false, ...config });
  t.after(() => sema.dispose());
  const model = { provider: "openai", modelName: "mock", baseURL: `${url}/v1`, apiKey: "k", maxTokens: 1024, contextLength: 32000 };
  await sema.addModel(model, true);
  await sema.applyTaskModel({ main: "mock[openai]", quick: "mock[openai]" });
  return { sema, dir };
}

/** Records every SemaCore event of `emitter` as [name, payload]. */
function record(emitter) {
  const seen = [];
  for (const name of SESSION_EVENTS) emitter.on(name, (data) => seen.push([name, data]));
  return seen;
}

test("createSession with options resolves { ok, session }; the session streams with ids in SemaCore's order", async (t) => {
  const { url } = await startMock(t, [
    { kind: "stream", chunks: [{ type: "thinking", text: "Hm." }, { type: "text", text: "Hello " }, { type: "text", text: "there." }], delay_ms: 50 },
  ]);
  const { sema } = await core(t, url);
  const result = await sema.createSession({ permissionLevel: "Ask" });
  assert.equal(result.ok, true);
  const session = result.session;
  assert.ok(session instanceof SemaSession);
  assert.deepEqual(sema.listSessions(), [session.sessionId]);
  assert.equal(sema.getSession(session.sessionId), session);
  // `session:ready` was emitted before this listener: it is replayed.
  const ready = await new Promise((resolve) => session.once("session:ready", resolve));
  assert.equal(ready.sessionId, session.sessionId);
  assert.equal(ready.pid, process.pid);
  assert.deepEqual(ready.todos, []);
  const seen = record(session);
  const idle = next(session, "state:update", (d) => d.state === "idle");
  session.processUserInput("hi", "hi!");
  await idle;
  // `session:ready` came before the listener: it is replayed, after the synchronous input.
  const names = seen.map(([name]) => name).filter((name) => name !== "session:ready");
  assert.equal(seen.filter(([name]) => name === "session:ready").length, 1);
  assert.deepEqual(names.slice(0, 4), ["input:received", "state:update", "input:processing", "message:thinking:chunk"]);
  const received = seen[0][1];
  assert.equal(typeof received.inputId, "string");
  assert.deepEqual({ ...received, inputId: "" }, { inputId: "", input: "hi", originalInput: "hi!", queued: false, queueLength: 0, source: "user" });
  const processing = seen.find(([name]) => name === "input:processing")[1];
  assert.deepEqual(processing, { inputId: received.inputId, input: "hi", originalInput: "hi!", source: "user" });
  const chunks = seen.filter(([name]) => name === "message:text:chunk").map(([, d]) => d);
  const complete = seen.find(([name]) => name === "message:complete")[1];
  assert.equal(typeof complete.id, "string");
  assert.ok(chunks.length >= 1 && chunks.every((chunk) => chunk.id === complete.id));
  assert.equal(chunks.at(-1).content, "Hello there.");
  assert.equal(complete.agentId, MAIN_AGENT_ID);
  assert.equal(complete.content, "Hello there.");
  assert.deepEqual(names.at(-1), "state:update");
});

test("permission requests carry toolId and are answered by it; execution events carry it too", async (t) => {
  const { url } = await startMock(t, [
    { kind: "stream", chunks: [
      { type: "tool_call", id: "a1", name: "write", arguments: JSON.stringify({ path: "a.txt", content: "a\n" }) },
      { type: "tool_call", id: "b1", name: "write", arguments: JSON.stringify({ path: "b.txt", content: "b\n" }) },
    ] },
    text("done"),
  ]);
  const { sema, dir } = await core(t, url);
  const { session } = await sema.createSession({});
  const requests = [];
  const seen = record(session);
  session.on("tool:permission:request", (data) => {
    requests.push(data);
    // Answered by id alone: the tool name given matches no request, so only `toolId`
    // can pick the call. `b1` is refused with a reason, `a1` agreed.
    session.respondToToolPermission({ toolId: data.toolId, toolName: "NoSuchTool", selected: data.toolId === "b1" ? "not b" : "agree" });
  });
  let idle = next(session, "state:update", (d) => d.state === "idle");
  session.processUserInput("two writes");
  await idle;
  assert.deepEqual(requests.map((r) => [r.toolId, r.toolName]), [["a1", "Write"], ["b1", "Write"]]);
  assert.ok(existsSync(join(dir, "a.txt")));
  assert.ok(!existsSync(join(dir, "b.txt")));
  const responses = seen.filter(([name]) => name === "tool:permission:response").map(([, d]) => d.toolId);
  assert.deepEqual(responses, ["a1", "b1"]);
  const start = seen.find(([name, d]) => name === "tool:execution:start" && d.toolId === "a1");
  const done = seen.find(([name, d]) => name === "tool:execution:complete" && d.toolId === "a1");
  const failed = seen.find(([name, d]) => name === "tool:execution:error" && d.toolId === "b1");
  assert.ok(start && done && failed);
  // A session created at `Ask` stays there: a wider level is narrowed to its ceiling.
  session.updatePermissionLevel("Bypass");
  assert.deepEqual(seen.at(-1), ["permissionLevel:update", { level: "Ask" }]);
  assert.equal(session.permissionLevel, "Ask");
  assert.throws(() => session.updatePermissionLevel("Everything"), { code: "invalid_params" });
});

test("a session created at Bypass runs writes without asking; its level can be lowered", async (t) => {
  const { url } = await startMock(t, [
    toolCall("c1", "write", { path: "c.txt", content: "one\n" }), text("ok"),
    toolCall("c2", "write", { path: "d.txt", content: "two\n" }), text("asked"),
  ]);
  const { sema, dir } = await core(t, url);
  const { session } = await sema.createSession({ permissionLevel: "Bypass" });
  const requests = [];
  session.on("tool:permission:request", (d) => {
    requests.push(d.toolId);
    session.respondToToolPermission({ toolId: d.toolId, toolName: d.toolName, selected: "agree" });
  });
  const idle = next(session, "state:update", (d) => d.state === "idle");
  session.processUserInput("one");
  await idle;
  assert.deepEqual(requests, []);
  const update = next(session, "permissionLevel:update");
  session.updatePermissionLevel("Ask");
  assert.deepEqual(await update, { level: "Ask" });
  assert.equal(session.permissionLevel, "Ask");
  assert.equal(readFileSync(join(dir, "c.txt"), "utf8"), "one\n");
  // Lowered to Ask, the next write waits for an answer.
  const idleAgain = next(session, "state:update", (d) => d.state === "idle");
  session.processUserInput("two");
  await idleAgain;
  assert.deepEqual(requests, ["c2"]);
  assert.equal(readFileSync(join(dir, "d.txt"), "utf8"), "two\n");
});

test("two sessions in one pool: each hears only its own events; 1.0 methods follow the active one", async (t) => {
  const { url } = await startMock(t, [text("from one"), text("from two"), text("one again")]);
  const { sema } = await core(t, url);
  const one = (await sema.createSession({})).session;
  const two = (await sema.createSession({})).session;
  assert.notEqual(one.sessionId, two.sessionId);
  assert.deepEqual(sema.listSessions(), [one.sessionId, two.sessionId]);
  const heard = { one: [], two: [], core: [] };
  one.on("message:complete", (d) => heard.one.push(d.content));
  two.on("message:complete", (d) => heard.two.push(d.content));
  sema.on("message:complete", (d) => heard.core.push(d.content));
  // The session created last is active: the core's 1.0 methods and events are its.
  let idle = next(two, "state:update", (d) => d.state === "idle");
  sema.processUserInput("hi");
  await idle;
  idle = next(one, "state:update", (d) => d.state === "idle");
  one.processUserInput("hi");
  await idle;
  assert.deepEqual(heard, { one: ["from two"], two: ["from one"], core: ["from one"] });
  assert.equal(sema.setActiveSession(one.sessionId), true);
  assert.equal(sema.setActiveSession("no-such"), false);
  idle = next(one, "state:update", (d) => d.state === "idle");
  sema.processUserInput("again");
  await idle;
  assert.deepEqual(heard.core, ["from one", "one again"]);
  assert.equal(sema.closeSession(two.sessionId), true);
  assert.equal(sema.closeSession(two.sessionId), false);
  assert.deepEqual(sema.listSessions(), [one.sessionId]);
  assert.equal(sema.getSession(two.sessionId), undefined);
});

test("a 1.0 program's createSession() replaces the session and still resolves a result", async (t) => {
  const { url } = await startMock(t, [text("a")]);
  const { sema } = await core(t, url);
  const ready = next(sema, "session:ready");
  const first = await sema.createSession();
  assert.equal(first.ok, true);
  assert.equal((await ready).sessionId, first.session.sessionId);
  const second = await sema.createSession();
  assert.equal(second.ok, true);
  assert.deepEqual(sema.listSessions(), [second.session.sessionId]);
  assert.equal(first.session.disposed, true);
});

test("without a model a session still opens after config:no_models; input fails until addModel, then runs", async (t) => {
  const { url } = await startMock(t, [text("now with a model")]);
  freshSemaRoot();
  const sema = new SemaCore({ workingDir: workspace(), logLevel: "none", saveSessions: false });
  t.after(() => sema.dispose());
  const order = [];
  sema.on("config:no_models", () => order.push("config:no_models"));
  sema.on("session:ready", () => order.push("session:ready"));
  const opened = await sema.createSession();
  assert.equal(opened.ok, true);
  assert.deepEqual(order, ["config:no_models", "session:ready"]);
  // A listener attached later still hears session:ready.
  const late = await new Promise((resolve) => opened.session.once("session:ready", resolve));
  assert.equal(late.sessionId, opened.session.sessionId);
  const failed = next(sema, "session:error");
  sema.processUserInput("hello");
  const error = await failed;
  assert.equal(error.type, "config_error");
  assert.equal(error.error.code, "no_provider");
  assert.match(error.error.message, /no model provider configured/);
  await sema.addModel({ provider: "openai", modelName: "mock", baseURL: `${url}/v1`, apiKey: "k", maxTokens: 1024, contextLength: 32000 }, true);
  const done = next(sema, "message:complete");
  sema.processUserInput("again");
  assert.equal((await done).content, "now with a model");
  const unknown = await sema.createSession({ mainModel: "other[openai]" });
  assert.equal(unknown.ok, false);
  assert.match(unknown.error, /other\[openai\]/);
});

test("a running command's output arrives as tool:execution:chunk and as a watched task; task:start and task:end bracket it", async (t) => {
  const command = "for i in 1 2; do echo tick $i; sleep 0.5; done";
  const { url } = await startMock(t, [toolCall("c1", "bash", { command }), text("done")]);
  const { sema } = await core(t, url);
  const { session } = await sema.createSession({ permissionLevel: "Bypass" });
  const seen = record(session);
  const watched = [];
  session.on("task:start", (d) => {
    assert.deepEqual(session.getTaskList().map((task) => [task.taskId, task.status, task.type]), [["c1", "running", "RunShell"]]);
    session.watchTask(d.taskId, (delta) => watched.push(delta));
  });
  const idle = next(session, "state:update", (d) => d.state === "idle");
  session.processUserInput("count");
  await idle;
  const chunks = seen.filter(([name]) => name === "tool:execution:chunk").map(([, d]) => d);
  assert.equal(chunks.map((c) => c.content).join(""), "tick 1\ntick 2\n");
  assert.ok(chunks.every((c) => c.toolId === "c1" && c.toolName === "Bash"));
  assert.equal(watched.join(""), "tick 1\ntick 2\n");
  const names = seen.map(([name]) => name);
  assert.ok(names.indexOf("task:start") < names.indexOf("tool:execution:chunk"));
  assert.ok(names.indexOf("task:end") < names.indexOf("tool:execution:complete"));
  assert.deepEqual(seen.find(([name]) => name === "task:end")[1].status, "completed");
  const [task] = session.getTaskList();
  assert.equal(task.status, "completed");
  assert.equal(task.command, command);
  assert.equal(session.stopTask("c1"), false, "an ended task cannot be stopped");
  assert.equal(session.stopAllTasks(), 0);
});

test("stopTask interrupts the running command; the task ends killed", async (t) => {
  const { url } = await startMock(t, [toolCall("c1", "bash", { command: "echo go; sleep 30" }), text("never")]);
  const { sema } = await core(t, url);
  const { session } = await sema.createSession({ permissionLevel: "Bypass" });
  const ended = next(session, "task:end");
  session.once("tool:execution:chunk", () => assert.equal(session.stopTask("c1"), true));
  const interrupted = next(session, "session:interrupted");
  session.processUserInput("wait");
  const end = await ended;
  assert.deepEqual([end.taskId, end.status], ["c1", "killed"]);
  assert.equal(session.getTaskList()[0].status, "killed");
  assert.equal((await interrupted).agentId, MAIN_AGENT_ID);
});

test("image attachments reach the model with the text; input:processing echoes them", async (t) => {
  const { url, requests } = await startMock(t, [text("a red dot")]);
  const { sema } = await core(t, url);
  const { session } = await sema.createSession({});
  const attachments = [{ type: "image", data: "iVBORw0KGgo=", mediaType: "image/png" }];
  const processing = next(session, "input:processing");
  const idle = next(session, "state:update", (d) => d.state === "idle");
  session.processUserInput("what is this?", undefined, attachments);
  assert.deepEqual((await processing).attachments, attachments);
  await idle;
  const body = JSON.stringify((await requests())[0].body.messages);
  assert.match(body, /what is this\?/);
  assert.match(body, /data:image\/png;base64,iVBORw0KGgo=/);
});

test("interrupt, agent mode and /clear on a session", async (t) => {
  const { url } = await startMock(t, [{ kind: "stream", chunks: [{ type: "text", text: "slow" }], delay_ms: 5000 }]);
  const { sema } = await core(t, url);
  const { session } = await sema.createSession({ agentMode: "Plan" });
  assert.equal(session.agentMode, "Plan");
  const interrupted = next(session, "session:interrupted");
  session.once("state:update", () => session.interrupt());
  session.processUserInput("go");
  assert.deepEqual(await interrupted, { agentId: MAIN_AGENT_ID, content: "Process cancelled by user" });
  session.updateAgentMode("Agent");
  // The engine's `mode_changed` moves `agentMode`.
  const deadline = Date.now() + 5000;
  while (session.agentMode !== "Agent" && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(session.agentMode, "Agent");
  const cleared = next(session, "session:cleared");
  session.processUserInput("/clear");
  assert.equal((await cleared).sessionId, session.sessionId);
});

test("getForkPreview shows what a fork would put back; fork cuts the history with or without the files", async (t) => {
  const { url } = await startMock(t, [
    text("first"),
    toolCall("w1", "write", { path: "f.txt", content: "changed\n" }), text("wrote"),
    toolCall("w2", "write", { path: "g.txt", content: "again\n" }), text("wrote again"),
  ]);
  const { sema, dir } = await core(t, url, { saveSessions: true });
  // The engine records files in a git repository.
  writeFileSync(join(dir, "f.txt"), "original\n");
  for (const args of [["init", "-q"], ["add", "."], ["commit", "-q", "-m", "start"]]) {
    const done = spawnSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
      cwd: dir,
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: dir },
    });
    assert.equal(done.status, 0, String(done.stderr));
  }
  const { session } = await sema.createSession({ permissionLevel: "Bypass" });
  for (const input of ["one", "two"]) {
    const idle = next(session, "state:update", (d) => d.state === "idle");
    session.processUserInput(input);
    await idle;
  }
  assert.deepEqual(session.forkPoints().map((p) => [p.messageUuid, p.text]), [["0", "one"], ["1", "two"]]);
  const preview = await session.getForkPreview("1");
  assert.equal(preview.messageUuid, "1");
  assert.equal(preview.canRestoreFiles, true);
  // Putting f.txt back swaps one line: one added, one removed.
  assert.deepEqual(preview.files.map((f) => [f.displayPath, f.effect, f.additions, f.removals]), [["f.txt", "modify", 1, 1]]);
  assert.equal(readFileSync(join(dir, "f.txt"), "utf8"), "changed\n", "a preview changes nothing");
  const result = await session.fork("1", { restoreFiles: true });
  assert.deepEqual(result, { ok: true, sessionId: session.sessionId, restoredFiles: [join(dir, "f.txt")] });
  assert.equal(readFileSync(join(dir, "f.txt"), "utf8"), "original\n");
  assert.deepEqual(session.forkPoints().map((p) => p.messageUuid), ["0"]);
  // Without restoreFiles only the history is cut: the file the model wrote stays.
  const again = next(session, "state:update", (d) => d.state === "idle");
  session.processUserInput("three");
  await again;
  assert.equal(readFileSync(join(dir, "g.txt"), "utf8"), "again\n");
  const cut = await session.fork("1");
  assert.deepEqual(cut, { ok: true, sessionId: session.sessionId, restoredFiles: [] });
  assert.equal(readFileSync(join(dir, "g.txt"), "utf8"), "again\n");
  assert.deepEqual(session.forkPoints().map((p) => p.messageUuid), ["0"]);
  // The turn cut away is forgotten: going back further leaves g.txt, which it wrote, alone.
  const before = await session.getForkPreview("0");
  assert.deepEqual(before.files, []);
  const bad = await session.fork("x");
  assert.equal(bad.ok, false);
});

test("what coder does not have throws not_supported, naming the method", async () => {
  freshSemaRoot();
  const sema = new SemaCore({ workingDir: workspace(), logLevel: "none" });
  for (const method of ["installPlugin", "getCronTasks", "getDesignSystemsInfo", "getHooksInfo", "addMarketplaceFromGit"]) {
    assert.throws(() => sema[method]("x"), (err) => err.code === "not_supported" && err.message.includes(method));
  }
  await sema.dispose();
});

test("the subpath exports load under import and require", () => {
  assert.equal(MAIN_AGENT_ID, "main");
  assert.equal(TYPES_MAIN, "main");
  assert.deepEqual([...PROCESS_EVENTS], ["mcp:server:status"]);
  assert.ok(SESSION_EVENTS.includes("tool:execution:chunk"));
  assert.equal(typeof mcp, "object");
  const require = createRequire(import.meta.url);
  assert.equal(require("coder-agent-engine/event").MAIN_AGENT_ID, "main");
  assert.equal(require("coder-agent-engine/types").MAIN_AGENT_ID, "main");
  assert.equal(typeof require("coder-agent-engine/mcp"), "object");
  assert.equal(typeof require("coder-agent-engine").SemaSession, "function");
});

test("a one-shot program in the shape of SemaCore 2's demo runs with only its imports naming this package", async (t) => {
  const { url } = await startMock(t, [
    toolCall("w1", "write", { path: "out.txt", content: "done\n" }),
    text("All written."),
  ]);
  const dir = workspace();
  const { execFile } = await import("node:child_process");
  const { promisify } = await import("node:util");
  const { stdout } = await promisify(execFile)(process.execPath, [join(import.meta.dirname, "fixtures/sema2-exec.mjs"), dir, "write it"], {
    cwd: import.meta.dirname,
    env: { ...process.env, MODEL_BASE_URL: `${url}/v1` },
  });
  assert.match(stdout, /\[tool\] w1 write/);
  assert.match(stdout, /FINAL: All written\./);
  assert.equal(readFileSync(join(dir, "out.txt"), "utf8"), "done\n");
});
