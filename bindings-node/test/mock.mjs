// The scripted model server (`coder-mock-model` from coder-testkit) as a process, and small
// helpers shared by the tests.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";

const target = process.env.CARGO_TARGET_DIR ?? resolve(import.meta.dirname, "../../target");
const mockBin = resolve(process.env.CODER_MOCK_BIN ?? join(target, "debug/coder-mock-model"));

export const text = (t) => ({ kind: "stream", chunks: [{ type: "text", text: t }] });
export const toolCall = (id, name, args) => ({
  kind: "stream",
  chunks: [{ type: "tool_call", id, name, arguments: JSON.stringify(args) }],
});

/** Mocks and their script directories, also ended when the test process exits before a
 * test's own cleanup ran (a timeout, a crash). */
const leftovers = [];

// The person's own state (user configuration, permission rules recorded with "always") is
// never the real home's in a test: a folder of its own, unless the test file names one.
if (process.env.CODER_HOME === undefined) {
  const home = mkdtempSync(join(tmpdir(), "coder-home-"));
  process.env.CODER_HOME = home;
  process.once("exit", () => rmSync(home, { recursive: true, force: true }));
}
// SemaCore's model file (`model.conf`) is never the real home's either.
if (process.env.SEMA_ROOT === undefined) {
  const root = mkdtempSync(join(tmpdir(), "coder-sema-"));
  process.env.SEMA_ROOT = root;
  process.once("exit", () => rmSync(root, { recursive: true, force: true }));
}
process.once("exit", () => {
  for (const { mock, dir } of leftovers) {
    mock.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Starts the mock with `script`; it is killed when the test ends. */
export async function startMock(t, script) {
  const dir = mkdtempSync(join(tmpdir(), "coder-mock-"));
  const file = join(dir, "script.json");
  writeFileSync(file, JSON.stringify(script));
  const mock = spawn(mockBin, ["--script", file], { stdio: ["ignore", "pipe", "inherit"] });
  leftovers.push({ mock, dir });
  const url = await new Promise((resolve, reject) => {
    createInterface({ input: mock.stdout }).once("line", resolve);
    mock.once("error", reject);
  });
  t.after(() => {
    mock.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    url: url.trim(),
    requests: async () => (await fetch(`${url.trim()}/_mock/requests`)).json(),
  };
}

/** Points SemaCore's model file (`$SEMA_ROOT/model.conf`) at a new empty folder, so the
 * next core starts without the models earlier tests added; returns the folder. */
export function freshSemaRoot() {
  const root = mkdtempSync(join(tmpdir(), "coder-sema-"));
  workspaces.push(root);
  process.env.SEMA_ROOT = root;
  return root;
}

/** Workspaces made by this test file, removed when its process exits. */
const workspaces = [];
process.once("exit", () => {
  for (const dir of workspaces) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
});

/** A fresh workspace directory; it is removed when the test process exits. */
export function workspace() {
  const dir = mkdtempSync(join(tmpdir(), "coder-ws-"));
  workspaces.push(dir);
  return dir;
}

/** Resolves with the first `event` emitted by `emitter` that passes `test`. */
export function next(emitter, event, test = () => true, ms = 15000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${event} within ${ms} ms`)), ms);
    const listener = (data) => {
      if (!test(data)) return;
      clearTimeout(timer);
      emitter.off(event, listener);
      resolve(data);
    };
    emitter.on(event, listener);
  });
}

/**
 * The script of a small MCP server for node, speaking newline-delimited JSON-RPC on stdio:
 * it is `name`, offers `tools` (names, each with an empty input schema) and answers a
 * `tools/call` with `onCall`, JavaScript run with `m` (the request) and `send` in scope.
 */
export function mcpServerScript(name, tools, onCall = 'send({ id: m.id, result: { content: [{ type: "text", text: "ok" }] } });') {
  return `
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\\n");
let buffer = "";
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf("\\n")) >= 0) {
    const m = JSON.parse(buffer.slice(0, end));
    buffer = buffer.slice(end + 1);
    if (m.id === undefined) continue;
    if (m.method === "initialize") {
      send({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
        serverInfo: { name: ${JSON.stringify(name)}, version: "1.0.0" } } });
    } else if (m.method === "tools/list") {
      const tool = (name) => ({ name, description: "The tool " + name + ".", inputSchema: { type: "object", properties: {} } });
      send({ id: m.id, result: { tools: ${JSON.stringify(tools)}.map(tool) } });
    } else if (m.method === "tools/call") {
      ${onCall}
    } else {
      send({ id: m.id, result: {} });
    }
  }
});
`;
}
