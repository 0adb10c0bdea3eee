// Rules that last through the SDK: "always allow" is recorded for the project in the
// person's own state, applies to the next engine on the same folder, is listed by
// `permissionRules()` and taken away by `removePermissionRule()`.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Engine } from "coder-agent-engine";
import { startMock, text, toolCall, workspace } from "./mock.mjs";

const home = mkdtempSync(join(tmpdir(), "coder-home-"));
process.env.CODER_HOME = home;
process.once("exit", () => rmSync(home, { recursive: true, force: true }));

/** One task in `dir` whose model runs `touch one.txt`; answers each request with `optionId`. */
async function touchOne(t, dir, optionId) {
  const { url } = await startMock(t, [toolCall("c1", "bash", { command: "touch one.txt" }), text("done")]);
  const engine = Engine.create({
    workingDir: dir,
    model: { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "k" },
    preset: "balanced",
    saveSessions: false,
  });
  const asked = [];
  const done = new Promise((resolve) => {
    engine.onEvent((event) => {
      if (event.type === "permission_requested") {
        asked.push(event);
        engine.respondPermission(event.requestId, { optionId });
      }
      if (event.type === "task_complete") resolve();
    });
  });
  engine.send(engine.rootConversation, "touch it");
  await done;
  return { engine, asked };
}

test("allow always lasts for the project, in the next engine too, until removed", async (t) => {
  const dir = workspace();
  const first = await touchOne(t, dir, "allow_always");
  assert.equal(first.asked.length, 1);
  const always = first.asked[0].options.find((option) => option.optionId === "allow_always");
  assert.equal(always.covers, "`touch one.txt` in this project");
  assert.ok(existsSync(join(dir, "one.txt")));
  await first.engine.dispose();

  unlinkSync(join(dir, "one.txt"));
  const second = await touchOne(t, dir, "deny");
  assert.equal(second.asked.length, 0, "asked again in the next engine");
  assert.ok(existsSync(join(dir, "one.txt")));
  const rules = second.engine.permissionRules();
  assert.deepEqual(
    rules.map((rule) => [rule.tool, rule.command, rule.decision]),
    [["bash", "touch one.txt", "allow"]],
  );
  assert.equal(second.engine.removePermissionRule(rules[0].id), true);
  assert.equal(second.engine.removePermissionRule(rules[0].id), false);
  assert.deepEqual(second.engine.permissionRules(), []);
  await second.engine.dispose();
});
