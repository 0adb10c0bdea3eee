// SemaCore's quickstart program, unchanged but for its import, driven through its readline
// prompts: a streamed reply, a permission answered at the prompt, an interrupt with SIGINT.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

import { startMock, text, toolCall, workspace } from "./mock.mjs";

test("SemaCore's quickstart runs against coder with only the import changed", async (t) => {
  const { url } = await startMock(t, [
    text("YES"), // addModel's connection test
    text("Hello from coder."),
    toolCall("w1", "write", { path: "hello.txt", content: "hi\n" }),
    text("Wrote it."),
    { kind: "stream", chunks: Array.from({ length: 500 }, () => ({ type: "text", text: "slow " })), delay_ms: 20 },
  ]);
  const dir = workspace();
  const child = spawn(process.execPath, [join(import.meta.dirname, "fixtures/quickstart.mjs")], {
    cwd: import.meta.dirname,
    env: { ...process.env, PROJECT_DIR: dir, MODEL_BASE_URL: `${url}/v1` },
    stdio: ["pipe", "pipe", "inherit"],
  });
  t.after(() => child.kill("SIGKILL"));
  let out = "";
  const waiters = [];
  child.stdout.on("data", (chunk) => {
    out += chunk;
    for (const waiter of [...waiters]) waiter();
  });
  const until = (pattern, count = 1) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${pattern} in: ${out}`)), 15000);
      const check = () => {
        if ((out.match(new RegExp(pattern, "g")) ?? []).length >= count) {
          clearTimeout(timer);
          resolve();
        }
      };
      waiters.push(check);
      check();
    });

  await until("消息");
  child.stdin.write("say hello\n");
  await until("Hello from coder.");
  await until("消息", 2);
  child.stdin.write("write a file\n");
  await until("权限响应");
  child.stdin.write("y\n");
  await until("Wrote it.");
  assert.ok(existsSync(join(dir, "hello.txt")));
  assert.match(out, /tool:execution:complete\|/);
  await until("消息", 3);
  child.stdin.write("talk slowly\n");
  await until("slow slow");
  child.kill("SIGINT");
  await until("session:interrupted");
  await until("消息", 4);
  child.stdin.write("exit\n");
  const code = await new Promise((resolve) => child.once("exit", resolve));
  assert.equal(code, 0);
  assert.match(out, /会话结束/);
});
