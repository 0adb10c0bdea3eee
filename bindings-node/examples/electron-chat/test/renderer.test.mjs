// The window in a real browser (Debian's Chromium through playwright-core), over the real
// bridge: `preload.js` runs in the page as Electron runs it, with its `electron` module's
// `contextBridge` and `ipcRenderer` carried to the engine's host in this process, on the
// same channels `main.js` serves. Screenshots of each state go to the artifacts folder.

import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, normalize, resolve } from "node:path";
import { test } from "node:test";

import { chromium } from "playwright-core";

import { EVENT_CHANNEL, artifacts, exists, host, startMock, text, toolCall, workspace } from "./events.mjs";

const root = resolve(import.meta.dirname, "..");
const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css" };

/** Serves the example's folder (the page and its scripts) on 127.0.0.1. */
async function serve(t) {
  const server = createServer((request, response) => {
    const path = normalize(join(root, decodeURIComponent(new URL(request.url, "http://x").pathname)));
    if (!path.startsWith(root + "/") || !exists(path)) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" });
    response.end(readFileSync(path));
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  t.after(() => new Promise((done) => server.close(done)));
  return `http://127.0.0.1:${server.address().port}`;
}

/** `preload.js` as the page's first script, its `electron` carried to this process. */
function bridge() {
  const preload = readFileSync(join(root, "preload.js"), "utf8");
  return `(() => {
    const listeners = {};
    window.__coderDeliver = (channel, payload) => (listeners[channel] ?? []).forEach((l) => l({}, payload));
    const electron = {
      contextBridge: { exposeInMainWorld: (key, api) => { window[key] = Object.freeze(api); } },
      ipcRenderer: {
        invoke: (channel, ...args) => window.__coderInvoke(channel, args),
        on: (channel, listener) => { (listeners[channel] ??= []).push(listener); },
        removeListener: (channel, listener) => {
          listeners[channel] = (listeners[channel] ?? []).filter((l) => l !== listener);
        },
      },
    };
    const require = (name) => {
      if (name !== "electron") throw new Error("a sandboxed preload cannot require " + name);
      return electron;
    };
    ${preload}
  })();`;
}

/** The window on a host against the mock; events reach the page in order. */
async function open(t, script) {
  const mock = await startMock(t, script);
  const dir = workspace();
  let page;
  let delivered = Promise.resolve();
  const { chat } = host(t, mock.url, dir, (event) => {
    delivered = delivered.then(() => page?.evaluate(([c, e]) => window.__coderDeliver(c, e), [EVENT_CHANNEL, event]));
  });
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"] });
  t.after(() => browser.close());
  page = await browser.newPage({ viewport: { width: 900, height: 700 } });
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  const handlers = chat.handlers();
  await page.exposeFunction("__coderInvoke", (channel, args) => handlers[channel](...args));
  await page.addInitScript(bridge());
  await page.goto(`${await serve(t)}/renderer/index.html`);
  return { page, dir, mock, errors };
}

function shot(page, name) {
  const dir = artifacts();
  mkdirSync(dir, { recursive: true });
  return page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
}

test("the window asks with the engine's options, runs the command and renders the answer", async (t) => {
  const { page, dir, errors } = await open(t, [
    toolCall("c1", "bash", { command: "echo hello > note.txt" }),
    text(
      "Made **note.txt**.\n\n| file | lines |\n|---|---|\n| note.txt | 1 |\n\n" +
        '<img src="x" onerror="window.__pwned = 1"> `code`',
    ),
  ]);
  await page.fill("#input", "make a note");
  await page.press("#input", "Enter");
  const card = page.locator(".card.permission");
  await card.waitFor();
  assert.match(await card.innerText(), /echo hello > note\.txt/);
  const labels = await card.locator("button").allInnerTexts();
  assert.equal(labels[0], "Yes, allow it this once");
  assert.ok(labels.includes("No, and stop the task"), labels.join(" | "));
  await shot(page, "electron-chat-permission");
  await card.getByRole("button", { name: "Yes, allow it this once" }).click();
  const answer = page.locator(".message.assistant").last();
  await answer.locator("table").waitFor();
  assert.equal(await answer.locator("strong").innerText(), "note.txt");
  assert.equal(await answer.locator("td").first().innerText(), "note.txt");
  await page.locator(".card.tool .summary").waitFor();
  assert.equal(readFileSync(join(dir, "note.txt"), "utf8"), "hello\n");
  // What the model wrote is never run as HTML.
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await answer.locator("img[onerror]").count(), 0);
  await page.locator("#stop[hidden]").waitFor({ state: "attached" });
  await shot(page, "electron-chat-answer");
  // The session is listed once the task is over.
  await page.waitForFunction(() => document.querySelectorAll("#sessions option").length > 1);
  assert.match(await page.locator("#sessions option").nth(1).innerText(), /^make a note · /);
  assert.deepEqual(errors, []);
});

test("Stop interrupts the answer being written, and Esc does too", async (t) => {
  const slow = { kind: "stream", chunks: Array.from({ length: 500 }, () => ({ type: "text", text: "slow " })), delay_ms: 20 };
  const { page, errors } = await open(t, [slow, slow]);
  await page.fill("#input", "talk");
  await page.click("#send");
  await page.locator(".message.assistant").waitFor();
  await page.locator("#stop:not([hidden])").click();
  await page.getByText("interrupted").waitFor();
  await page.locator("#stop[hidden]").waitFor({ state: "attached" });
  await shot(page, "electron-chat-interrupted");
  await page.fill("#input", "again");
  await page.press("#input", "Enter");
  await page.locator(".message.assistant").nth(1).waitFor();
  await page.keyboard.press("Escape");
  await page.getByText("interrupted").nth(1).waitFor();
  assert.deepEqual(errors, []);
});
