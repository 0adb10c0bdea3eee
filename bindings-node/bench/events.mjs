// Events per second delivered to a JavaScript listener: 20,000 streamed deltas from the
// mock model, through three doors measured in one run (see docs/benchmarks.md):
//
//   bare read   curl reads the same SSE body (no JavaScript, no engine): the floor
//   fetch       JavaScript reads the stream itself: fetch, SSE split, JSON.parse, listener
//   coder lsp   the `coder lsp` process, its notifications read by vscode-jsonrpc
//   in-process  this addon: `Engine.onEvent`, and SemaCore's `message:text:chunk`
//
// Each sample runs from the moment the input is sent (or curl is spawned) until the
// listener has seen the 20,000th delta. Medians of 15 after a warm-up, doors alternating.
//
//   npm run bench      (builds the release binaries, addon and SDK first)
//
// CODER_BIN and CODER_MOCK_BIN override where the release binaries are looked for.

import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import * as rpc from "vscode-jsonrpc/node";

import { CoderEngine, Engine } from "coder-agent-engine";

const DELTAS = 20_000;
const SAMPLES = 15;
const target = process.env.CARGO_TARGET_DIR ?? resolve(import.meta.dirname, "../../target");
const coderBin = resolve(process.env.CODER_BIN ?? join(target, "release/coder"));
const mockBin = resolve(process.env.CODER_MOCK_BIN ?? join(target, "release/coder-mock-model"));

const mock = spawn(mockBin, [], { stdio: ["ignore", "pipe", "inherit"] });
const url = (await new Promise((done, fail) => {
  createInterface({ input: mock.stdout }).once("line", done);
  mock.once("error", fail);
})).trim();
const model = { provider: "openai", model: "mock", baseUrl: `${url}/v1`, apiKey: "bench" };
const stream = { kind: "stream", chunks: Array.from({ length: DELTAS }, () => ({ type: "text", text: "tok " })) };

/** Queues one 20,000-delta reply on the mock server. */
async function queueReply() {
  const response = await fetch(`${url}/_mock/script`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify([stream]),
  });
  if (!response.ok) throw new Error(`the mock refused the script: ${response.status}`);
}

const workspace = () => mkdtempSync(join(tmpdir(), "coder-bench-"));

/** Resolves when `count` has been called DELTAS times; returns the counter and the promise. */
function deltaCounter() {
  let seen = 0;
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  return { count: () => ++seen === DELTAS && done(), finished };
}

async function bareRead() {
  await queueReply();
  const started = performance.now();
  const curl = spawnSync("curl", ["-sN", "-H", "content-type: application/json", "-d", "{}", `${url}/v1/chat/completions`], {
    maxBuffer: 64 << 20,
  });
  const elapsed = performance.now() - started;
  if (curl.status !== 0 || curl.stdout.length < DELTAS * 10) throw new Error("curl did not read the stream");
  return elapsed;
}

/** The same stream read by JavaScript itself: fetch, SSE split, JSON.parse, listener. */
async function fetchRead() {
  await queueReply();
  const deltas = deltaCounter();
  const listener = (delta) => delta && deltas.count();
  const started = performance.now();
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "mock", stream: true, messages: [{ role: "user", content: "go" }] }),
  });
  const decoder = new TextDecoder();
  let pending = "";
  for await (const bytes of response.body) {
    pending += decoder.decode(bytes, { stream: true });
    const events = pending.split("\n\n");
    pending = events.pop();
    for (const event of events) {
      const data = event.startsWith("data: ") ? event.slice(6) : "";
      if (data && data !== "[DONE]") listener(JSON.parse(data).choices?.[0]?.delta?.content);
    }
  }
  await deltas.finished;
  return performance.now() - started;
}

async function lspDoor() {
  const dir = workspace();
  const server = spawn(coderBin, ["lsp", "--stdio"], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir, OPENAI_BASE_URL: `${url}/v1`, OPENAI_API_KEY: "bench" },
    stdio: ["pipe", "pipe", "ignore"],
  });
  const connection = rpc.createMessageConnection(new rpc.StreamMessageReader(server.stdout), new rpc.StreamMessageWriter(server.stdin));
  const deltas = deltaCounter();
  connection.onNotification("conversation/event", ({ event }) => {
    if (event.type === "agent_message_delta") deltas.count();
  });
  connection.listen();
  await connection.sendRequest("initialize", { capabilities: {} });
  await connection.sendNotification("initialized", {});
  const { conversationId } = await connection.sendRequest("conversation/create", {});
  await queueReply();
  const started = performance.now();
  await connection.sendRequest("conversation/send", { conversationId, text: "go" });
  await deltas.finished;
  const elapsed = performance.now() - started;
  connection.dispose();
  server.kill();
  return elapsed;
}

async function inProcess() {
  const engine = Engine.create({ workingDir: workspace(), model, saveSessions: false });
  const deltas = deltaCounter();
  engine.onEvent((event) => {
    if (event.type === "agent_message_delta") deltas.count();
  });
  await queueReply();
  const started = performance.now();
  engine.send(engine.rootConversation, "go");
  await deltas.finished;
  const elapsed = performance.now() - started;
  await engine.dispose();
  return elapsed;
}

async function semaFacade() {
  const core = new CoderEngine({ workingDir: workspace(), logLevel: "error" });
  await core.addModel({ provider: "openai", modelName: "mock", baseURL: `${url}/v1`, apiKey: "bench", maxTokens: 1000, contextLength: 100000 }, true);
  await core.createSession();
  const deltas = deltaCounter();
  core.on("message:text:chunk", () => deltas.count());
  await queueReply();
  const started = performance.now();
  core.processUserInput("go");
  await deltas.finished;
  const elapsed = performance.now() - started;
  await core.dispose();
  return elapsed;
}

const doors = [
  ["bare read (curl)", bareRead],
  ["fetch + SSE parse in JavaScript", fetchRead],
  ["coder lsp + vscode-jsonrpc", lspDoor],
  ["in-process Engine.onEvent", inProcess],
  ["in-process SemaCore message:text:chunk", semaFacade],
];
const samples = new Map(doors.map(([name]) => [name, []]));
for (let run = 0; run <= SAMPLES; run++) {
  for (const [name, measure] of doors) {
    const ms = await measure();
    if (run > 0) samples.get(name).push(ms); // run 0 warms up
  }
}
mock.kill();

const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
const bare = median(samples.get("bare read (curl)"));
console.log(`${DELTAS} deltas, median of ${SAMPLES}:`);
for (const [name] of doors) {
  const ms = median(samples.get(name));
  const perSecond = Math.round((DELTAS / ms) * 1000);
  console.log(`  ${name.padEnd(40)} ${ms.toFixed(1).padStart(7)} ms  ${String(perSecond).padStart(8)} deltas/s  ${(ms / bare).toFixed(2)}x the bare read`);
}
