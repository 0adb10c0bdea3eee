// Leaving plan mode: the SemaCore plan events (start editing, clear and start) and the plain
// Engine's respondToPlanExit (keep planning), against the mock model, checking what the model
// was sent after the answer.

import { test } from "node:test";
import assert from "node:assert/strict";

import { Engine, SemaCore } from "coder-agent-engine";
import { next, startMock, text, toolCall, workspace, freshSemaRoot } from "./mock.mjs";

const PLAN = "1. Add `greet` to src/lib.rs.\n2. Test it.";
const exitPlan = () => toolCall("p1", "exit_plan_mode", { plan: PLAN });
const toolNames = (body) => (body.tools ?? []).map((tool) => tool.function.name);

async function planSession(t, url) {
  freshSemaRoot();
  const core = new SemaCore({ workingDir: workspace(), logLevel: "none", agentMode: "Plan" });
  t.after(() => core.dispose());
  const model = { provider: "openai", modelName: "mock", baseURL: `${url}/v1`, apiKey: "k", maxTokens: 1024, contextLength: 32000 };
  await core.addModel(model, true);
  await core.createSession();
  return core;
}

/** Runs `input` in `core`, answering its plan with `selected`; returns the events seen. */
async function answerPlan(core, selected) {
  const seen = [];
  for (const name of ["plan:exit:request", "plan:exit:response", "plan:implement", "tool:permission:request"]) {
    core.on(name, (data) => seen.push([name, data]));
  }
  core.on("plan:exit:request", () => core.respondToPlanExit({ selected }));
  const idle = next(core, "state:update", (d) => d.state === "idle");
  core.processUserInput("plan a greeting");
  await idle;
  return seen;
}

const request = {
  agentId: "main",
  planFilePath: "",
  planContent: PLAN,
  options: { startEditing: "Start editing", clearContextAndStart: "Clear context and start", keepPlanning: "Keep planning" },
};

test("startEditing through SemaCore leaves plan mode and keeps the history", async (t) => {
  const { url, requests } = await startMock(t, [exitPlan(), text("on it")]);
  const core = await planSession(t, url);
  assert.equal(core.agentMode, "Plan");
  const seen = await answerPlan(core, "startEditing");
  assert.deepEqual(seen, [
    ["plan:exit:request", request],
    ["plan:exit:response", { agentId: "main", selected: "startEditing" }],
  ]);
  assert.equal(core.agentMode, "Agent");
  const bodies = await requests();
  assert.ok(toolNames(bodies[0].body).includes("exit_plan_mode"));
  const after = bodies[1].body;
  assert.ok(toolNames(after).includes("todo_write"));
  assert.ok(!toolNames(after).includes("exit_plan_mode"));
  assert.equal(after.messages[1].content, "plan a greeting");
  assert.match(after.messages.at(-1).content, /^The user approved the plan\./);
});

test("clearContextAndStart through SemaCore sends only the plan and announces plan:implement", async (t) => {
  const { url, requests } = await startMock(t, [exitPlan(), text("on it")]);
  const core = await planSession(t, url);
  const seen = await answerPlan(core, "clearContextAndStart");
  assert.deepEqual(seen, [
    ["plan:exit:request", request],
    ["plan:exit:response", { agentId: "main", selected: "clearContextAndStart" }],
    ["plan:implement", { planFilePath: "", planContent: PLAN }],
  ]);
  assert.equal(core.agentMode, "Agent");
  const after = (await requests())[1].body;
  assert.equal(after.messages.length, 2);
  assert.match(after.messages[1].content, /^The user approved this plan/);
  assert.ok(after.messages[1].content.includes(PLAN));
  assert.ok(toolNames(after).includes("todo_write"));
});

test("keep planning through Engine.respondToPlanExit gives the model the feedback", async (t) => {
  const { url, requests } = await startMock(t, [exitPlan(), text("revising")]);
  const engine = Engine.create({
    workingDir: workspace(),
    model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" },
    saveSessions: false,
  });
  t.after(() => engine.dispose());
  const events = [];
  engine.onEvent((event) => events.push(event));
  // setMode reports the change, typed as `mode_changed` (outside any task).
  const changed = new Promise((resolve) => engine.onEvent((e) => e.type === "mode_changed" && resolve(e)));
  engine.setMode(engine.rootConversation, "plan");
  const event = await changed;
  assert.deepEqual([event.mode, event.previous, event.reason], ["plan", "default", "set_mode"]);
  engine.onEvent((event) => {
    if (event.type === "permission_requested") {
      assert.deepEqual(
        event.options.map((option) => option.optionId),
        ["start_editing", "clear_context_and_start", "keep_planning", "refuse"],
      );
      assert.throws(() => engine.respondToPlanExit(event.requestId, { selected: "maybe" }), {
        code: "invalid_params",
      });
      engine.respondToPlanExit(event.requestId, { selected: "keep_planning", feedback: "test the edge cases too" });
    }
  });
  const task = engine.send(engine.rootConversation, "plan a greeting");
  await new Promise((resolve) => engine.onEvent((e) => e.taskId === task && e.type === "task_complete" && resolve()));
  // Keeping on planning changes no mode.
  assert.deepEqual(events.filter((e) => e.type === "mode_changed").length, 1);
  const after = (await requests())[1].body;
  assert.match(after.messages.at(-1).content, /The user's feedback: test the edge cases too/);
  assert.ok(toolNames(after).includes("exit_plan_mode"));
});
