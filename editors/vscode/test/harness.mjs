// What the tests share: the scripted model (`coder-mock-model`) and a real `coder lsp` in a
// fresh workspace, connected over vscode-jsonrpc (the library VS Code's LanguageClient is
// built on) with the extension's own protocol client and relay (dist/host.mjs).
//
// CODER_BIN and CODER_MOCK_BIN point at the binaries (scripts/test.sh builds them).

import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import * as rpc from "vscode-jsonrpc/node";

import { ChatRelay, CoderSession } from "../dist/host.mjs";

const target = process.env.CARGO_TARGET_DIR ?? resolve(import.meta.dirname, "../../../target");
export const coderBin = resolve(process.env.CODER_BIN ?? join(target, "debug/coder"));
export const mockBin = resolve(process.env.CODER_MOCK_BIN ?? join(target, "debug/coder-mock-model"));

export const text = (t) => ({ kind: "stream", chunks: [{ type: "text", text: t }] });
export const toolCall = (id, name, args) => ({
  kind: "stream",
  chunks: [{ type: "tool_call", id, name, arguments: JSON.stringify(args) }],
});

/** Processes and folders, also ended when the test process exits before a test's own
 * cleanup ran (a timeout, a crash). */
const leftovers = [];
process.once("exit", () => {
  for (const { child, dir } of leftovers) {
    child?.kill();
    if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  }
});

/** Starts the mock with `script`; it is killed when the test ends. */
export async function startMock(t, script) {
  const dir = mkdtempSync(join(tmpdir(), "coder-mock-"));
  const file = join(dir, "script.json");
  writeFileSync(file, JSON.stringify(script));
  const child = spawn(mockBin, ["--script", file], { stdio: ["ignore", "pipe", "inherit"] });
  leftovers.push({ child, dir });
  const url = await new Promise((done, fail) => {
    createInterface({ input: child.stdout }).once("line", (line) => done(line.trim()));
    child.once("error", fail);
  });
  t.after(() => {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  /** The requests the model received, each with its body. */
  const requests = async () => (await fetch(`${url}/_mock/requests`)).json();
  return { url, requests };
}

/** `coder lsp` in a fresh workspace whose configuration sets `preset` (and what `setup`
 * writes into it), initialized with
 * the workspace trusted, its protocol client and a relay for views. The person's own
 * state (rules recorded with "always") is a folder of the test's. */
export async function startServer(t, url, { preset = "balanced", actions = {}, setup = () => {} } = {}) {
  const home = mkdtempSync(join(tmpdir(), "coder-home-"));
  const workspace = mkdtempSync(join(tmpdir(), "coder-ws-"));
  mkdirSync(join(workspace, ".coder"));
  writeFileSync(join(workspace, ".coder", "config.json"), JSON.stringify({ permissions: { preset } }));
  // What the workspace holds before the server starts.
  setup(workspace);
  const server = spawn(coderBin, ["lsp", "--stdio"], {
    cwd: workspace,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      CODER_HOME: home,
      TMPDIR: tmpdir(),
      OPENAI_BASE_URL: `${url}/v1`,
      OPENAI_API_KEY: "k",
    },
    stdio: ["pipe", "pipe", "inherit"],
  });
  leftovers.push({ child: server, dir: workspace }, { dir: home });
  const exited = new Promise((done) => server.once("exit", (code) => done(code)));
  t.after(async () => {
    server.kill();
    await exited;
    rmSync(workspace, { recursive: true, force: true, maxRetries: 3 });
    rmSync(home, { recursive: true, force: true, maxRetries: 3 });
  });
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(server.stdout),
    new rpc.StreamMessageWriter(server.stdin),
  );
  const session = new CoderSession(connection);
  connection.listen();
  t.after(() => connection.dispose());
  const init = await connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri: null,
    capabilities: {},
    initializationOptions: { trustWorkspace: true },
  });
  await connection.sendNotification("initialized", {});
  const copied = [];
  const opened = [];
  const relay = new ChatRelay(
    session,
    { sessionId: init.capabilities.experimental.coder.sessionId, workspace, epoch: 1, historyLoaded: 0 },
    { copy: (text) => copied.push(text), open: (path, line) => opened.push({ path, line }), ...actions },
  );
  return { workspace, connection, session, relay, copied, opened, exited };
}
