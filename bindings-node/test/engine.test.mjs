// The low-level API: many conversations in one session, raw events as an async iterable,
// and dispose with a task running (in a child process, which must exit cleanly).

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createServer } from "node:net";
import { createRequire } from "node:module";

import { Engine } from "coder-agent-engine";
import { startMock, text, toolCall, workspace } from "./mock.mjs";

test("many conversations through the low-level API, events in seq order", async (t) => {
  const count = 40;
  const { url } = await startMock(t, Array.from({ length: count }, (_, i) => text(`answer ${i}`)));
  const engine = Engine.create({ workingDir: workspace(), model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  t.after(() => engine.dispose());
  const events = engine.events();
  const ids = Array.from({ length: count }, () => engine.createConversation({}));
  const tasks = new Set(ids.map((id, i) => engine.send(id, `question ${i}`)));
  let seq = -1;
  for await (const event of events) {
    assert.equal(event.seq, seq + 1, "no gap, no reordering");
    seq = event.seq;
    if (event.type === "task_complete") tasks.delete(event.taskId);
    if (tasks.size === 0) break;
  }
  const listed = engine.list();
  assert.equal(listed.length, count, "the first conversation created is the root");
  assert.equal(ids[0], engine.rootConversation);
  assert.equal(listed.filter((c) => c.isRoot).length, 1);
  for (const [i, id] of ids.entries()) {
    // Messages only: the todo reminder after the first input is in the request, not here.
    assert.deepEqual(engine.history(id), [
      { role: "user", text: `question ${i}`, attachments: [] },
      { role: "assistant", text: `answer ${i}`, attachments: [] },
    ]);
  }
  assert.deepEqual(engine.destroy(ids[1]), { ok: true });
  assert.equal(engine.destroy(engine.rootConversation).ok, false);
  assert.throws(() => engine.send("not-an-id", "x"), { code: "invalid_params", message: /not a conversation id/ });
  assert.throws(() => engine.send(ids[1], "x"), { code: "not_found", message: /no conversation with id/ });
  assert.throws(() => Engine.create({ workingDir: workspace(), colour: "blue" }), /unknown field/);
});

test("a listener that falls behind gets consecutive deltas merged: every byte of text, in order, seq increasing", async (t) => {
  const count = 2000;
  const pieces = Array.from({ length: count }, (_, i) => `${i} `);
  const { url } = await startMock(t, [{ kind: "stream", chunks: pieces.map((text) => ({ type: "text", text })) }]);
  const dir = workspace();
  const engine = Engine.create({ workingDir: dir, model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" }, saveSessions: false });
  t.after(async () => {
    await engine.dispose();
    rmSync(dir, { recursive: true, force: true });
  });
  const seen = [];
  let stalled = false;
  const finished = new Promise((resolve) => {
    engine.onEvent((event) => {
      seen.push(event);
      if (event.type === "agent_message_delta" && !stalled) {
        // JavaScript falls behind: this listener holds the thread until the engine has
        // streamed the whole reply and ended the task (bounded, in case it never does).
        stalled = true;
        const deadline = Date.now() + 30_000;
        while (engine.runningTask() !== null && Date.now() < deadline);
      }
      if (event.type === "task_complete") resolve();
    });
  });
  engine.send(engine.rootConversation, "count");
  await finished;
  const deltas = seen.filter((event) => event.type === "agent_message_delta");
  assert.equal(deltas.map((event) => event.delta).join(""), pieces.join(""), "no text lost or reordered");
  assert.ok(deltas.length < count / 2, `${deltas.length} delta events for ${count} streamed: merged while the listener was behind`);
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i].seq > seen[i - 1].seq, "seq strictly increasing");
  assert.equal(seen.find((event) => event.type === "agent_message").message, pieces.join(""));
});

test("dispose with a task running interrupts it and the process exits cleanly", async (t) => {
  const { url } = await startMock(t, [
    { kind: "stream", chunks: Array.from({ length: 500 }, () => ({ type: "text", text: "slow " })), delay_ms: 20 },
  ]);
  const program = `
    import { Engine } from "coder-agent-engine";
    const engine = Engine.create({ workingDir: ${JSON.stringify(workspace())},
      model: { provider: "openai", model: "mock", baseUrl: ${JSON.stringify(`${url}/v1`)}, apiKey: "k" } });
    const seen = [];
    engine.onEvent((event) => {
      seen.push(event.type);
      if (event.type === "agent_message_delta" && seen.filter((s) => s === event.type).length === 3) {
        engine.dispose().then(() => console.log(JSON.stringify(seen)));
      }
    });
    engine.send(engine.rootConversation, "talk");
  `;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", program], {
    cwd: import.meta.dirname, encoding: "utf8", timeout: 20000,
  });
  assert.equal(run.status, 0, run.stderr);
  const seen = JSON.parse(run.stdout);
  assert.ok(seen.includes("turn_aborted"), "the task's end arrived before dispose resolved");
  assert.ok(!seen.includes("task_complete"), seen.join());
});

test("input dropped unrun (its conversation destroyed) ends with task_dropped, and the process still exits", async (t) => {
  const { url } = await startMock(t, [
    { kind: "stream", chunks: Array.from({ length: 5 }, () => ({ type: "text", text: "slow " })), delay_ms: 50 },
  ]);
  // No dispose: the engine lets go of the event loop once every task it was given has ended.
  const program = `
    import { Engine } from "coder-agent-engine";
    const engine = Engine.create({ workingDir: ${JSON.stringify(workspace())},
      model: { provider: "openai", model: "mock", baseUrl: ${JSON.stringify(`${url}/v1`)}, apiKey: "k" } });
    const ends = [];
    engine.onEvent((event) => {
      if (["task_complete", "turn_aborted", "task_dropped"].includes(event.type)) ends.push([event.type, event.taskId]);
      if (event.type === "state_changed" && event.state === "idle") console.log(JSON.stringify({ ends, queued }));
    });
    engine.send(engine.rootConversation, "talk");
    const other = engine.createConversation({});
    const queued = engine.send(other, "never runs");
    engine.destroy(other);
  `;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", program], {
    cwd: import.meta.dirname, encoding: "utf8", timeout: 20000,
  });
  assert.equal(run.status, 0, `the process did not exit by itself: ${run.stderr}`);
  const { ends, queued } = JSON.parse(run.stdout);
  assert.deepEqual(ends.find(([, task]) => task === queued), ["task_dropped", queued]);
  assert.equal(ends.filter(([type]) => type === "task_complete").length, 1);
});

test("import and require load one copy of the SDK", () => {
  const required = createRequire(import.meta.url)("coder-agent-engine");
  assert.equal(required.Engine, Engine);
  assert.equal(required.SemaCore, required.CoderEngine);
  assert.equal(typeof required.Engine.checkModel, "function");
});

test("a listener that throws does not stop the others; its error surfaces as uncaught", async (t) => {
  const { url } = await startMock(t, [text("still streaming")]);
  const program = `
    import { Engine } from "coder-agent-engine";
    const engine = Engine.create({ workingDir: ${JSON.stringify(workspace())},
      model: { provider: "openai", model: "mock", baseUrl: ${JSON.stringify(`${url}/v1`)}, apiKey: "k" } });
    const uncaught = [];
    process.on("uncaughtException", (err) => uncaught.push(err.message));
    engine.onEvent((event) => {
      if (event.type === "agent_message_delta") throw new Error("listener bug");
    });
    const seen = [];
    engine.onEvent((event) => {
      seen.push(event.type);
      if (event.type === "task_complete") {
        engine.dispose().then(() => console.log(JSON.stringify({ seen, uncaught })));
      }
    });
    engine.send(engine.rootConversation, "go");
  `;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", program], {
    cwd: import.meta.dirname, encoding: "utf8", timeout: 20000,
  });
  assert.equal(run.status, 0, run.stderr);
  const { seen, uncaught } = JSON.parse(run.stdout);
  const deltas = seen.filter((type) => type === "agent_message_delta").length;
  assert.ok(deltas > 0 && seen.includes("task_complete"), seen.join());
  assert.equal(uncaught.length, deltas);
  assert.ok(uncaught.every((message) => message === "listener bug"));
});

test("after dispose, calls that change the session throw and reads still answer", async (t) => {
  const { url } = await startMock(t, [text("before")]);
  const engine = Engine.create({ workingDir: workspace(), model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  const root = engine.rootConversation;
  const done = new Promise((resolve) => engine.onEvent((e) => e.type === "task_complete" && resolve()));
  engine.send(root, "hi");
  await done;
  await engine.dispose();
  assert.throws(() => engine.send(root, "again"), /disposed/);
  assert.throws(() => engine.createConversation({}), /disposed/);
  assert.equal(engine.history(root).at(-1).text, "before");
  assert.equal(engine.rootConversation, root);
});

// Engines share the process's engine threads; what each one starts (its workspace's first
// walk, blocking work, the watcher while any engine watches) ends once it is collected. The
// runtime keeps an idle blocking thread for 10 s, so the wait is that long at most.
test("an engine dropped without dispose is collected and the threads it started end", () => {
  const program = `
    import { readdirSync } from "node:fs";
    import { createRequire } from "node:module";
    import { Engine } from "coder-agent-engine";
    const addon = createRequire(${JSON.stringify(import.meta.url)})("../native/index.js");
    const threads = () => readdirSync("/proc/self/task").length;
    const create = () => {
      for (let i = 0; i < 4; i++) {
        Engine.create({ workingDir: ${JSON.stringify(workspace())}, saveSessions: false,
          model: { provider: "openai", model: "mock", baseUrl: "http://127.0.0.1:9/v1", apiKey: "k" } });
      }
    };
    create(); // warm up: the addon and the runtime threads that stay, then let these go
    for (let i = 0; i < 20; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 20)); }
    const before = threads();
    const idleTasks = addon.runtimeTasks();
    create();
    const tasks = addon.runtimeTasks();
    let after = threads();
    let tasksAfter = tasks;
    for (let i = 0; i < 750 && (after > before || tasksAfter > idleTasks); i++) {
      globalThis.gc();
      await new Promise((r) => setTimeout(r, 20));
      after = threads();
      tasksAfter = addon.runtimeTasks();
    }
    console.log(JSON.stringify({ before, after, idleTasks, tasks, tasksAfter }));
  `;
  const run = spawnSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", program], {
    cwd: import.meta.dirname, encoding: "utf8", timeout: 40000,
  });
  assert.equal(run.status, 0, run.stderr);
  const { before, after, idleTasks, tasks, tasksAfter } = JSON.parse(run.stdout);
  assert.ok(tasks > idleTasks, `the engines run tasks: ${idleTasks} -> ${tasks}`);
  assert.ok(tasksAfter <= idleTasks, `the engines' tasks ended: ${tasks} -> ${tasksAfter}`);
  assert.ok(after <= before, `the threads they started ended: ${before} -> ${after}`);
});

test("a malformed permission decision denies the request and throws", async (t) => {
  const write = (id) => ({ kind: "stream", chunks: [{ type: "tool_call", id, name: "write",
    arguments: JSON.stringify({ path: "made.txt", content: "x\n" }) }] });
  const malformed = [
    [{ decision: "allow_once", error: { code: 1, message: "m" } }, /unexpected field `error`/],
    [{ decision: "allow_forever" }, /unknown decision `allow_forever`/],
    ["allow_once", /not an object/],
    [{}, /no `decision`/],
  ];
  const { url } = await startMock(t, malformed.flatMap((_, i) => [write(`w${i}`), text(`ok ${i}`)]));
  const dir = workspace();
  const engine = Engine.create({ workingDir: dir, model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  t.after(() => engine.dispose());
  const events = engine.events();
  const root = engine.rootConversation;
  for (const [decision, problem] of malformed) {
    const task = engine.send(root, "write it");
    // `next()` by hand: leaving a `for await` would close the stream.
    for (;;) {
      const { value: event } = await events.next();
      if (event.type === "permission_requested") {
        assert.throws(() => engine.respondPermission(event.requestId, decision), problem);
      }
      if (event.type === "task_complete" && event.taskId === task) break;
    }
  }
  assert.equal(existsSync(join(dir, "made.txt")), false);
  const results = engine.messages(root).filter((m) => m.role === "tool").map((m) => m.content);
  assert.equal(results.length, malformed.length);
  for (const [i, [, problem]] of malformed.entries()) assert.match(results[i], problem);
});

test("interruptSession stops the conversation a handoff moved the work to and closes the pending call", async (t) => {
  const { url, requests } = await startMock(t, [
    toolCall("c1", "conv_create", { user_instruction: "Wait a while." }),
    toolCall("b1", "bash", { command: "sleep 30" }),
    text("ready"),
  ]);
  const engine = Engine.create({ workingDir: workspace(), mode: "yolo", model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  t.after(() => engine.dispose());
  const events = engine.events();
  const root = engine.rootConversation;
  engine.send(root, "delegate");
  const aborted = [];
  let started = 0;
  for (;;) {
    const { value: event } = await events.next();
    if (event.type === "tool_call_started" && ++started === 2) {
      // The root waits; the other conversation's command runs.
      assert.equal(engine.interruptSession(), true);
    }
    if (event.type === "turn_aborted") aborted.push([event.conversationId === root, event.reason]);
    if (event.type === "state_changed" && event.state === "idle") break;
  }
  assert.deepEqual(aborted, [[true, "replaced"], [false, "interrupted"]]);
  assert.equal((await requests()).length, 2, "the root's continuation was dropped");
  const closing = engine.messages(root).find((m) => m.tool_call_id === "c1");
  assert.match(closing.content, /interrupted by the user/);
  assert.equal(engine.interruptSession(), false, "nothing runs any more");
});

test("setMode cannot loosen a conversation past the session's mode", async (t) => {
  const { url } = await startMock(t, []);
  const engine = Engine.create({ workingDir: workspace(), mode: "default", model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  t.after(() => engine.dispose());
  const events = engine.events();
  const root = engine.rootConversation;
  engine.setMode(root, "yolo");
  const { value: warning } = await events.next();
  assert.equal(warning.type, "warning");
  assert.match(warning.message, /mode yolo is looser than the session's default; the conversation uses default/);
  engine.setMode(root, "plan");
});

test("setContext changes a conversation's instructions for its next task and refuses a bad allowlist whole", async (t) => {
  const { url, requests } = await startMock(t, [text("first"), text("second")]);
  const engine = Engine.create({ workingDir: workspace(), model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  t.after(() => engine.dispose());
  const events = engine.events();
  const until = async (type) => {
    for (;;) {
      const { value } = await events.next();
      if (value.type === type) return value;
    }
  };
  const root = engine.rootConversation;
  engine.send(root, "one");
  await until("task_complete");
  engine.setContext(root, { baseInstructions: "You answer in haiku.", userInstructions: "Be brief." });
  // Nothing of a refused change is taken, the base instructions neither.
  assert.throws(
    () => engine.setContext(root, { baseInstructions: null, mcpAllowlist: ["nosuch__tool"] }),
    { code: "invalid_params", message: "mcp_allowlist entry `nosuch__tool` names an unknown MCP server: this session has none" },
  );
  assert.throws(() => engine.setContext(root, { mcpAllowlist: ["a/b/c"] }), { code: "invalid_params", message: /not a fully-qualified MCP tool name/ });
  engine.send(root, "two");
  await until("task_complete");
  const [before, after] = await requests();
  assert.notEqual(before.body.messages[0].content.split("\n")[0], "You answer in haiku.");
  assert.ok(after.body.messages[0].content.startsWith("You answer in haiku."), after.body.messages[0].content);
  // The history keeps its order: the user instructions come after it, before the input.
  const said = after.body.messages
    .filter((m) => m.role !== "system" && !m.content.startsWith("<system-reminder>"))
    .map((m) => m.content);
  assert.deepEqual(said.slice(-3), ["first", "Be brief.", "two"]);
  assert.throws(() => engine.setContext("nope", {}), { code: "invalid_params" });
});

test("createConversation checks its mcpAllowlist when given, before any conversation exists", async (t) => {
  const { url } = await startMock(t, []);
  const engine = Engine.create({ workingDir: workspace(), model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  t.after(() => engine.dispose());
  assert.throws(
    () => engine.createConversation({ mcpAllowlist: ["nosuch__tool"] }),
    { code: "invalid_params", message: "mcp_allowlist entry `nosuch__tool` names an unknown MCP server: this session has none" },
  );
  assert.throws(() => engine.createConversation({ mcpAllowlist: ["a/b/c"] }), { code: "invalid_params", message: /not a fully-qualified MCP tool name/ });
  assert.deepEqual(engine.list().map((conversation) => conversation.id), [engine.rootConversation], "nothing was opened");
  // An allowlist that names nothing is valid: the conversation sees no MCP tool.
  const seesNone = engine.createConversation({ mcpAllowlist: [] });
  assert.ok(engine.list().some((conversation) => conversation.id === seesNone));
});

test("command() switches modes under the same ceiling as setMode", async (t) => {
  const { url } = await startMock(t, []);
  const engine = Engine.create({ workingDir: workspace(), mode: "auto-edit", model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  t.after(() => engine.dispose());
  const events = engine.events();
  const root = engine.rootConversation;
  assert.deepEqual(engine.command(root, "/yolo"), { text: "mode: auto-edit" });
  const { value: warning } = await events.next();
  assert.equal(warning.type, "warning");
  assert.match(warning.message, /mode yolo is looser than the session's auto-edit; the conversation uses auto-edit/);
  assert.equal(engine.command(root, "/mode plan").text, "mode: plan");
  assert.equal(engine.command(root, "/auto-edit").text, "mode: auto-edit");
  assert.equal(engine.command(root, "/mode").text, "mode: auto-edit");
});

test("a permission request open at dispose is denied and the saved session is valid", async (t) => {
  const { url } = await startMock(t, [toolCall("c1", "write", { path: "made.txt", content: "x\n" })]);
  const dir = workspace();
  const engine = Engine.create({ workingDir: dir, model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  const events = engine.events();
  engine.send(engine.rootConversation, "write it");
  for (;;) {
    const { value: event } = await events.next();
    // Asked, and never answered: the application disposes the engine instead.
    if (event.type === "permission_requested") break;
  }
  await engine.dispose();
  const saved = JSON.parse(readFileSync(join(dir, ".coder/sessions", `${engine.sessionId}.json`), "utf8"));
  const result = saved.messages.find((m) => m.tool_call_id === "c1");
  assert.ok(result, "the call has a result");
  assert.match(result.content, /^The session ended before anyone answered this permission request/);
  assert.equal(existsSync(join(dir, "made.txt")), false);
});

test("destroy answers the engine's refusals as { ok: false, reason } and throws only for a malformed id", async (t) => {
  const { url } = await startMock(t, []);
  const engine = Engine.create({ workingDir: workspace(), model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  t.after(() => engine.dispose());
  const root = engine.createConversation({});
  assert.equal(root, engine.rootConversation, "the first create shapes the root");
  const other = engine.createConversation({});
  assert.deepEqual(engine.destroy(other), { ok: true });
  assert.deepEqual(engine.destroy(other), { ok: false, reason: `no conversation with id ${other}` });
  assert.deepEqual(engine.destroy(root), { ok: false, reason: "the root conversation cannot be destroyed" });
  assert.throws(() => engine.destroy("nope"), { code: "invalid_params" });
});

test("input of whitespace only is refused with the engine's code", async (t) => {
  const { url } = await startMock(t, []);
  const engine = Engine.create({ workingDir: workspace(), model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  t.after(() => engine.dispose());
  const empty = { code: "invalid_params", message: "the input is empty: give some text (not only whitespace), an image, or both" };
  assert.throws(() => engine.send(engine.rootConversation, " \n\t "), empty);
  assert.throws(() => engine.send(engine.rootConversation, []), empty);
  assert.throws(() => engine.send(engine.rootConversation, [{ type: "text", text: "  " }]), empty);
});

test("an MCP server's timeout that is no duration is refused by name, not taken", () => {
  for (const [key, value] of [["toolTimeoutSec", -3], ["startupTimeoutSec", 1e300]]) {
    assert.throws(
      () => Engine.create({ workingDir: workspace(), mcpServers: { t: { command: "node", [key]: value } } }),
      (err) => err.code === "invalid_params" && new RegExp(`${key} \\(\\w+\\) must be a number of seconds from 0 to 86400`).test(err.message),
    );
  }
});

test("checkModel rejects with the engine's code: invalid_params for settings that cannot work, provider for no answer", async () => {
  await assert.rejects(
    Engine.checkModel({ provider: "openai", model: "mock", baseUrl: "ftp://127.0.0.1/v1", apiKey: "k" }),
    (err) => err instanceof Error && err.code === "invalid_params" && /base URL|baseUrl|http/i.test(err.message),
  );
  // A port nothing listens on: bound, then closed again.
  const port = await new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
  await assert.rejects(
    Engine.checkModel({ provider: "openai", model: "mock", baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: "k" }),
    (err) => err instanceof Error && err.code === "provider" && /did not answer/.test(err.message),
  );
});

test("the SDK's own throws carry an engine code too", async (t) => {
  const { url } = await startMock(t, []);
  const engine = Engine.create({ workingDir: workspace(), model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  await engine.dispose();
  assert.throws(() => engine.send(engine.rootConversation, "again"), { code: "invalid_params", message: /disposed/ });
});

test("rules lists the instruction files the model is given, in order", async (t) => {
  const { url, requests } = await startMock(t, [text("ok")]);
  const dir = workspace();
  writeFileSync(join(dir, "AGENTS.md"), "Run the tests with make check.\n");
  mkdirSync(join(dir, ".coder/rules"), { recursive: true });
  writeFileSync(join(dir, ".coder/rules/style.md"), "Two-space indents.\n");
  const engine = Engine.create({ workingDir: dir, model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  t.after(() => engine.dispose());
  const rules = engine.rules().filter((rule) => rule.path.startsWith(dir) || !rule.path.startsWith("/"));
  assert.deepEqual(rules.map((rule) => [rule.path.split("/").slice(-2).join("/"), rule.truncated]), [
    ["rules/style.md", false],
    [dir.split("/").at(-1) + "/AGENTS.md", false],
  ]);
  const events = engine.events();
  const task = engine.send(engine.rootConversation, "hello");
  for (;;) {
    const { value: event } = await events.next();
    if (event.type === "task_complete" && event.taskId === task) break;
  }
  const [request] = await requests();
  const system = request.body.messages[0].content;
  assert.ok(system.indexOf("Two-space indents.") < system.indexOf("Run the tests with make check."), system);
});
