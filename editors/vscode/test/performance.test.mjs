// How the chat view holds up in Chromium: a 20,000-delta answer (Markdown with code blocks)
// streamed into it, and 100 turns with a command card each. The view is fed the engine's
// events as the host posts them (the front end alone: the server's own speed is measured in
// docs/benchmarks.md's other sections). The bounds are wide, for a busy machine; the
// figures are printed, and recorded in docs/benchmarks.md.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";

import { chromium } from "playwright-core";

import { chatPage } from "../dist/host.mjs";

const dist = resolve(import.meta.dirname, "../dist");
let browser;
let url;
let server;

before(async () => {
  server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://x").pathname;
    const origin = `http://127.0.0.1:${server.address().port}`;
    if (path === "/") {
      response.writeHead(200, { "content-type": "text/html" });
      response.end(chatPage({ script: `${origin}/webview.js`, style: `${origin}/webview.css`, cspSource: origin, nonce: "n" }));
    } else if (path === "/webview.js" || path === "/webview.css") {
      response.writeHead(200, { "content-type": path.endsWith(".js") ? "text/javascript" : "text/css" });
      response.end(readFileSync(join(dist, path)));
    } else response.writeHead(204).end();
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  url = `http://127.0.0.1:${server.address().port}/`;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--enable-precise-memory-info", "--js-flags=--expose-gc"],
  });
});
after(async () => {
  await browser?.close();
  await new Promise((done) => server.close(done));
});

/** A page whose host answers `ready` and `session/subscribe` as the relay does, with no
 * kept events; `feed` then streams events into it. */
async function page(t) {
  const tab = await browser.newPage({ viewport: { width: 520, height: 760 } });
  t.after(() => tab.close());
  await tab.addInitScript(() => {
    const deliver = (data) => window.dispatchEvent(new MessageEvent("message", { data }));
    window.acquireVsCodeApi = () => ({
      postMessage(message) {
        if (message.type === "ready") {
          setTimeout(() => deliver({ type: "hello", root: "root", sessionId: "s", workspace: "/w", epoch: 1, earlier: [] }));
        } else if (message.type === "request") {
          setTimeout(() => deliver({ type: "response", id: message.id, result: { events: [] } }));
        }
      },
      getState() {},
      setState() {},
    });
    window.__deliver = deliver;
  });
  await tab.goto(url);
  await tab.waitForTimeout(100);
  return tab;
}

const event = (seq, type, fields = {}) => ({ seq, conversationId: "root", taskId: "t", type, ...fields });

/** 20,000 deltas of an answer with paragraphs, lists and a code block every 40 lines. */
function longAnswer() {
  const deltas = [];
  for (let i = 0; deltas.length < 20_000; i++) {
    if (i % 40 === 0) deltas.push("\n```rust\n", `fn step_${i}() -> u32 {\n`, `    ${i} + 1\n`, "}\n```\n\n");
    else if (i % 7 === 0) deltas.push(`- item ${i} with `, "**bold** and ", "`code`\n");
    else deltas.push(`Line ${i} of the answer `, "says something ", "useful.\n\n");
  }
  return deltas.slice(0, 20_000);
}

test("a 20,000-delta answer: the longest main-thread task while streaming, and the last delta to paint", async (t) => {
  const tab = await page(t);
  const deltas = longAnswer();
  const figures = await tab.evaluate(async (deltas) => {
    const longTasks = [];
    new PerformanceObserver((list) => longTasks.push(...list.getEntries().map((e) => e.duration))).observe({ type: "longtask" });
    let seq = 0;
    const send = (type, fields) => window.__deliver({ type: "event", event: { seq: seq++, conversationId: "root", taskId: "t", type, ...fields } });
    send("state_changed", { state: "running" });
    send("task_started", { model: "m", input: "write a long answer" });
    let longestFrame = 0;
    let last = performance.now();
    let streaming = true;
    const frame = (now) => {
      longestFrame = Math.max(longestFrame, now - last);
      last = now;
      if (streaming) requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
    const started = performance.now();
    // Twenty deltas per message turn: about what a fast model and the host's relay make.
    for (let i = 0; i < deltas.length; i += 20) {
      for (const delta of deltas.slice(i, i + 20)) send("agent_message_delta", { delta });
      await new Promise((done) => setTimeout(done, 0));
    }
    const lastDelta = performance.now();
    const marker = deltas.at(-1).trim().slice(0, 20);
    // The frame whose paint shows the last delta.
    const painted = await new Promise((done) => {
      const look = () => {
        const reply = document.querySelector(".message.assistant");
        if (reply && reply.textContent.includes(marker) && reply.textContent.length > 100_000) {
          requestAnimationFrame(() => setTimeout(() => done(performance.now())));
        } else requestAnimationFrame(look);
      };
      requestAnimationFrame(look);
    });
    streaming = false;
    await new Promise((done) => setTimeout(done, 100));
    return {
      streamingMs: Math.round(lastDelta - started),
      longestTaskMs: Math.round(Math.max(0, ...longTasks)),
      longTasks: longTasks.length,
      longestFrameMs: Math.round(longestFrame),
      lastDeltaToPaintMs: Math.round(painted - lastDelta),
      characters: document.querySelector(".message.assistant").textContent.length,
    };
  }, deltas);
  t.diagnostic(JSON.stringify(figures));
  assert.ok(figures.characters > 100_000, "the whole answer is shown");
  // A view that renders the whole answer again on each frame takes seconds here.
  assert.ok(figures.longestTaskMs < 1000, `longest task ${figures.longestTaskMs} ms`);
  assert.ok(figures.lastDeltaToPaintMs < 1000, `last delta to paint ${figures.lastDeltaToPaintMs} ms`);
});

test("100 turns with a command each: the view's size stays bounded", async (t) => {
  const tab = await page(t);
  const figures = await tab.evaluate(async () => {
    let seq = 0;
    const send = (taskId, type, fields) =>
      window.__deliver({ type: "event", event: { seq: seq++, conversationId: "root", taskId, type, ...fields } });
    const measure = () => {
      window.gc?.();
      return { nodes: document.getElementsByTagName("*").length, heapMb: performance.memory.usedJSHeapSize / 1048576 };
    };
    const sizes = [];
    for (let turn = 0; turn < 100; turn++) {
      const task = `t${turn}`;
      send(task, "state_changed", { state: "running" });
      send(task, "task_started", { model: "m", input: `turn ${turn}: run the tests` });
      send(task, "tool_call_started", { callId: `c${turn}`, toolName: "bash", arguments: {}, kind: "execute", locations: [], title: "Run `cargo test`" });
      for (let line = 0; line < 200; line++) send(task, "tool_call_output_delta", { callId: `c${turn}`, stream: "stdout", delta: `test case_${line} ... ok\n` });
      send(task, "tool_call_completed", { callId: `c${turn}`, toolName: "bash", output: "", summary: "cargo test → exit 0", durationMs: 1200 });
      for (let word = 0; word < 300; word++) send(task, "agent_message_delta", { delta: `word${word} ` });
      send(task, "reply_complete", { text: "", reasoning: "", toolCalls: [], interrupted: false });
      send(task, "task_complete", { lastAgentMessage: null });
      send(task, "state_changed", { state: "idle" });
      await new Promise((done) => requestAnimationFrame(() => setTimeout(done)));
      if (turn === 9 || turn === 99) sizes.push(measure());
    }
    return {
      after10: sizes[0],
      after100: sizes[1],
      items: document.getElementById("log").childElementCount,
      note: document.querySelector(".note.trimmed")?.textContent,
    };
  });
  t.diagnostic(JSON.stringify(figures));
  // 300 items were shown; the oldest went, and the view says so.
  assert.equal(figures.items, 241, "the newest 240 items and the note");
  assert.equal(figures.note, "60 earlier items are not shown here.");
});
