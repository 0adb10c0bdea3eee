// Engine events to a JavaScript listener, against the floor (see docs/benchmarks.md).
//
// The mock model (`coder-mock-model --plain`) serves each reply rendered before the request
// arrives (a `rendered` script entry), written at once by a plain thread (before
// 2026-11-27, by the axum mock, whose serving the floor carried), so reading it costs a
// client only the read. In rounds that take every size in turn (an empty reply, then 2,500, 5,000, 10,000,
// 20,000, 40,000 and 80,000 text deltas of "tok "), after one warm-up round, three doors
// read the same body:
//
//   floor       a Node `http` request from this process whose `data` handler only counts
//               bytes, from the request until `end`: the cheapest JavaScript read
//   onEvent     this addon: `Engine.onEvent`, from `send` until the listener has seen the
//               reply's `token_count` (after every `agent_message_delta`)
//   SemaCore    the facade: `processUserInput` until `message:complete`, every
//               `message:text:chunk` seen on the way
//
// The floor runs in this process, as the addon does: both pay for one new connection to
// 127.0.0.1 and both deliver to this JavaScript thread. The engine (or SemaCore session) is
// created before the clock starts and disposed after it stops, a fresh one per sample. The
// listeners add up the length of the text they are given and the bench checks it is the
// whole reply (deltas merged by the addon still carry all their text).
//
// Prints, for 5,000, 20,000 and 80,000 deltas, medians over rounds: the times, the ratio to
// the floor (target: <= 2x at every size) and the cost of a delta two ways, each the median
// of the rounds' own figures: averaged from an empty reply, (t(n) - t(0)) / n, and at the
// margin, (t(n) - t(n/2)) / (n/2), what one more delta adds at that size (linear: within 20%
// of each other across sizes).
//
//   npm run bench      (builds the release binaries, addon and SDK first)
//   BENCH_RUNS=N       samples per point (default 15)
//
// CODER_MOCK_BIN overrides where the release mock server is looked for.

import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";

import { CoderEngine, Engine } from "coder-agent-engine";

// SemaCore's model file (`model.conf`) goes to a folder of this run, never the real home's.
if (process.env.SEMA_ROOT === undefined) {
  process.env.SEMA_ROOT = mkdtempSync(join(tmpdir(), "coder-sema-"));
  const root = process.env.SEMA_ROOT;
  process.once("exit", () => rmSync(root, { recursive: true, force: true }));
}

const doors = [
  ["floor", floor],
  ["onEvent", onEvent],
  ["SemaCore", semaCore],
];
const doorNames = doors.map(([name]) => name);
// The sizes reported, and those measured: each reported size's half too, for the margin.
const REPORTED = [5_000, 20_000, 80_000];
const SIZES = [0, 2_500, 5_000, 10_000, 20_000, 40_000, 80_000];
const PIECE = "tok ";
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
// 80,000 one-token deltas are past the default maxOutputTokens (8192): a reply is cut past
// twice the limit plus 64 events.
const MAX_OUTPUT_TOKENS = 100_000;

const target = process.env.CARGO_TARGET_DIR ?? resolve(import.meta.dirname, "../../target");
const mockBin = resolve(process.env.CODER_MOCK_BIN ?? join(target, "release/coder-mock-model"));

/** The OpenAI SSE body the mock renders for `deltas` text chunks (`MockResponse::prerendered`). */
function render(deltas) {
  const frame = (choices) =>
    `data: {"choices":${choices},"id":"chatcmpl-mock","model":"mock-model","object":"chat.completion.chunk"}\n\n`;
  const delta = frame(`[{"delta":{"content":${JSON.stringify(PIECE)}},"finish_reason":null,"index":0}]`);
  // The usage ends it, as OpenAI's reply does when asked (`include_usage`): coder then counts
  // no tokens itself.
  const usage = `data: {"choices":[],"id":"chatcmpl-mock","model":"mock-model","object":"chat.completion.chunk","usage":{"prompt_tokens":20,"completion_tokens":${deltas},"total_tokens":${20 + deltas}}}\n\n`;
  return delta.repeat(deltas) + frame(`[{"delta":{},"finish_reason":"stop","index":0}]`) + usage + "data: [DONE]\n\n";
}

// The script goes to the mock as a file at start (its script endpoint takes small bodies
// only): one mock per size and round, scripted with the reply once for each door.
const scriptDir = mkdtempSync(join(tmpdir(), "coder-bench-script-"));
const scriptFiles = new Map(
  SIZES.map((n) => {
    const file = join(scriptDir, `${n}.json`);
    const reply = { kind: "rendered", format: "openai", body: render(n) };
    writeFileSync(file, JSON.stringify(doorNames.map(() => reply)));
    return [n, file];
  }),
);

/** Starts a mock scripted with the reply of `deltas` deltas for each door. */
async function startMock(deltas) {
  const child = spawn(mockBin, ["--plain", "--script", scriptFiles.get(deltas)], { stdio: ["ignore", "pipe", "inherit"] });
  const line = await new Promise((done, fail) => {
    createInterface({ input: child.stdout }).once("line", done);
    child.once("error", fail);
  });
  const url = new URL(line.trim());
  const stop = () => new Promise((done) => (child.exitCode !== null ? done() : (child.once("exit", done), child.kill())));
  return { url, baseUrl: `${url.origin}/v1`, stop };
}

/** A workspace whose config allows the largest reply; removed at exit. */
const workspaces = [];
function workspace() {
  const dir = mkdtempSync(join(tmpdir(), "coder-bench-"));
  mkdirSync(join(dir, ".coder"));
  writeFileSync(join(dir, ".coder/config.json"), JSON.stringify({ maxOutputTokens: MAX_OUTPUT_TOKENS }));
  workspaces.push(dir);
  return dir;
}

/** Counts the text a listener is given; `finished` resolves on `end()`, checked. */
function textCounter(deltas) {
  let chars = 0;
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  return {
    add: (text) => (chars += text.length),
    end: () => done(),
    finished: finished.then(() => {
      if (chars !== deltas * PIECE.length) throw new Error(`the listener saw ${chars} characters, not ${deltas * PIECE.length}`);
    }),
  };
}

const requestBody = JSON.stringify({ model: "mock", stream: true, messages: [{ role: "user", content: "go" }] });

/** The floor: a new connection, the request, every byte of the body counted, nothing parsed. */
async function floor(deltas, { url }) {
  const started = performance.now();
  const bytes = await new Promise((done, fail) => {
    const request = http.request(
      { host: url.hostname, port: url.port, path: "/v1/chat/completions", method: "POST", agent: false, headers: { "content-type": "application/json" } },
      (response) => {
        let count = 0;
        response.on("data", (chunk) => (count += chunk.length));
        response.on("end", () => done(count));
        response.on("error", fail);
      },
    );
    request.on("error", fail);
    request.end(requestBody);
  });
  const elapsed = performance.now() - started;
  if (bytes < deltas * 100) throw new Error(`the floor read ${bytes} bytes`);
  return elapsed;
}

async function onEvent(deltas, { baseUrl }) {
  const model = { provider: "openai", model: "mock", baseUrl, apiKey: "bench", maxOutputTokens: MAX_OUTPUT_TOKENS };
  const engine = Engine.create({ workingDir: workspace(), model, saveSessions: false, trustWorkspace: true });
  const text = textCounter(deltas);
  engine.onEvent((event) => {
    if (event.type === "agent_message_delta") text.add(event.delta);
    else if (event.type === "token_count") text.end();
  });
  const started = performance.now();
  engine.send(engine.rootConversation, "go");
  await text.finished;
  const elapsed = performance.now() - started;
  await engine.dispose();
  return elapsed;
}

async function semaCore(deltas, { baseUrl }) {
  const core = new CoderEngine({ workingDir: workspace(), logLevel: "error", saveSessions: false, trustWorkspace: true });
  await core.addModel(
    { provider: "openai", modelName: "mock", baseURL: baseUrl, apiKey: "bench", maxTokens: MAX_OUTPUT_TOKENS, contextLength: 1_000_000 },
    true,
  );
  await core.createSession();
  const text = textCounter(deltas);
  core.on("message:text:chunk", ({ delta }) => text.add(delta));
  core.on("message:complete", () => text.end());
  const started = performance.now();
  core.processUserInput("go");
  await text.finished;
  const elapsed = performance.now() - started;
  await core.dispose();
  return elapsed;
}

const samples = new Map(doors.flatMap(([name]) => SIZES.map((n) => [`${name}/${n}`, []])));
try {
  for (let run = 0; run <= RUNS; run++) {
    for (const n of SIZES) {
      const mock = await startMock(n);
      try {
        for (const [name, measure] of doors) {
          const ms = await measure(n, mock);
          if (run > 0) samples.get(`${name}/${n}`).push(ms); // run 0 warms up
        }
      } finally {
        await mock.stop();
      }
    }
  }
} finally {
  rmSync(scriptDir, { recursive: true, force: true });
  for (const dir of workspaces) rmSync(dir, { recursive: true, force: true });
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const t = (name, n) => median(samples.get(`${name}/${n}`));
// The median over rounds of each round's own figure (the samples of one round sit at the
// same index of every size's list).
const overRounds = (name, f) => median(samples.get(`${name}/0`).map((_, r) => f((n) => samples.get(`${name}/${n}`)[r])));
const fromEmpty = (name, n) => overRounds(name, (at) => ((at(n) - at(0)) / n) * 1000);
const margin = (name, n) => overRounds(name, (at) => ((at(n) - at(n / 2)) / (n - n / 2)) * 1000);
const cell = (text, width) => String(text).padStart(width);

console.log(`medians of ${RUNS} rounds (per delta in us, from an empty reply (t(n) - t(0)) / n, and at the margin (t(n) - t(n/2)) / (n/2)):`);
console.log(
  [cell("deltas", 7), cell("floor ms", 9), cell("onEvent ms", 11), cell("ratio", 6), cell("SemaCore ms", 12), cell("ratio", 6),
    cell("floor/d", 13), cell("onEvent/d", 13), cell("SemaCore/d", 13)].join("  "),
);
for (const n of [0, ...REPORTED]) {
  const row = [cell(n, 7), cell(t("floor", n).toFixed(1), 9), cell(t("onEvent", n).toFixed(1), 11),
    cell(`${(t("onEvent", n) / t("floor", n)).toFixed(2)}x`, 6), cell(t("SemaCore", n).toFixed(1), 12),
    cell(`${(t("SemaCore", n) / t("floor", n)).toFixed(2)}x`, 6)];
  if (n > 0) {
    for (const name of doorNames) row.push(cell(`${fromEmpty(name, n).toFixed(2)} / ${margin(name, n).toFixed(2)}`, 13));
  }
  console.log(row.join("  "));
}
const spread = (costs) => `${((Math.max(...costs) / Math.min(...costs) - 1) * 100).toFixed(0)}%`;
for (const [name] of doors) {
  console.log(
    `${name.padEnd(8)} per-delta cost spread across sizes (linear: <= 20%): from an empty reply ${spread(REPORTED.map((n) => fromEmpty(name, n)))}, at the margin ${spread(REPORTED.map((n) => margin(name, n)))}`,
  );
}
