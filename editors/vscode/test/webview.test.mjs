// The chat view in a real browser (Debian's Chromium through playwright-core): the page the
// extension builds, its bundled front end, and `acquireVsCodeApi` replaced by a bridge to the
// extension's relay in this process, which talks to a real `coder lsp` against the scripted
// model. Each state a person sees is saved as a screenshot under
// `${CODER_ARTIFACTS_DIR:-<repo>/artifacts}/vscode/`.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";

import { chromium } from "playwright-core";

import { chatPage } from "../dist/host.mjs";
import { startMock, startServer, text, toolCall } from "./harness.mjs";

const dist = resolve(import.meta.dirname, "../dist");
const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const artifacts = join(process.env.CODER_ARTIFACTS_DIR ?? resolve(import.meta.dirname, "../../../artifacts"), "vscode");

let browser;
before(async () => {
  browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"] });
});
after(() => browser?.close());

/** Serves the page as the extension builds it, and its two bundled files. */
async function serve(t) {
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://x").pathname;
    const origin = `http://127.0.0.1:${server.address().port}`;
    const files = { "/webview.js": "text/javascript", "/webview.css": "text/css" };
    if (path === "/") {
      response.writeHead(200, { "content-type": "text/html" });
      response.end(chatPage({ script: `${origin}/webview.js`, style: `${origin}/webview.css`, cspSource: origin, nonce: "n0nce" }));
    } else if (files[path]) {
      response.writeHead(200, { "content-type": files[path] });
      response.end(readFileSync(join(dist, path)));
    } else if (path === "/favicon.ico") {
      response.writeHead(204).end(); // a browser asks for it; VS Code's webviews do not
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  t.after(() => new Promise((done) => server.close(done)));
  return `http://127.0.0.1:${server.address().port}/`;
}

/** What VS Code gives a webview, carried to the relay in this process. */
const BRIDGE = `(() => {
  let state;
  window.acquireVsCodeApi = () => ({
    postMessage: (message) => window.__toHost(message),
    getState: () => state,
    setState: (next) => (state = next),
  });
  window.__toView = (message) => window.dispatchEvent(new MessageEvent("message", { data: message }));
})();`;

/** The view on a `coder lsp` against the mock, as a person opens it. */
async function open(t, script, options = {}) {
  const mock = await startMock(t, script);
  const server = await startServer(t, mock.url, options);
  const page = await browser.newPage({ viewport: { width: 520, height: 760 } });
  t.after(() => page.close());
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  // Messages reach the page in the order the host posts them.
  let delivered = Promise.resolve();
  const port = server.relay.attach({
    post: (message) => {
      delivered = delivered
        .then(() => page.evaluate((m) => window.__toView?.(m), message))
        .catch(() => {}); // the page is reloading: it catches up from the engine
    },
  });
  t.after(() => port.detach());
  await page.exposeFunction("__toHost", (message) => port.receive(message));
  await page.addInitScript(BRIDGE);
  await page.goto(await serve(t));
  return { page, mock, errors, ...server };
}

/** Saves a screenshot of the view, and its layout beside it: the log's items in order (by
 * their kind) and the heights of the header and the composer. When the previous run left a
 * layout for the same state, a gross change fails the test: an item more or less, another
 * order, a bar grown or shrunk by a fifth. After a change meant to alter the layout, look
 * at the screenshots and run with CODER_LAYOUT_UPDATE=1 (or remove the .layout.json files). */
async function shot(page, name) {
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: join(artifacts, `${name}.png`) });
  const layout = await page.evaluate(() => ({
    items: [...document.querySelectorAll("#log > *")].map((item) => `${item.tagName.toLowerCase()}.${[...item.classList].sort().join(".")}`),
    header: Math.round(document.querySelector("header").getBoundingClientRect().height),
    footer: Math.round(document.querySelector("footer").getBoundingClientRect().height),
  }));
  const file = join(artifacts, `${name}.layout.json`);
  if (existsSync(file) && !process.env.CODER_LAYOUT_UPDATE) {
    const previous = JSON.parse(readFileSync(file, "utf8"));
    assert.deepEqual(layout.items, previous.items, `${name}: the log's items changed since the previous run`);
    for (const bar of ["header", "footer"]) {
      const change = Math.abs(layout[bar] - previous[bar]) / Math.max(1, previous[bar]);
      assert.ok(change < 0.2, `${name}: the ${bar} went from ${previous[bar]} to ${layout[bar]} px since the previous run`);
    }
  }
  writeFileSync(file, `${JSON.stringify(layout, null, 2)}\n`);
}

async function ask(page, words) {
  await page.fill("#input", words);
  await page.press("#input", "Enter");
}

/** Resolves once `check` holds, polling the workspace (a file the engine writes). */
async function until(check, ms = 15_000) {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > ms) throw new Error("the condition did not hold in time");
    await new Promise((done) => setTimeout(done, 20));
  }
}

const slowText = (words, delay) => ({ kind: "stream", chunks: words.map((w) => ({ type: "text", text: w })), delay_ms: delay });

test("a streamed answer with a highlighted code block and a copy button", async (t) => {
  const answer = [
    "Here is the **entry point**:\n\n",
    "```rust\nfn main() {\n",
    '    println!("hello");\n',
    "}\n```\n\n",
    "Run it with `cargo run`.",
  ];
  const { page, copied, errors } = await open(t, [slowText(answer, 150)]);
  await ask(page, "show me main");
  const reply = page.locator(".message.assistant").first();
  // The answer shows while it is being written.
  await reply.getByText("entry point").waitFor();
  assert.equal(await page.locator("#stop").isVisible(), true, "still working while the first words show");
  assert.match(await page.locator("#status").innerText(), /working/);
  await page.locator("#stop[hidden]").waitFor({ state: "attached" });
  await reply.getByText("cargo run").waitFor();
  assert.equal(await page.locator(".message.user").innerText(), "show me main");
  const code = reply.locator(".code code.language-rust");
  assert.equal(await code.innerText(), 'fn main() {\n    println!("hello");\n}');
  assert.equal(await code.locator(".hljs-keyword").first().innerText(), "fn");
  assert.ok((await code.locator(".hljs-string").count()) > 0, "the string is highlighted");
  await reply.getByRole("button", { name: "Copy code" }).click();
  await reply.getByRole("button", { name: "Copy code" }).getByText("Copied").waitFor();
  assert.deepEqual(copied, ['fn main() {\n    println!("hello");\n}']);
  await shot(page, "01-streamed-answer");
  assert.deepEqual(errors, []);
});

test("a command card shows its output while the command runs", async (t) => {
  const { page, workspace, errors } = await open(t, [
    // It runs until the test has seen its first line (a file it waits for).
    toolCall("c1", "bash", { command: "echo line1; while [ ! -e go ]; do sleep 0.05; done; echo line2" }),
    text("Both lines printed."),
  ]);
  await ask(page, "run it");
  const request = page.locator(".card.permission");
  await request.waitFor();
  assert.match(await request.locator(".command").innerText(), /echo line1; while/);
  await shot(page, "02-command-permission");
  await request.getByRole("button", { name: "Yes, allow it this once" }).click();
  const card = page.locator(".card.tool");
  await card.locator(".output").getByText("line1").waitFor();
  assert.equal(await card.locator(".state").innerText(), "running");
  assert.equal(await card.locator(".icon").innerText(), "▶️");
  await shot(page, "03-command-running");
  writeFileSync(join(workspace, "go"), "");
  await card.locator(".state").getByText(/^done/).waitFor();
  assert.equal(await card.locator(".output").textContent(), "line1\nline2\n");
  await page.getByText("Both lines printed.").waitFor();
  assert.match(await request.locator(".answer").innerText(), /You chose: Yes, allow it this once/);
  await shot(page, "04-command-done");
  assert.deepEqual(errors, []);
});

test("an edit is approved from its diff, and its card shows the change and opens the file", async (t) => {
  const { page, workspace, opened, errors } = await open(t, [
    toolCall("e1", "edit", { path: "greet.py", old_string: 'return "hi"', new_string: 'return "hello"' }),
    text("Changed the greeting."),
  ]);
  writeFileSync(join(workspace, "greet.py"), 'def greet():\n    return "hi"\n');
  await ask(page, "say hello instead");
  const request = page.locator(".card.permission");
  await request.waitFor();
  // The change is shown before it is made.
  assert.equal(await request.locator(".diff .removed").innerText(), '-    return "hi"');
  assert.equal(await request.locator(".diff .added").innerText(), '+    return "hello"');
  assert.equal(readFileSync(join(workspace, "greet.py"), "utf8"), 'def greet():\n    return "hi"\n');
  await shot(page, "05-edit-permission");
  // The first option has the focus: Enter approves it.
  await page.keyboard.press("Enter");
  await page.getByText("Changed the greeting.").waitFor();
  assert.equal(readFileSync(join(workspace, "greet.py"), "utf8"), 'def greet():\n    return "hello"\n');
  const card = page.locator(".card.tool");
  assert.equal(await card.locator(".diff .added").innerText(), '+    return "hello"');
  await card.locator("button.location").click();
  await until(() => opened.length > 0);
  assert.equal(opened[0].path, join(workspace, "greet.py"));
  await shot(page, "06-edit-done");
  assert.deepEqual(errors, []);
});

test("allow_always says what it covers, and what it covers runs without asking again", async (t) => {
  const { page, workspace, errors } = await open(t, [
    toolCall("w1", "write", { path: "a.txt", content: "a\n" }),
    toolCall("w2", "write", { path: "b.txt", content: "b\n" }),
    text("Both written."),
  ]);
  await ask(page, "write two files");
  const request = page.locator(".card.permission");
  await request.waitFor();
  const always = request.locator(".option.allow_always");
  assert.equal(await always.locator(".covers").innerText(), "Always covers: `write` on any file in this project");
  await shot(page, "07-allow-always");
  await always.locator("button").click();
  await page.getByText("Both written.").waitFor();
  assert.equal(await page.locator(".card.permission").count(), 1, "the second write was not asked about");
  assert.equal(readFileSync(join(workspace, "b.txt"), "utf8"), "b\n");
  assert.deepEqual(errors, []);
});

test("a rejection's reason reaches the model", async (t) => {
  const { page, mock, workspace, errors } = await open(t, [
    toolCall("c1", "bash", { command: "rm -f notes.txt" }),
    text("Understood, I will keep it."),
  ]);
  writeFileSync(join(workspace, "notes.txt"), "keep me\n");
  await ask(page, "clean up");
  const request = page.locator(".card.permission");
  await request.waitFor();
  await request.getByRole("textbox", { name: /message to the model/ }).fill("notes.txt holds my notes");
  await shot(page, "08-reject-with-reason");
  const deny = request.locator(".option.reject_once button").first();
  await deny.click();
  await page.getByText("Understood, I will keep it.").waitFor();
  assert.match(await request.locator(".answer").innerText(), /notes\.txt holds my notes/);
  assert.equal(readFileSync(join(workspace, "notes.txt"), "utf8"), "keep me\n");
  const requests = await mock.requests();
  const told = JSON.stringify(requests[1].body.messages);
  assert.match(told, /notes\.txt holds my notes/, "the model reads the reason");
  assert.deepEqual(errors, []);
});

test("Stop, and Esc, interrupt the answer being written", async (t) => {
  const slow = slowText(Array.from({ length: 400 }, () => "slow "), 25);
  const { page, errors } = await open(t, [slow, slow]);
  await ask(page, "talk");
  await page.locator(".message.assistant").waitFor();
  await page.locator("#stop:not([hidden])").click();
  await page.locator(".note.stopped").waitFor();
  await page.locator("#stop[hidden]").waitFor({ state: "attached" });
  await shot(page, "09-stopped");
  await ask(page, "again");
  await page.locator(".message.assistant").nth(1).waitFor();
  await page.keyboard.press("Escape");
  await page.locator(".note.stopped").nth(1).waitFor();
  assert.deepEqual(errors, []);
});

test("a message sent while coder works steers the running task, with its receipt", async (t) => {
  const { page, mock, workspace, errors } = await open(
    t,
    [
      toolCall("c1", "bash", { command: "echo started; while [ ! -e steered ]; do sleep 0.05; done; echo done" }),
      text("Done, with the tests too."),
    ],
    { preset: "yolo" },
  );
  await ask(page, "make it");
  await page.locator(".card.tool .output").getByText("started").waitFor();
  assert.equal(await page.locator("#busy-send").isVisible(), true, "the choice shows while busy");
  assert.equal(await page.locator("#busy-send").inputValue(), "steer");
  await ask(page, "also run the tests");
  const steer = page.locator(".message.user").nth(1);
  await steer.locator(".receipt").getByText(/steering|steered/).waitFor();
  await shot(page, "10-steering");
  writeFileSync(join(workspace, "steered"), "");
  await page.getByText("Done, with the tests too.").waitFor();
  assert.equal(await steer.locator(".receipt").innerText(), "steered");
  const requests = await mock.requests();
  assert.equal(requests.length, 2);
  assert.match(JSON.stringify(requests[1].body.messages.at(-1)), /also run the tests/);
  await shot(page, "11-steered");
  assert.deepEqual(errors, []);
});

test("a conversation the model creates shows as a nested thread, with the handoff", async (t) => {
  const { page, errors } = await open(t, [
    toolCall("c1", "conv_create", { user_instruction: "Summarise the plan." }),
    text("The plan, summarised."),
    text("Done with the handoff."),
  ]);
  await ask(page, "delegate");
  await page.getByText("Done with the handoff.").waitFor();
  const nested = page.locator("details.thread");
  assert.equal(await nested.count(), 1);
  assert.match(await nested.locator("summary").innerText(), /Summarise the plan\./);
  assert.equal(await nested.locator(".message.assistant").innerText(), "The plan, summarised.");
  await page.locator(".note.handoff").waitFor();
  // The root's own answer is outside the thread.
  assert.equal(await page.locator("#log > .message.assistant").last().innerText(), "Done with the handoff.");
  await shot(page, "12-nested");
  assert.deepEqual(errors, []);
});

test("after a reload the view is whole again, a waiting request included", async (t) => {
  const { page, workspace, errors } = await open(t, [
    text("First answer."),
    toolCall("w1", "write", { path: "after.txt", content: "x\n" }),
    text("Written after the reload."),
  ]);
  await ask(page, "first");
  await page.getByText("First answer.").waitFor();
  await ask(page, "write after");
  await page.locator(".card.permission").waitFor();
  const before = await page.locator("#log").innerText();
  await page.reload();
  await page.locator(".card.permission .options").waitFor();
  assert.equal(await page.locator("#log").innerText(), before, "the same log, rebuilt from the engine");
  await shot(page, "13-reloaded");
  await page.locator(".card.permission").getByRole("button", { name: "Yes, allow it this once" }).click();
  await page.getByText("Written after the reload.").waitFor();
  assert.equal(readFileSync(join(workspace, "after.txt"), "utf8"), "x\n");
  assert.deepEqual(errors, []);
});

test("/ completes the engine's commands and skills, @ its workspace paths, from the keyboard", async (t) => {
  const setup = (workspace) => {
    mkdirSync(join(workspace, ".coder", "commands"), { recursive: true });
    writeFileSync(join(workspace, ".coder", "commands", "review.md"), "---\ndescription: Review a file\n---\nReview $ARGUMENTS\n");
    mkdirSync(join(workspace, ".coder", "skills", "release-notes"), { recursive: true });
    writeFileSync(
      join(workspace, ".coder", "skills", "release-notes", "SKILL.md"),
      "---\nname: release-notes\ndescription: Write release notes\n---\nHow to write them.\n",
    );
    mkdirSync(join(workspace, "src"));
    writeFileSync(join(workspace, "src", "parser.rs"), "fn parse() {}\n");
  };
  const { page, mock, errors } = await open(t, [text("Read it.")], { setup });
  await page.locator("#input").focus();
  await page.keyboard.type("/");
  const menu = page.locator("#completions");
  await menu.locator("li").first().waitFor();
  const names = await menu.locator(".name").allInnerTexts();
  assert.ok(names.includes("/help"), names.join(" "));
  assert.ok(names.includes("/review"), "a custom command");
  assert.ok(names.includes("release-notes"), "a skill");
  assert.equal(await page.locator("#input").getAttribute("aria-expanded"), "true");
  await page.keyboard.type("rev");
  await menu.locator(".name", { hasText: "/review" }).waitFor();
  assert.equal(await menu.locator("li").count(), 1);
  assert.match(await menu.locator(".detail").innerText(), /Review a file/);
  await shot(page, "14-slash-completion");
  // Esc closes the menu and leaves the text.
  await page.keyboard.press("Escape");
  assert.equal(await menu.isHidden(), true);
  assert.equal(await page.inputValue("#input"), "/rev");

  await page.fill("#input", "");
  await page.keyboard.type("explain @pars");
  await menu.locator(".name", { hasText: "src/parser.rs" }).waitFor();
  // The letters that matched are marked.
  assert.equal((await menu.locator("li").first().locator("mark").allInnerTexts()).join(""), "pars");
  await shot(page, "15-path-completion");
  await page.keyboard.press("Enter");
  assert.equal(await page.inputValue("#input"), "explain @src/parser.rs ");
  await page.keyboard.press("Enter");
  await page.getByText("Read it.").waitFor();
  const [request] = await mock.requests();
  assert.match(JSON.stringify(request.body.messages), /fn parse\(\) \{\}/, "the engine attached the file");
  assert.deepEqual(errors, []);
});

test("an image pasted into the input box is sent with the message; the selection is attached with one click", async (t) => {
  const selection = "@src/lib.rs (lines 3-4):\n```rust\nlet a = 1;\n```\n";
  const { page, mock, errors } = await open(t, [text("A red square.")], { actions: { selection: () => selection } });
  await page.click("#attach");
  await page.waitForFunction(() => document.querySelector("#input").value.includes("src/lib.rs"));
  assert.equal(await page.inputValue("#input"), selection);
  await page.fill("#input", "what is this?");
  // A 1×1 red PNG, pasted as a browser pastes a copied image.
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
  await page.evaluate((data) => {
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], "red.png", { type: "image/png" }));
    document.querySelector("#input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true }));
  }, png);
  await page.locator("#attachments img").waitFor();
  await shot(page, "16-image-attached");
  await page.press("#input", "Enter");
  await page.getByText("A red square.").waitFor();
  assert.equal(await page.locator("#attachments img").count(), 0, "sent, no longer waiting");
  assert.equal(await page.locator(".message.user img").count(), 1);
  const [request] = await mock.requests();
  assert.match(JSON.stringify(request.body.messages), new RegExp(`data:image/png;base64,${png.slice(0, 40).replace(/[+/]/g, "\\$&")}`));
  assert.deepEqual(errors, []);
});

test("the files a turn changed are listed at its end, to keep or to undo with the engine's /undo", async (t) => {
  const { page, workspace, opened, errors } = await open(
    t,
    [toolCall("w1", "write", { path: "made.txt", content: "new\n" }), text("Made it.")],
    { preset: "yolo" },
  );
  execFileSync("git", ["init", "-q"], { cwd: workspace });
  await ask(page, "make a file");
  const card = page.locator(".card.changed");
  await card.waitFor();
  assert.equal(await card.locator(".title").innerText(), "Changed 1 file");
  assert.equal(readFileSync(join(workspace, "made.txt"), "utf8"), "new\n");
  await card.locator("button.location").click();
  await until(() => opened.length > 0);
  assert.equal(opened[0].path, join(workspace, "made.txt"));
  await shot(page, "17-changed-files");
  await card.getByRole("button", { name: "Undo these changes" }).click();
  await card.locator(".answer").waitFor();
  assert.equal(existsSync(join(workspace, "made.txt")), false, "the turn was undone");
  assert.deepEqual(errors, []);
});

test("rewind to a message shows what it would change, then takes the conversation and its files back", async (t) => {
  const { page, workspace, errors } = await open(
    t,
    [text("First answer."), toolCall("w1", "write", { path: "later.txt", content: "later\n" }), text("Wrote later.txt.")],
    { preset: "yolo" },
  );
  execFileSync("git", ["init", "-q"], { cwd: workspace });
  await ask(page, "first question");
  await page.getByText("First answer.").waitFor();
  await ask(page, "write later.txt");
  await page.getByText("Wrote later.txt.").waitFor();
  assert.equal(existsSync(join(workspace, "later.txt")), true);
  // The saved sessions are listed with their titles.
  await page.locator("#sessions").focus();
  await page.waitForFunction(() => document.querySelectorAll("#sessions option").length > 1);
  assert.match(await page.locator("#sessions option").nth(1).innerText(), /^first question · /);
  // From the keyboard: the message takes the focus, Tab reaches its actions.
  const second = page.locator(".message.user", { hasText: "write later.txt" });
  await second.focus();
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.textContent), "Rewind to here");
  await page.keyboard.press("Enter");
  const preview = page.locator(".card.rewind");
  await preview.waitFor();
  assert.match(await preview.locator("pre").innerText(), /removed: .*later\.txt/);
  assert.equal(existsSync(join(workspace, "later.txt")), true, "a preview changes nothing");
  await shot(page, "18-rewind-preview");
  await preview.getByRole("button", { name: "Rewind" }).click();
  // The view shows the conversation as it is now: the first turn only.
  await page.waitForFunction(() => !document.body.textContent.includes("Wrote later.txt."));
  await page.getByText("First answer.").waitFor();
  assert.equal(await page.locator(".message.user", { hasText: "write later.txt" }).count(), 0);
  assert.equal(existsSync(join(workspace, "later.txt")), false, "the file it made is gone");
  assert.deepEqual(errors, []);
});

test("the header shows the permission preset and the mode, and New conversation starts one as /new does", async (t) => {
  // A configured mode the page's picker does not start on.
  const setup = (workspace) =>
    writeFileSync(join(workspace, ".coder", "config.json"), JSON.stringify({ permissions: { preset: "auto-edit" }, mode: "plan" }));
  const { page, mock, errors } = await open(t, [text("First answer."), text("Second answer.")], { setup });
  // The preset and the mode the engine holds show from the start.
  await page.waitForFunction(() => document.querySelector("#preset").textContent === "auto-edit");
  assert.equal(await page.locator("#mode").inputValue(), "plan");
  await ask(page, "/permissions strict");
  await page.waitForFunction(() => document.querySelector("#preset").textContent === "strict");
  await ask(page, "first question");
  await page.getByText("First answer.").waitFor();
  await page.getByRole("button", { name: "New conversation" }).click();
  await page.locator(".note.command", { hasText: /conversation/i }).last().waitFor();
  assert.equal(await page.locator(".message.user").last().innerText(), "/new");
  await shot(page, "20-new-conversation");
  await ask(page, "second question");
  await page.getByText("Second answer.").waitFor();
  // The new conversation's model does not read the first one's history.
  const requests = await mock.requests();
  const told = JSON.stringify(requests[1].body.messages);
  assert.match(told, /second question/);
  assert.doesNotMatch(told, /first question/, "the second question went to a new conversation");
  assert.equal(await page.locator("#preset").innerText(), "strict", "the preset stays the session's");
  assert.deepEqual(errors, []);
});

test("the view takes VS Code's theme colours: light and high contrast", async (t) => {
  const { page, errors } = await open(t, [toolCall("c1", "bash", { command: "rm -f themed.txt" }), text("Done.")]);
  await ask(page, "run it");
  await page.locator(".card.permission").waitFor();
  // VS Code sets its theme's colours as variables on the page's root element.
  const themes = {
    light: {
      "--vscode-foreground": "#3b3b3b",
      "--vscode-sideBar-background": "#f8f8f8",
      "--vscode-button-background": "#005fb8",
      "--vscode-button-foreground": "#ffffff",
      "--vscode-input-background": "#ffffff",
      "--vscode-editorWarning-foreground": "#bf8803",
    },
    "high-contrast": {
      "--vscode-foreground": "#ffffff",
      "--vscode-sideBar-background": "#000000",
      "--vscode-button-background": "#000000",
      "--vscode-button-foreground": "#ffffff",
      "--vscode-input-background": "#000000",
      "--vscode-editorWarning-foreground": "#ffd700",
    },
  };
  const rgb = (hex) => `rgb(${[1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(", ")})`;
  for (const [name, colours] of Object.entries(themes)) {
    const seen = await page.evaluate((colours) => {
      for (const [key, value] of Object.entries(colours)) document.documentElement.style.setProperty(key, value);
      const style = (selector) => getComputedStyle(document.querySelector(selector));
      return {
        text: style("body").color,
        background: style("body").backgroundColor,
        button: style(".card.permission .options button").backgroundColor,
        input: style("#input").backgroundColor,
        border: style(".card.permission").borderTopColor,
      };
    }, colours);
    assert.deepEqual(seen, {
      text: rgb(colours["--vscode-foreground"]),
      background: rgb(colours["--vscode-sideBar-background"]),
      button: rgb(colours["--vscode-button-background"]),
      input: rgb(colours["--vscode-input-background"]),
      border: rgb(colours["--vscode-editorWarning-foreground"]),
    }, name);
    await shot(page, `19-theme-${name}`);
  }
  assert.deepEqual(errors, []);
});
