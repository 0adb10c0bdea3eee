// The SemaCore-compatible facade against the mock model: streaming, permissions answered
// each of the four ways, interrupt, dispose mid-task, two engines in one process.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { SemaCore, CoderEngine, Engine } from "coder-agent-engine";
import { next, startMock, text, toolCall, workspace, freshSemaRoot } from "./mock.mjs";

async function session(t, url, config = {}) {
  freshSemaRoot();
  const core = new SemaCore({ workingDir: workspace(), logLevel: "none", ...config });
  t.after(() => core.dispose());
  const model = { provider: "openai", modelName: "mock", baseURL: `${url}/v1`, apiKey: "k", maxTokens: 1024, contextLength: 32000 };
  await core.addModel(model, true); // no connection test: the scripts hold only the replies
  await core.applyTaskModel({ main: "mock[openai]", quick: "mock[openai]" });
  const ready = next(core, "session:ready");
  await core.createSession();
  return { core, ready: await ready };
}

test("text and thinking stream as chunks with the content so far, then complete and usage", async (t) => {
  // Paced, so each delta reaches JavaScript on its own (deltas that arrive while the
  // listeners are behind are merged; engine.test.mjs covers that).
  const { url } = await startMock(t, [
    { kind: "stream", chunks: [{ type: "thinking", text: "Let me " }, { type: "thinking", text: "think." },
      { type: "text", text: "Hello " }, { type: "text", text: "there." }], delay_ms: 100 },
  ]);
  const { core, ready } = await session(t, url);
  assert.equal(typeof ready.sessionId, "string");
  assert.equal(ready.historyLoaded, false);
  assert.deepEqual(ready.usage, { useTokens: 0, maxTokens: 32000, promptTokens: 0 });
  const seen = [];
  // SemaCore 2's reply `id` comes on every chunk and on the completion; the rest is 1.0's.
  const ids = new Set();
  for (const name of ["state:update", "message:text:chunk", "message:thinking:chunk", "message:complete", "conversation:usage"]) {
    core.on(name, (data) => {
      if (name.startsWith("message:")) {
        const { id, ...rest } = data;
        ids.add(id);
        seen.push([name, rest]);
      } else seen.push([name, data]);
    });
  }
  const idle = next(core, "state:update", (d) => d.state === "idle");
  core.processUserInput("hi");
  await idle;
  assert.deepEqual(seen.slice(0, 5), [
    ["state:update", { state: "processing" }],
    ["message:thinking:chunk", { content: "Let me ", delta: "Let me " }],
    ["message:thinking:chunk", { content: "Let me think.", delta: "think." }],
    ["message:text:chunk", { content: "Hello ", delta: "Hello " }],
    ["message:text:chunk", { content: "Hello there.", delta: "there." }],
  ]);
  assert.deepEqual(seen[5], ["message:complete", {
    agentId: "main", reasoning: "Let me think.", content: "Hello there.", hasToolCalls: false, toolCalls: [],
  }]);
  assert.equal(seen[6][0], "conversation:usage");
  assert.equal(seen[6][1].usage.maxTokens, 32000);
  assert.ok(seen[6][1].usage.useTokens > 0);
  assert.deepEqual(seen[7], ["state:update", { state: "idle" }]);
  assert.equal(ids.size, 1, "one reply, one id");
  assert.equal(typeof [...ids][0], "string");
});

test("a permission request answered each of the four ways", async (t) => {
  const write = (id, path) => toolCall(id, "write", { path, content: `${id}\n` });
  const { url, requests } = await startMock(t, [
    write("w1", "agree.txt"), text("ok 1"),
    // `refuse` ends the task (seed 001, checkpoint 4): the model is not asked again.
    write("w2", "refuse.txt"),
    write("w3", "feedback.txt"), text("ok 3"),
    write("w4", "allow.txt"), text("ok 4"),
    write("w5", "again.txt"), text("ok 5"),
  ]);
  const { core, ready } = await session(t, url);
  const answers = ["agree", "refuse", "write it to notes/ instead", "allow"];
  const asked = [];
  core.on("tool:permission:request", (data) => {
    asked.push(data);
    core.respondToToolPermission({ toolName: data.toolName, selected: answers[asked.length - 1] });
  });
  const completes = [];
  core.on("message:complete", (data) => completes.push(data));
  const errors = [];
  core.on("tool:execution:error", (data) => errors.push(data));
  const interrupted = [];
  core.on("session:interrupted", (data) => interrupted.push(data));
  for (const input of ["one", "two", "three", "four", "five"]) {
    const idle = next(core, "state:update", (d) => d.state === "idle");
    core.processUserInput(input);
    await idle;
  }
  // "allow" is remembered: the fifth write does not ask.
  assert.equal(asked.length, 4);
  assert.equal(asked[0].toolName, "Write");
  assert.deepEqual(Object.keys(asked[0].options), ["agree", "allow", "refuse"]);
  assert.equal(completes[0].hasToolCalls, true);
  assert.deepEqual(completes[0].toolCalls, [{ name: "Write", args: { path: "agree.txt", content: "w1\n" } }]);
  const root = core.engine.messages(core.engine.rootConversation);
  const results = root.filter((m) => m.role === "tool").map((m) => m.content);
  assert.equal(results.length, 5);
  // The refused call keeps the refusal, and the task ended as interrupted; the feedback
  // (any other text) is a denial the model reads, and the task went on.
  assert.match(results[1], /^The user refused this call; it was not run, and the task stops here\./);
  assert.match(results[1], /\[Request interrupted by user\]$/);
  assert.equal(interrupted.length, 1);
  assert.match(results[2], /write it to notes\/ instead/);
  assert.equal(errors.length, 2);
  const ws = readdirSync(ready.workingDir);
  assert.deepEqual(ws.filter((f) => f.endsWith(".txt")).sort(), ["again.txt", "agree.txt", "allow.txt"]);
  const bodies = await requests();
  assert.equal(bodies.length, 9);
  assert.match(JSON.stringify(bodies[3].body.messages), /The user refused this call/);
  assert.match(JSON.stringify(bodies[4].body.messages), /write it to notes\/ instead/);
});

test("interruptSession ends the running task with session:interrupted", async (t) => {
  const { url } = await startMock(t, [
    { kind: "stream", chunks: Array.from({ length: 400 }, () => ({ type: "text", text: "slow " })), delay_ms: 20 },
  ]);
  const { core } = await session(t, url);
  const interrupted = next(core, "session:interrupted");
  const idle = next(core, "state:update", (d) => d.state === "idle");
  await new Promise((resolve) => {
    core.once("message:text:chunk", resolve);
    core.processUserInput("talk");
  });
  core.interruptSession();
  assert.deepEqual(await interrupted, { agentId: "main", content: "Process cancelled by user" });
  await idle;
  const history = core.engine.history(core.engine.rootConversation);
  assert.equal(history.at(-1).text, "[Request interrupted by user]");
});

test("two engines in one process stream independently", async (t) => {
  const a = await startMock(t, [text("from A")]);
  const b = await startMock(t, [text("from B")]);
  const first = await session(t, a.url);
  const second = await session(t, b.url);
  assert.notEqual(first.ready.sessionId, second.ready.sessionId);
  const done = Promise.all([next(first.core, "message:complete"), next(second.core, "message:complete")]);
  first.core.processUserInput("a");
  second.core.processUserInput("b");
  const [fromA, fromB] = await done;
  assert.equal(fromA.content, "from A");
  assert.equal(fromB.content, "from B");
  assert.equal(CoderEngine, SemaCore);
});

test("a saved session comes back with createSession(sessionId)", async (t) => {
  const { url } = await startMock(t, [text("remembered")]);
  const dir = workspace();
  const { core, ready } = await session(t, url, { workingDir: dir });
  const idle = next(core, "state:update", (d) => d.state === "idle");
  core.processUserInput("remember this");
  await idle;
  await core.dispose();
  assert.ok(existsSync(join(dir, ".coder/sessions", `${ready.sessionId}.json`)));
  const again = await session(t, url, { workingDir: dir });
  assert.equal(again.ready.historyLoaded, false);
  const saved = again.core.engine.savedSessions();
  assert.equal(saved.length, 1);
  assert.equal(saved[0].sessionId, ready.sessionId);
  assert.equal(saved[0].title, "remember this");
  assert.equal(saved[0].conversations, 1);
  const readyAgain = next(again.core, "session:ready");
  await again.core.createSession(ready.sessionId);
  const resumed = await readyAgain;
  assert.equal(resumed.sessionId, ready.sessionId);
  assert.equal(resumed.historyLoaded, true);
  assert.equal(again.core.engine.history(again.core.engine.rootConversation).at(-1).text, "remembered");
});

test("useTools names SemaCore's tools; an unknown one, or one coder lacks, is left out with a warning", (t) => {
  const warnings = [];
  t.mock.method(console, "warn", (message) => warnings.push(message));
  new SemaCore({ useTools: ["Read", "Teleport", "NotebookEdit", "Skill", "ExitPlanMode"] });
  assert.equal(warnings.length, 2, warnings.join("\n"));
  assert.match(warnings[0], /unknown tool "Teleport"; it is left out/);
  assert.match(warnings[1], /coder has no NotebookEdit tool/);
  assert.throws(() => new SemaCore({ useTools: "Read" }), { code: "invalid_params" });
});

test("addModel tests the connection first, and a model that fails is not added", async (t) => {
  const { url, requests } = await startMock(t, [
    text("YES"),
    { kind: "status", status: 401, body: '{"error":{"message":"invalid api key"}}' },
  ]);
  freshSemaRoot();
  const core = new CoderEngine({ workingDir: workspace(), logLevel: "none" });
  t.after(() => core.dispose());
  const good = { provider: "openai", modelName: "good", baseURL: `${url}/v1`, apiKey: "k", maxTokens: 1024, contextLength: 32000 };
  const data = await core.addModel(good);
  assert.deepEqual(data.modelList, ["good[openai]"]);
  const [check] = await requests();
  assert.match(JSON.stringify(check.body.messages), /Connectivity check/);
  await assert.rejects(
    core.addModel({ ...good, modelName: "bad", apiKey: "wrong" }),
    /API connection test failed: .*401.*invalid api key/s,
  );
  await assert.rejects(core.addModel({ ...good, modelName: "offline", baseURL: "http://127.0.0.1:9/v1" }), /connection test failed/);
  assert.deepEqual((await core.getModelData()).modelList, ["good[openai]"], "failed models are not added");
});

test("systemPrompt goes before the built-in prompt (or replaces it), customRules open the root", async (t) => {
  const { url, requests } = await startMock(t, [text("one"), text("two")]);
  const builtIn = Engine.builtInPrompt();
  assert.ok(builtIn.length > 100);
  for (const [mode, index] of [[undefined, 0], ["replace", 1]]) {
    const config = { systemPrompt: "You are Sema.", customRules: "- answer in English", systemPromptMode: mode };
    const { core } = await session(t, url, config);
    const idle = next(core, "state:update", (d) => d.state === "idle");
    core.processUserInput("hi");
    await idle;
    const [system, rules, input] = (await requests())[index].body.messages;
    assert.equal(system.role, "system");
    assert.ok(system.content.startsWith("You are Sema.\n"), system.content.slice(0, 80));
    assert.equal(system.content.includes(builtIn), mode === undefined, `mode ${mode}`);
    assert.deepEqual([rules.role, rules.content], ["user", "- answer in English"]);
    assert.deepEqual([input.role, input.content], ["user", "hi"]);
    const conversations = core.engine.list();
    assert.equal(conversations.length, 1, "the root itself is shaped, no stand-in");
    await core.dispose();
  }
});

test("work in another conversation, todos and a provider error reach their SemaCore events", async (t) => {
  const { url } = await startMock(t, [
    toolCall("c1", "conv_create", { user_instruction: "count to two" }),
    text("one two"),
    toolCall("t1", "todo_write", { todos: [{ content: "count", status: "completed" }] }),
    text("B counted."),
    { kind: "status", status: 400, body: '{"error":{"message":"bad request"}}' },
  ]);
  const { core } = await session(t, url, { skipFileEditPermission: true });
  const seen = [];
  for (const name of ["task:agent:start", "task:agent:end", "todos:update", "session:error", "message:text:chunk", "message:complete"]) {
    core.on(name, (data) => seen.push([name, data]));
  }
  const finished = next(core, "message:complete", (d) => d.content === "B counted.");
  core.processUserInput("delegate");
  await finished;
  const [start, end] = seen.filter(([name]) => name.startsWith("task:agent"));
  assert.equal(start[0], "task:agent:start");
  assert.equal(start[1].prompt, "count to two");
  // SemaCore's summary of the sub-agent's run, not its text.
  assert.equal(end[0], "task:agent:end");
  assert.equal(end[1].taskId, start[1].taskId);
  assert.equal(end[1].status, "completed");
  assert.match(end[1].content, /^Done\(0 tools use · \d+(\.\d+k)? tokens · \d+s\)$/);
  // The sub-agent's text is its own: its message:complete names it, the main stream lacks it.
  const chunks = seen.filter(([name]) => name === "message:text:chunk").map(([, d]) => d.delta).join("");
  assert.equal(chunks, "B counted.");
  const sub = seen.find(([name, d]) => name === "message:complete" && d.content === "one two");
  assert.equal(sub?.[1].agentId, start[1].taskId);
  const todos = seen.find(([name]) => name === "todos:update");
  assert.deepEqual(todos?.[1], [{ content: "count", status: "completed", activeForm: "count" }]);

  const failed = next(core, "session:error");
  core.processUserInput("fail now");
  await failed;
  const error = seen.find(([name]) => name === "session:error");
  assert.equal(error?.[1].type, "api_error");
  assert.match(error[1].error.message, /400|bad request/);
});

test("a permission request shows the edit's diff; a malformed answer denies it and throws", async (t) => {
  const { url } = await startMock(t, [
    toolCall("e1", "edit", { path: "app.txt", old_string: "two", new_string: "TWO" }), text("ok 1"),
    toolCall("w1", "write", { path: "made.txt", content: "x\n" }), text("ok 2"),
  ]);
  const { core, ready } = await session(t, url);
  writeFileSync(join(ready.workingDir, "app.txt"), "one\ntwo\nthree\n");
  const asked = [];
  const thrown = [];
  core.on("tool:permission:request", (data) => {
    asked.push(data);
    if (asked.length === 1) core.respondToToolPermission({ toolName: data.toolName, selected: "not this one" });
    else {
      try {
        core.respondToToolPermission({ toolName: data.toolName, selected: { decision: "allow_once" } });
      } catch (err) {
        thrown.push(err);
      }
    }
  });
  for (const [i, input] of ["one", "two"].entries()) {
    // Waiting for permission also reads as `idle`: wait for the reply after the call.
    const done = next(core, "message:complete", (d) => d.content === `ok ${i + 1}`);
    core.processUserInput(input);
    await done;
  }
  assert.equal(asked.length, 2);
  assert.equal(asked[0].toolName, "Edit");
  assert.equal(asked[0].diff, "--- a/app.txt\n+++ b/app.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n");
  assert.equal(asked[1].diff, "--- /dev/null\n+++ b/made.txt\n@@ -0,0 +1 @@\n+x\n");
  assert.equal(thrown.length, 1);
  assert.ok(thrown[0] instanceof TypeError);
  assert.equal(existsSync(join(ready.workingDir, "made.txt")), false);
  const results = core.engine.messages(core.engine.rootConversation)
    .filter((m) => m.role === "tool").map((m) => m.content);
  assert.equal(results.length, 2);
  assert.match(results[1], /malformed/);
});

test("usage is the context's size now, not every request added up", async (t) => {
  const { url } = await startMock(t, [
    { kind: "stream", chunks: [{ type: "tool_call", id: "c1", name: "conv_list", arguments: "{}" },
      { type: "usage", input_tokens: 100, output_tokens: 10 }] },
    { kind: "stream", chunks: [{ type: "text", text: "Listed." }, { type: "usage", input_tokens: 130, output_tokens: 5 }] },
  ]);
  const { core } = await session(t, url);
  const usages = [];
  const completes = [];
  core.on("conversation:usage", ({ usage }) => usages.push(usage));
  core.on("message:complete", (data) => completes.push(data));
  const idle = next(core, "state:update", (d) => d.state === "idle");
  core.processUserInput("list them");
  await idle;
  assert.deepEqual(usages, [
    { useTokens: 110, maxTokens: 32000, promptTokens: 100 },
    { useTokens: 135, maxTokens: 32000, promptTokens: 130 },
  ]);
  // A reply of tool calls alone completes too, with its calls.
  assert.deepEqual(completes.map((c) => [c.content, c.hasToolCalls, c.toolCalls]), [
    // SemaCore names every conversation tool `Task`.
    ["", true, [{ name: "Task", args: {} }]],
    ["Listed.", false, []],
  ]);
});

test("session:error says what kind of failure it was, from the engine, not the message's words", async (t) => {
  const { url } = await startMock(t, [
    { kind: "status", status: 400, body: '{"error":{"message":"This model\'s maximum context length is 8192 tokens","code":"context_length_exceeded"}}' },
    // A refusal that mentions a context but is about the key.
    { kind: "status", status: 401, body: '{"error":{"message":"the key is not valid in this context"}}' },
  ]);
  const { core } = await session(t, url);
  const errors = [];
  core.on("session:error", (data) => errors.push(data));
  for (const input of ["too long", "bad key"]) {
    const idle = next(core, "state:update", (d) => d.state === "idle");
    core.processUserInput(input);
    await idle;
  }
  assert.deepEqual(errors.map((e) => [e.type, e.error.code]), [
    ["context_length_exceeded", "context_length_exceeded"],
    ["api_error", "provider"],
  ]);
});

test("a call only a person may allow is offered without \"allow\" (always)", async (t) => {
  const { url } = await startMock(t, [
    toolCall("p1", "write", { path: ".mcp.json", content: "{}\n" }), text("asked"),
  ]);
  const { core } = await session(t, url, { skipFileEditPermission: true });
  const asked = next(core, "tool:permission:request");
  const idle = next(core, "state:update", (d) => d.state === "idle");
  core.processUserInput("plant a server");
  const request = await asked;
  assert.deepEqual(Object.keys(request.options), ["agree", "refuse"]);
  core.respondToToolPermission({ toolName: request.toolName, selected: "refuse" });
  await idle;
});

test("a resume that fails emits session:error with the engine's kind, then a fresh session:ready", async (t) => {
  const { url } = await startMock(t, [text("fresh")]);
  const dir = workspace();
  const corrupt = "0192f0c4-0000-7000-8000-000000000001";
  mkdirSync(join(dir, ".coder/sessions"), { recursive: true });
  writeFileSync(join(dir, ".coder/sessions", `${corrupt}.json`), "{half a file");
  const unknown = "0192f0c4-0000-7000-8000-000000000002";
  freshSemaRoot();
  const core = new SemaCore({ workingDir: dir, logLevel: "none" });
  t.after(() => core.dispose());
  await core.addModel({ provider: "openai", modelName: "mock", baseURL: `${url}/v1`, apiKey: "k", maxTokens: 1024, contextLength: 32000 }, true);
  await core.applyTaskModel({ main: "mock[openai]", quick: "mock[openai]" });
  for (const [session, code] of [[corrupt, "invalid_params"], [unknown, "not_found"]]) {
    const events = [];
    const onError = (data) => events.push(["session:error", data]);
    const onReady = (data) => events.push(["session:ready", data]);
    core.on("session:error", onError).on("session:ready", onReady);
    await core.createSession(session);
    core.off("session:error", onError).off("session:ready", onReady);
    assert.deepEqual(events.map(([name]) => name), ["session:error", "session:ready"], session);
    assert.equal(events[0][1].error.code, code);
    assert.match(events[0][1].error.message, new RegExp(`^cannot resume session ${session}: `));
    assert.equal(events[1][1].historyLoaded, false);
    assert.notEqual(events[1][1].sessionId, session);
  }
  const done = next(core, "message:complete");
  core.processUserInput("hello");
  assert.equal((await done).content, "fresh", "the fresh session works");
});

test("Engine.resume throws with the engine's code and leaves the engine usable", async (t) => {
  const { url } = await startMock(t, [text("fresh")]);
  const dir = workspace();
  const corrupt = "0192f0c4-0000-7000-8000-000000000001";
  mkdirSync(join(dir, ".coder/sessions"), { recursive: true });
  writeFileSync(join(dir, ".coder/sessions", `${corrupt}.json`), "{half a file");
  const engine = Engine.create({ workingDir: dir, model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  t.after(() => engine.dispose());
  const own = engine.sessionId;
  assert.throws(() => engine.resume(corrupt), { code: "invalid_params", message: /is not a session snapshot/ });
  assert.throws(() => engine.resume("0192f0c4-0000-7000-8000-000000000002"), { code: "not_found" });
  assert.equal(engine.sessionId, own);
  const events = engine.events();
  const task = engine.send(engine.rootConversation, "hello");
  for (;;) {
    const { value: event } = await events.next();
    if (event.type === "task_complete" && event.taskId === task) break;
  }
  // The input, the first input's todo reminder and the reply.
  assert.equal(engine.messages(engine.rootConversation).length, 3);
});

test("compact() summarises the main conversation: compact:exec, then the archive holds what it replaced", async (t) => {
  const { url } = await startMock(t, [text("first answer"), text("second answer"), text("They asked twice."), text("third answer")]);
  const { core } = await session(t, url);
  for (const input of ["first question", "second question"]) {
    const idle = next(core, "state:update", (d) => d.state === "idle");
    core.processUserInput(input);
    await idle;
  }
  const seen = [];
  for (const name of ["compact:exec", "conversation:usage"]) core.on(name, (data) => seen.push([name, data]));
  const idle = next(core, "state:update", (d) => d.state === "idle");
  core.compact();
  await idle;
  assert.deepEqual(seen.map(([name]) => name), ["compact:exec", "conversation:usage"]);
  const compacted = seen[0][1];
  assert.equal(compacted.agentId, "main");
  assert.equal(compacted.trigger, "manual");
  assert.equal(compacted.summary, "They asked twice.");
  assert.ok(compacted.tokenCompact < compacted.tokenBefore, JSON.stringify(compacted));
  assert.equal(compacted.compactRate, Math.round((compacted.tokenCompact / compacted.tokenBefore) * 1000) / 1000);
  assert.equal(seen[1][1].usage.useTokens, compacted.tokenCompact);

  const root = core.engine.rootConversation;
  const archive = core.engine.archive(root);
  assert.equal(archive.length, 1);
  assert.equal(archive[0].messages.length, compacted.archivedMessages);
  // The first input's todo reminder went with it.
  const said = archive[0].messages.map((m) => m.content).filter((c) => !c.startsWith("<system-reminder>"));
  assert.deepEqual(said, ["first question", "first answer"]);
  assert.ok(core.engine.messages(root)[0].content.startsWith("<conversation-summary>"));

  const done = next(core, "message:complete", (d) => d.content === "third answer");
  core.processUserInput("third question");
  await done;
});

test("processUserInput runs a built-in command: command:result, no model call; an unknown one is a session:error", async (t) => {
  const { url, requests } = await startMock(t, []);
  const { core } = await session(t, url);
  const said = next(core, "command:result");
  core.processUserInput("/tools");
  const result = await said;
  assert.equal(result.agentId, "main");
  assert.equal(result.command, "/tools");
  assert.ok(result.text.includes("bash"), result.text);
  const failed = next(core, "session:error");
  core.processUserInput("/nosuch");
  const error = await failed;
  assert.equal(error.error.code, "invalid_params");
  assert.match(error.error.message, /unknown command \/nosuch; known commands: \/help/);
  assert.equal((await requests()).length, 0);
});

test("/clear through the engine's command() empties the main conversation: session:cleared, then a fresh context", async (t) => {
  const { url, requests } = await startMock(t, [text("Noted: heron."), text("Which word?")]);
  const { core, ready } = await session(t, url);
  const first = next(core, "state:update", (d) => d.state === "idle");
  core.processUserInput("The word is heron.");
  await first;
  const root = core.engine.rootConversation;
  const held = core.engine.messages(root).length;
  const cleared = next(core, "session:cleared");
  const answer = core.engine.command(root, "/clear");
  assert.equal(answer.text, `context cleared: ${held} messages left it; the system prompt and the tools stay`);
  assert.deepEqual(await cleared, { sessionId: ready.sessionId, agentId: "main" });
  assert.deepEqual(core.engine.messages(root), []);
  assert.ok(core.engine.commands().some((command) => command.name === "clear" && command.source === "builtin"));

  const done = next(core, "message:complete", (d) => d.content === "Which word?");
  core.processUserInput("What was the word?");
  await done;
  const sent = await requests();
  const messages = sent[1].body.messages;
  assert.equal(messages[0].content, sent[0].body.messages[0].content, "the same system prompt");
  assert.equal(messages[1].content, "What was the word?");
  assert.ok(!JSON.stringify(messages).includes("heron"), JSON.stringify(messages));
});
