// The workspace and the model through the SDK: `workingDir` is the workspace as given (the
// core's one rule for a folder a door names), and a provider is chosen by its name.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Engine, SemaCore } from "coder-agent-engine";
import { next, startMock, text, workspace, freshSemaRoot } from "./mock.mjs";

// The person's own configuration lives here, not in the real home.
const home = mkdtempSync(join(tmpdir(), "coder-home-"));
process.env.CODER_HOME = home;
process.once("exit", () => rmSync(home, { recursive: true, force: true }));

/** Sends `prompt` to the root conversation and resolves when the task completes. */
function run(engine, prompt) {
  const done = new Promise((resolve) => {
    engine.onEvent((event) => {
      if (event.type === "task_complete") resolve();
    });
  });
  engine.send(engine.rootConversation, prompt);
  return done;
}

test("a workingDir inside a repository is the workspace as given", async (t) => {
  const { url, requests } = await startMock(t, [text("hi")]);
  const repo = realpathSync(workspace());
  mkdirSync(join(repo, ".git"));
  const app = join(repo, "packages", "app");
  mkdirSync(app, { recursive: true });
  const engine = Engine.create({ workingDir: app, model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" } });
  await run(engine, "hi");
  await engine.dispose();
  assert.ok(existsSync(join(app, ".coder", "sessions")), "the session is saved in workingDir");
  assert.ok(!existsSync(join(repo, ".coder")), "nothing is written at the repository's root");
  const [request] = await requests();
  const system = request.body.messages[0].content;
  assert.ok(system.includes(app), system);
  assert.ok(!system.includes("started coder in"), system);
});

test("a workingDir that does not exist is refused by name", () => {
  const missing = join(realpathSync(workspace()), "no", "such", "folder");
  assert.throws(
    () => Engine.create({ workingDir: missing, model: { provider: "openai", model: "mock", apiKey: "k" } }),
    { code: "invalid_params", message: `cannot open the folder ${missing}: No such file or directory (os error 2)` },
  );
});

test("a provider named deepseek is an OpenAI-compatible service at its base URL, or an Anthropic-compatible one at /anthropic", async (t) => {
  const { url, requests } = await startMock(t, [text("from chat completions"), text("from messages")]);
  freshSemaRoot();
  const core = new SemaCore({ workingDir: workspace(), logLevel: "none" });
  t.after(() => core.dispose());
  const model = { provider: "deepseek", modelName: "deepseek-chat", baseURL: `${url}/v1`, apiKey: "sk-ds", maxTokens: 1024, contextLength: 32000 };
  await core.addModel(model, true); // no connection test: the script holds only the replies
  await core.addModel({ ...model, modelName: "deepseek-reasoner", baseURL: `${url}/anthropic` }, true);
  await core.applyTaskModel({ main: "deepseek-chat[deepseek]", quick: "deepseek-chat[deepseek]" });
  const ready = next(core, "session:ready");
  await core.createSession();
  await ready;
  const replies = [];
  core.on("message:complete", ({ content }) => replies.push(content));
  let idle = next(core, "state:update", (d) => d.state === "idle");
  core.processUserInput("hi");
  await idle;
  await core.switchModel("deepseek-reasoner[deepseek]");
  idle = next(core, "state:update", (d) => d.state === "idle");
  core.processUserInput("again");
  await idle;
  assert.deepEqual(replies, ["from chat completions", "from messages"]);
  const [chat, messages] = await requests();
  assert.equal(chat.path, "/v1/chat/completions");
  assert.equal(chat.body.model, "deepseek-chat");
  assert.equal(chat.headers.authorization, "Bearer sk-ds");
  assert.equal(messages.path, "/anthropic/v1/messages");
  assert.equal(messages.body.model, "deepseek-reasoner");
  assert.equal(messages.headers["x-api-key"], "sk-ds");
});

test("a provider other than openai and anthropic needs its base URL", async () => {
  const engine = Engine.create({ workingDir: workspace(), model: { provider: "openrouter", model: "m", baseUrl: "http://127.0.0.1:9/api/v1" } });
  await engine.dispose();
  assert.throws(
    () => Engine.create({ workingDir: workspace(), model: { provider: "deepseek", model: "deepseek-chat", apiKey: "k" } }),
    { code: "invalid_params", message: /^the provider "deepseek" has no default endpoint: give its base URL \(model\.baseUrl/ },
  );
});
