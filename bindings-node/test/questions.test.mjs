// SemaCore's questions over the engine's: the request a program sees and the answer the
// engine gets, with the options the engine sends (taken from a real request).

import assert from "node:assert/strict";
import { test } from "node:test";

import { Engine } from "../dist/cjs/index.js";
import { askQuestionRequest, questionDecision } from "../dist/cjs/questions.js";
import { startMock, toolCall, text, workspace, freshSemaRoot } from "./mock.mjs";

const question = {
  question: "Which runtime?",
  header: "Runtime",
  multiSelect: false,
  choices: [
    { label: "Tokio", description: "async" },
    { label: "Threads", description: "plain" },
  ],
};

/** The engine's request for `question`, and the tool result the model read after `decide`. */
async function asked(t, decide) {
  const mock = await startMock(t, [
    toolCall("q1", "ask_user", {
      questions: [{ question: question.question, header: question.header, options: question.choices }],
    }),
    text("ok"),
  ]);
  const engine = Engine.create({
    workingDir: workspace(),
    model: { provider: "openai", model: "mock", baseUrl: `${mock.url}/v1`, apiKey: "k" },
  });
  t.after(() => engine.dispose());
  const request = new Promise((resolve) => {
    engine.onEvent((event) => {
      if (event.type === "permission_requested") resolve(event);
    });
  });
  const done = new Promise((resolve) => {
    engine.onEvent((event) => {
      if (event.type === "task_complete") resolve();
    });
  });
  engine.send(engine.rootConversation, "go");
  const event = await request;
  engine.respondPermission(event.requestId, decide(event));
  await done;
  const requests = await mock.requests();
  return { event, told: requests.at(-1).body.messages.find((m) => m.role === "tool").content };
}

test("a SemaCore program sees the engine's question as its own request", async (t) => {
  const { event, told } = await asked(t, (event) =>
    questionDecision(event.question, event.options, { "Which runtime?": "Threads" }),
  );
  assert.deepEqual(event.question, question);
  assert.deepEqual(askQuestionRequest("main", event.question), {
    agentId: "main",
    questions: [
      {
        question: "Which runtime?",
        header: "Runtime",
        options: [
          { label: "Tokio", description: "async" },
          { label: "Threads", description: "plain" },
        ],
        multiSelect: false,
      },
    ],
  });
  assert.match(told, /"Which runtime\?" → "Threads"/);
});

test("an answer in the person's own words, or none, reaches the model as such", async (t) => {
  const own = await asked(t, (event) =>
    questionDecision(event.question, event.options, { "Which runtime?": "whatever is smaller" }),
  );
  assert.match(own.told, /in their own words: "whatever is smaller"/);
  const none = await asked(t, (event) => questionDecision(event.question, event.options, {}));
  assert.match(none.told, /no answer \(they leave it to you/);
});

test("a SemaCore program answers the model's questions with respondToAskQuestion", async (t) => {
  const { SemaCore } = await import("coder-agent-engine");
  const { url, requests } = await startMock(t, [
    toolCall("q1", "ask_user", {
      questions: [
        { question: "Which runtime?", header: "Runtime", options: question.choices },
        { question: "Which name?", header: "Name", options: [
          { label: "serve", description: "" }, { label: "srv", description: "" }] },
      ],
    }),
    text("ok"),
  ]);
  freshSemaRoot();
  const core = new SemaCore({ workingDir: workspace(), logLevel: "none" });
  t.after(() => core.dispose());
  await core.addModel({ provider: "openai", modelName: "mock", baseURL: `${url}/v1`, apiKey: "k", maxTokens: 1024, contextLength: 32000 }, true);
  await core.applyTaskModel({ main: "mock[openai]", quick: "mock[openai]" });
  const asked = [];
  const permissions = [];
  core.on("tool:permission:request", (data) => permissions.push(data));
  core.on("ask:question:request", (request) => {
    asked.push(request);
    core.respondToAskQuestion({
      agentId: request.agentId,
      answers: { "Which runtime?": "Tokio", "Which name?": "call it coder-serve" },
    });
  });
  const idle = new Promise((resolve) => core.on("state:update", (d) => d.state === "idle" && resolve()));
  const ready = new Promise((resolve) => core.once("session:ready", resolve));
  await core.createSession();
  await ready;
  core.processUserInput("start");
  await idle;
  // One request a question, in order; never a permission request.
  assert.deepEqual(asked.map((r) => [r.agentId, r.questions.map((q) => q.question)]), [
    ["main", ["Which runtime?"]],
    ["main", ["Which name?"]],
  ]);
  assert.deepEqual(permissions, []);
  const told = (await requests()).at(-1).body.messages.find((m) => m.role === "tool").content;
  assert.match(told, /"Which runtime\?" → "Tokio"/);
  assert.match(told, /"Which name\?" → in their own words: "call it coder-serve"/);
  assert.throws(() => core.respondToAskQuestion({ agentId: "main" }), { code: "invalid_params" });
});
