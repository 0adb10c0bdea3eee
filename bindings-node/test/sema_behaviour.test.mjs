// SemaCore 1.0's behaviour and timing that programs depend on, and its information and
// configuration methods, against the mock model.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { SemaCore } from "coder-agent-engine";
import { freshSemaRoot, mcpServerScript, next, startMock, text, toolCall, workspace } from "./mock.mjs";

const model = (url, extra = {}) => ({
  provider: "openai", modelName: "mock", baseURL: `${url}/v1`, apiKey: "k", maxTokens: 777, contextLength: 32000, ...extra,
});

async function core(t, url, config = {}) {
  freshSemaRoot();
  const dir = workspace();
  const sema = new SemaCore({ workingDir: dir, logLevel: "none", saveSessions: false, ...config });
  t.after(() => sema.dispose());
  await sema.addModel(model(url), true);
  await sema.createSession();
  return { sema, dir };
}

test("processing is reported inside processUserInput, idle inside interruptSession before session:interrupted; queued input is dropped", async (t) => {
  const { url, requests } = await startMock(t, [
    toolCall("s1", "bash", { command: "sleep 30" }),
    text("never"),
  ]);
  const { sema } = await core(t, url, { skipFileEditPermission: true, skipBashExecPermission: true });
  const order = [];
  sema.on("state:update", (d) => order.push(`state:${d.state}`));
  sema.on("session:interrupted", () => order.push("interrupted"));
  const started = next(sema, "tool:execution:start");
  sema.processUserInput("run it");
  assert.deepEqual(order, ["state:processing"], "processing before processUserInput returns");
  sema.processUserInput("queued behind it");
  await started;
  const interrupted = next(sema, "session:interrupted");
  sema.interruptSession();
  assert.deepEqual(order, ["state:processing", "state:idle"], "idle before interruptSession returns");
  await interrupted;
  // The interrupted task's own end and the dropped input change nothing more.
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.deepEqual(order, ["state:processing", "state:idle", "interrupted"]);
  const asked = (await requests()).filter((r) => r.path.endsWith("/chat/completions"));
  assert.equal(asked.length, 1, "the queued input never reached the model");
});

test("models persist in SEMA_ROOT's model.conf: another process finds them; the file is the user's only", async (t) => {
  const { url, requests } = await startMock(t, [text("from the saved model")]);
  const root = freshSemaRoot();
  const first = new SemaCore({ workingDir: workspace(), logLevel: "none" });
  t.after(() => first.dispose());
  await first.addModel(model(url), true);
  await first.addModel(model(url, { modelName: "other" }), true);
  await first.switchModel("other[openai]");
  await first.delModel("other[openai]");
  const file = join(root, "model.conf");
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const saved = JSON.parse(readFileSync(file, "utf8"));
  assert.deepEqual(saved.modelProfiles.map((p) => p.name), ["mock[openai]"]);
  assert.equal(saved.modelPointers.quick, "mock[openai]");
  // Another process: a SemaCore 1.0 program that never calls addModel.
  const program = `
    import { SemaCore } from "coder-agent-engine";
    const core = new SemaCore({ workingDir: ${JSON.stringify(workspace())}, logLevel: "none", saveSessions: false });
    const data = await core.getModelData();
    core.on("message:complete", async (d) => { console.log(JSON.stringify({ data, content: d.content })); await core.dispose(); });
    core.on("session:error", async (e) => { console.log(JSON.stringify({ error: e })); await core.dispose(); });
    core.on("session:ready", () => core.processUserInput("hello"));
    await core.createSession();
  `;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", program], {
    env: { ...process.env, SEMA_ROOT: root }, encoding: "utf8", timeout: 60000,
  });
  assert.equal(run.status, 0, run.stderr);
  assert.notEqual(run.stdout.trim(), "", `the program printed nothing; stderr: ${run.stderr}`);
  const out = JSON.parse(run.stdout.trim().split("\n").at(-1));
  assert.equal(out.data?.modelName, "mock[openai]", run.stdout);
  assert.equal(out.content, "from the saved model");
  // The saved model's maxTokens reached the provider.
  const [request] = (await requests()).filter((r) => r.path.endsWith("/chat/completions"));
  assert.equal(request.body.max_tokens, 777);
});

test("a model file that cannot be used is reported and left alone", (t) => {
  const root = freshSemaRoot();
  writeFileSync(join(root, "model.conf"), "{ not json");
  const warnings = [];
  t.mock.method(console, "warn", (message) => warnings.push(message));
  const sema = new SemaCore({ workingDir: workspace() });
  t.after(() => sema.dispose());
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /model\.conf is not JSON/);
  assert.equal(readFileSync(join(root, "model.conf"), "utf8"), "{ not json");
});

test("a model file that is a FIFO, a device, or too large is refused by name, without waiting", (t) => {
  const warnings = [];
  t.mock.method(console, "warn", (message) => warnings.push(message));
  for (const make of [
    (path) => spawnSync("mkfifo", [path]),
    (path) => symlinkSync("/dev/zero", path),
    (path) => writeFileSync(path, " ".repeat(1024 * 1024 + 1)),
  ]) {
    const root = freshSemaRoot();
    make(join(root, "model.conf"));
    const sema = new SemaCore({ workingDir: workspace() });
    t.after(() => sema.dispose());
  }
  assert.equal(warnings.length, 3, warnings.join("\n"));
  assert.match(warnings[0], /not a regular file/);
  assert.match(warnings[1], /not a regular file/);
  assert.match(warnings[2], /over the limit/);
});

test("stream: false delivers replies whole; thinking: false drops thinking; updateCoreConfByKey switches both live", async (t) => {
  const reply = { kind: "stream", chunks: [{ type: "thinking", text: "Hm." }, { type: "text", text: "Whole " }, { type: "text", text: "reply." }] };
  const { url } = await startMock(t, [reply, { ...reply, delay_ms: 50 }]);
  const { sema } = await core(t, url, { stream: false, thinking: false });
  const chunks = [];
  sema.on("message:text:chunk", (d) => chunks.push(["text", d.delta]));
  sema.on("message:thinking:chunk", (d) => chunks.push(["thinking", d.delta]));
  let done = next(sema, "message:complete");
  sema.processUserInput("one");
  assert.equal((await done).content, "Whole reply.");
  assert.deepEqual(chunks, []);
  await next(sema, "state:update", (d) => d.state === "idle");
  sema.updateCoreConfByKey("stream", true);
  sema.updateCoreConfByKey("thinking", true);
  done = next(sema, "message:complete");
  sema.processUserInput("two");
  await done;
  assert.deepEqual(chunks.map(([kind]) => kind).sort(), ["text", "text", "thinking"]);
  assert.throws(() => sema.updateCoreConfByKey("workingDir", "/"), { code: "invalid_params" });
});

test("systemPrompt and customRules change live; the next request carries them", async (t) => {
  const { url, requests } = await startMock(t, [text("a"), text("b")]);
  const { sema } = await core(t, url);
  let idle = next(sema, "state:update", (d) => d.state === "idle");
  sema.processUserInput("first");
  await idle;
  sema.updateCoreConfig({ systemPrompt: "You are Zed-like.", customRules: "- answer briefly" });
  idle = next(sema, "state:update", (d) => d.state === "idle");
  sema.processUserInput("second");
  await idle;
  const asked = (await requests()).filter((r) => r.path.endsWith("/chat/completions"));
  const [before, after] = asked.map((r) => r.body.messages);
  assert.doesNotMatch(before[0].content, /Zed-like/);
  assert.match(after[0].content, /^You are Zed-like\./);
  assert.ok(after.some((m) => m.role === "user" && m.content === "- answer briefly"), JSON.stringify(after));
});

test("updateUseTools and updateDisabledTools change the tools of the next request; getToolInfos says which are on", async (t) => {
  const { url, requests } = await startMock(t, [text("a"), text("b"), text("c")]);
  const { sema } = await core(t, url);
  const toolsOf = async (index) =>
    (await requests()).filter((r) => r.path.endsWith("/chat/completions"))[index].body.tools.map((tool) => tool.function.name);
  const turn = async (input) => {
    const idle = next(sema, "state:update", (d) => d.state === "idle");
    sema.processUserInput(input);
    await idle;
  };
  await turn("all tools");
  assert.ok((await toolsOf(0)).includes("bash"));
  sema.updateUseTools(["Read", "Grep", "Teleport"]);
  await turn("two tools");
  assert.deepEqual((await toolsOf(1)).sort(), ["grep", "read"]);
  const infos = sema.getToolInfos();
  assert.equal(infos.find((i) => i.name === "Read").status, "enable");
  assert.equal(infos.find((i) => i.name === "Bash").status, "disable");
  assert.ok(infos.every((i) => typeof i.description === "string" && i.description.length > 0));
  sema.updateUseTools(null);
  sema.updateDisabledTools(["RunShell", "Write"]);
  await turn("no shell");
  const third = await toolsOf(2);
  assert.ok(!third.includes("bash") && !third.includes("write") && third.includes("read"), third.join(","));
});

test("testApiConnection and fetchAvailableModels ask the provider and answer in SemaCore's shape", async (t) => {
  const { url } = await startMock(t, [text("YES"), { kind: "status", status: 401, body: '{"error":{"message":"bad key"}}' }]);
  freshSemaRoot();
  const sema = new SemaCore({ workingDir: workspace(), logLevel: "none" });
  t.after(() => sema.dispose());
  const params = { provider: "openai", baseURL: `${url}/v1`, apiKey: "k", modelName: "mock" };
  const ok = await sema.testApiConnection(params);
  assert.equal(ok.success, true, ok.message);
  const bad = await sema.testApiConnection(params);
  assert.equal(bad.success, false);
  assert.match(bad.message, /401.*bad key/s);
  const listed = await sema.fetchAvailableModels({ provider: "openai", baseURL: `${url}/v1`, apiKey: "k" });
  assert.deepEqual(listed, { success: true, models: [{ id: "mock-model", name: "Mock model", ownedBy: "coder-testkit" }] });
  const unreachable = await sema.fetchAvailableModels({ baseURL: "http://127.0.0.1:9/v1", apiKey: "k" });
  assert.equal(unreachable.success, false);
  assert.match(unreachable.message, /could not be listed/);
});

test("skills, agents and custom commands are listed; a custom command fires command:custom:resolved", async (t) => {
  const { url, requests } = await startMock(t, [text("reviewed")]);
  freshSemaRoot();
  const dir = workspace();
  mkdirSync(join(dir, ".coder/commands"), { recursive: true });
  writeFileSync(join(dir, ".coder/commands/review.md"), "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 with care.\n");
  mkdirSync(join(dir, ".coder/skills/notes"), { recursive: true });
  writeFileSync(join(dir, ".coder/skills/notes/SKILL.md"), "---\nname: notes\ndescription: Write release notes.\n---\nSteps.\n");
  const sema = new SemaCore({ workingDir: dir, logLevel: "none", saveSessions: false, trustWorkspace: true });
  t.after(() => sema.dispose());
  // Before any session: read from a short-lived engine.
  assert.deepEqual(await sema.getCustomCommands(), [{
    name: "review", displayName: "/review", description: "Review a file", argumentHint: "<file>",
    filePath: join(dir, ".coder/commands/review.md"), scope: "project", content: "Review $1 with care.\n",
  }]);
  assert.deepEqual(sema.getSkillsInfo(), [{ name: "notes", description: "Write release notes.", locate: "project" }]);
  assert.deepEqual(sema.getAgentsInfo().map((a) => [a.name, a.locate]), [["conversation", "builtin"]]);
  await sema.addModel(model(url), true);
  await sema.createSession();
  const resolved = next(sema, "command:custom:resolved");
  const idle = next(sema, "state:update", (d) => d.state === "idle");
  sema.processUserInput("/review src/main.rs");
  assert.deepEqual(await resolved, {
    commandName: "review", displayName: "/review", description: "Review a file", scope: "project",
    args: "src/main.rs", originalInput: "/review src/main.rs", processedContent: "Review src/main.rs with care.\n",
  });
  await idle;
  const [asked] = (await requests()).filter((r) => r.path.endsWith("/chat/completions"));
  assert.match(JSON.stringify(asked.body.messages), /Review src\/main\.rs with care\./);
});


test("MCP servers are added, restricted, reconnected, switched off and removed while sessions run", async (t) => {
  const { url, requests } = await startMock(t, [text("a"), text("b"), text("c")]);
  const { sema, dir } = await core(t, url);
  writeFileSync(join(dir, "server.js"), mcpServerScript("two", ["alpha", "beta"]));
  const mcpToolsOf = async (index) =>
    (await requests()).filter((r) => r.path.endsWith("/chat/completions"))[index].body.tools
      .map((tool) => tool.function.name).filter((name) => name.startsWith("two__")).sort();
  const turn = async (input) => {
    const idle = next(sema, "state:update", (d) => d.state === "idle");
    sema.processUserInput(input);
    await idle;
  };
  // SemaCore 1.0: resolves once the server is connected.
  const added = await sema.addOrUpdateMCPServer({ name: "two", transport: "stdio", command: "node", args: [join(dir, "server.js")] }, "project");
  assert.equal(added.status, "connected", JSON.stringify(added));
  assert.deepEqual(added.capabilities.tools.map((tool) => tool.name), ["alpha", "beta"]);
  await turn("with both");
  assert.deepEqual(await mcpToolsOf(0), ["two__alpha", "two__beta"]);
  // Only `beta` from now on.
  const restricted = await sema.updateMCPUseTools("two", ["beta"]);
  assert.deepEqual(restricted[0].config.useTools, ["beta"]);
  await turn("with beta");
  assert.deepEqual(await mcpToolsOf(1), ["two__beta"]);
  assert.equal((await sema.connectMCPServer("two")).status, "connected");
  const configs = sema.getMCPServerConfigs();
  assert.deepEqual(configs.get("project").map((info) => [info.config.name, info.status]), [["two", "connected"]]);
  // Switched off: no tools; then removed.
  const disabled = await sema.disableMCPServer("two");
  assert.equal(disabled[0].status, "disconnected");
  await turn("without");
  assert.deepEqual(await mcpToolsOf(2), []);
  assert.equal(await sema.removeMCPServer("two", "project"), true);
  assert.deepEqual(await sema.getMCPServerInfo(), []);
  assert.equal(await sema.removeMCPServer("two", "project"), false);
  await assert.rejects(sema.connectMCPServer("two"), { code: "not_found" });
  await assert.rejects(sema.addMCPServer({ name: "old", transport: "sse", url: "http://127.0.0.1:9/sse" }), { code: "invalid_params" });
});

test("deleteSessionHistory and deleteProjectHistory delete saved sessions, never the pool's; maxSessions bounds the pool", async (t) => {
  const { url } = await startMock(t, [text("a"), text("b")]);
  freshSemaRoot();
  const dir = workspace();
  const sema = new SemaCore({ workingDir: dir, logLevel: "none", maxSessions: 2 });
  t.after(() => sema.dispose());
  await sema.addModel(model(url), true);
  const saved = [];
  for (const input of ["first", "second"]) {
    const { session } = await sema.createSession({});
    const idle = next(session, "state:update", (d) => d.state === "idle");
    session.processUserInput(input);
    await idle;
    saved.push(session.sessionId);
  }
  const third = await sema.createSession({});
  assert.equal(third.ok, false);
  assert.match(third.error, /maxSessions/);
  const sessionsDir = join(dir, ".coder/sessions");
  const onDisk = () => readdirSync(sessionsDir).filter((name) => name.endsWith(".json")).sort();
  // Closed sessions are saved; the first one is deleted by id, the pool's is kept by the project-wide delete.
  await sema.closeSessionAsync(saved[0]);
  assert.ok(onDisk().includes(`${saved[0]}.json`), onDisk().join(","));
  assert.equal(await sema.deleteSessionHistory(saved[0]), true);
  assert.equal(await sema.deleteSessionHistory(saved[0]), false);
  assert.ok(!onDisk().includes(`${saved[0]}.json`));
  assert.equal(await sema.deleteProjectHistory(), 0, "the pool's own session is never deleted");
  await sema.closeSessionAsync(saved[1]);
  const before = onDisk();
  assert.equal(await sema.deleteProjectHistory(), before.length);
  assert.deepEqual(onDisk(), [], "nothing left, and the short-lived engine saved nothing itself");
});

test("arguments of the wrong type are invalid_params errors, never napi's own", async (t) => {
  const { url } = await startMock(t, []);
  const { sema } = await core(t, url);
  const errors = [];
  sema.on("session:error", (e) => errors.push(e));
  sema.processUserInput(42);
  assert.deepEqual(errors.map((e) => [e.type, e.error.code]), [["fatal_error", "invalid_params"]]);
  assert.match(errors[0].error.message, /must be a string, not number/);
  assert.throws(() => sema.updateAgentMode("Nope"), { code: "invalid_params" });
  assert.throws(() => sema.respondToToolPermission({ toolName: 1, selected: "agree" }), { code: "invalid_params" });
  assert.throws(() => sema.updateUseTools("Bash"), { code: "invalid_params" });
  assert.throws(() => sema.updateCoreConfig(null), { code: "invalid_params" });
  await assert.rejects(sema.addOrUpdateMCPServer({ name: "x", transport: "stdio" }), { code: "invalid_params" });
});

test("session:ready reaches a listener attached right after createSession(), and a session's listener attached any time", async (t) => {
  const { url } = await startMock(t, []);
  const { sema } = await core(t, url);
  const heard = [];
  // Attached after the call, in the same tick, as SemaCore's own programs do.
  const created = sema.createSession();
  sema.once("session:ready", (d) => heard.push(d.sessionId));
  const { session } = await created;
  assert.deepEqual(heard, [session.sessionId]);
  // A session replays its session:ready to a listener attached later.
  const late = await new Promise((resolve) => session.once("session:ready", resolve));
  assert.equal(late.sessionId, session.sessionId);
});

test("file:reference has SemaCore's payload: type, name and the content the model was given", async (t) => {
  const { url } = await startMock(t, [text("seen")]);
  const { sema, dir } = await core(t, url);
  writeFileSync(join(dir, "notes.txt"), "alpha\nbeta\n");
  mkdirSync(join(dir, "docs"));
  writeFileSync(join(dir, "docs/a.md"), "# A\n");
  const referenced = next(sema, "file:reference");
  sema.processUserInput("read @notes.txt and @docs/");
  const { references } = await referenced;
  assert.deepEqual(references.map((r) => [r.type, r.name]), [["file", "notes.txt"], ["dir", "docs/"]]);
  assert.match(references[0].content, /1\talpha\n\s+2\tbeta/);
  assert.match(references[1].content, /docs\/a\.md/);
});
