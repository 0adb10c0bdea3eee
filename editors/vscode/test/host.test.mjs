// The extension host's side (dist/extension.js) under a recording fake `vscode`
// (fake-vscode.mjs), starting the real `coder lsp` against the scripted model: activation
// and the chat view's traffic, finding the binary and each way that fails, settings and the
// SecretStorage key in `initializationOptions`, workspace trust, edits of open documents
// through `workspace/applyEdit`, and a restart after the server dies.

import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";

import { fakeDocument, fakeEditor, fakeVscode, fakeWebview, loadExtension } from "./fake-vscode.mjs";
import { coderBin, startMock, text, toolCall } from "./harness.mjs";

// The person's own state and logs: folders of this test file's, never the real home's.
const home = mkdtempSync(join(tmpdir(), "coder-home-"));
process.env.HOME = home;
process.env.CODER_HOME = home;
process.env.CODER_LOG = "info";
delete process.env.OPENAI_API_KEY;
delete process.env.OPENAI_BASE_URL;
process.once("exit", () => rmSync(home, { recursive: true, force: true }));

function folder(t, preset) {
  const dir = mkdtempSync(join(tmpdir(), "coder-ws-"));
  t.after(() => rmSync(dir, { recursive: true, force: true, maxRetries: 3 }));
  if (preset) {
    mkdirSync(join(dir, ".coder"));
    writeFileSync(join(dir, ".coder", "config.json"), JSON.stringify({ permissions: { preset } }));
  }
  return dir;
}

/** The extension activated in a fake VS Code; it is deactivated (its server stopped) when
 * the test ends. */
async function activate(t, options) {
  const fake = fakeVscode(options);
  const extension = loadExtension(fake);
  const api = extension.activate(fake.context);
  t.after(async () => {
    for (const subscription of fake.context.subscriptions) subscription.dispose();
    await api.server.stop();
  });
  await api.ready;
  return { fake, api };
}

/** The chat view as VS Code resolves it, with the page loaded: resolves with its hello. */
async function openView(fake) {
  const view = fakeWebview();
  const provider = fake.providers.get("coder.chat");
  provider.resolveWebviewView({
    webview: view.webview,
    visible: true,
    onDidChangeVisibility: () => ({ dispose() {} }),
    onDidDispose: () => ({ dispose() {} }),
  });
  view.send({ type: "ready" });
  const hello = await waitFor(() => view.posted.find((m) => m.type === "hello"));
  let id = 0;
  /** Calls a method of `coder lsp` as the page does. */
  const call = async (method, params) => {
    const request = ++id;
    view.send({ type: "request", id: request, method, params });
    const response = await waitFor(() => view.posted.find((m) => m.type === "response" && m.id === request));
    if (response.error) throw Object.assign(new Error(response.error.message), response.error);
    return response.result;
  };
  const events = () => view.posted.filter((m) => m.type === "event").map((m) => m.event);
  return { view, hello, call, events };
}

async function waitFor(check, ms = 20_000) {
  const started = Date.now();
  for (;;) {
    const found = check();
    if (found) return found;
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms: ${check}`);
    await new Promise((done) => setTimeout(done, 20));
  }
}

/** Sends `words` from the view and resolves with the task's last message. */
async function converse(view, root, words) {
  const from = view.events().length;
  const { taskId } = await view.call("conversation/send", { conversationId: root, text: words });
  const end = await waitFor(() => view.events().slice(from).find((e) => e.taskId === taskId && e.type === "task_complete"));
  return end.lastAgentMessage;
}

const modelSettings = (url) => ({ provider: "openai", model: "mock-model", baseUrl: `${url}/v1` });

test("activation starts coder from coder.serverPath with the settings, the stored key and trust; the view talks to it", async (t) => {
  const mock = await startMock(t, [text("Hello from the model.")]);
  const dir = folder(t);
  const { fake, api } = await activate(t, {
    folder: dir,
    settings: { serverPath: coderBin, ...modelSettings(mock.url) },
    secrets: { "coder.apiKey": "sk-stored" },
  });
  assert.deepEqual(fake.messages("window.showErrorMessage"), []);
  assert.ok(api.server.pid, "the server runs");
  const view = await openView(fake);
  // The page: scripts only with its nonce, resources only from the extension's dist/.
  assert.match(view.view.webview.html, /script-src &#39;nonce-[A-Za-z0-9+/=]+&#39;"/);
  assert.match(view.view.webview.html, /src="vscode-resource:[^"]*\/dist\/webview\.js"/);
  assert.equal(view.hello.sessionId, api.server.sessionId);
  assert.equal(view.hello.workspace, dir);
  assert.equal(await converse(view, view.hello.root, "hi"), "Hello from the model.");
  const [request] = await mock.requests();
  assert.equal(request.headers.authorization, "Bearer sk-stored", "the key from SecretStorage");
  assert.equal(request.body.model, "mock-model", "the model from the settings");
  // The session is kept for the window's next start.
  assert.equal(fake.context.workspaceState.get("coder.sessionId"), api.server.sessionId);
});

test("coder is found on PATH, its version checked; each way of not finding it says what to do", async (t) => {
  const bin = mkdtempSync(join(tmpdir(), "coder-bin-"));
  t.after(() => rmSync(bin, { recursive: true, force: true }));
  const script = (name, body) => {
    const path = join(bin, name);
    mkdirSync(path);
    writeFileSync(join(path, "coder"), `#!/bin/sh\n${body}\n`);
    chmodSync(join(path, "coder"), 0o755);
    return path;
  };
  const old = script("old", 'echo "coder 0.0.9"');
  const other = script("other", 'echo "Coder CLI v2.3.4"');
  const real = join(bin, "real");
  mkdirSync(real);
  symlinkSync(coderBin, join(real, "coder"));
  const path = process.env.PATH;
  t.after(() => (process.env.PATH = path));
  const dir = folder(t);

  const failure = async (settings, pathEnv) => {
    process.env.PATH = pathEnv;
    const { fake } = await activate(t, { folder: dir, settings, choices: ["Open Settings"] });
    const [message] = fake.messages("window.showErrorMessage");
    assert.ok(message, "a message is shown");
    // Its button opens the setting.
    assert.ok(
      fake.calls.some((c) => c.name === "commands.executeCommand" && c.args[0] === "workbench.action.openSettings" && c.args[1] === "coder.serverPath"),
    );
    return message;
  };
  assert.match(await failure({ serverPath: join(bin, "missing") }, path), /`coder.serverPath` is .*missing, which is not an executable file/);
  assert.match(await failure({ serverPath: join(old, "coder") }, path), /is coder 0\.0\.9; this extension needs 0\.1\.0 or newer: update it/);
  assert.match(await failure({ serverPath: join(other, "coder") }, path), /is not coder's agent: its --version printed "Coder CLI v2\.3\.4"/);
  // Without the setting, PATH is searched, and a program of that name that is not coder is
  // passed over for one that is.
  assert.match(await failure({}, other), /coder was not found: .* is not coder's agent.*Set `coder.serverPath`/);
  assert.match(await failure({}, join(bin, "empty")), /coder was not found on PATH\. Set `coder.serverPath`/);
  process.env.PATH = `${other}:${real}:${path}`;
  const { fake, api } = await activate(t, { folder: dir, settings: {} });
  assert.deepEqual(fake.messages("window.showErrorMessage"), []);
  assert.ok(api.server.pid);
});

test("coder: Set API Key keeps the key in SecretStorage, and the server started again uses it", async (t) => {
  const mock = await startMock(t, [text("With the new key.")]);
  const { fake, api } = await activate(t, {
    folder: folder(t),
    settings: { serverPath: coderBin, ...modelSettings(mock.url) },
    inputs: ["sk-typed"],
  });
  const first = api.server.pid;
  await fake.commands.get("coder.setApiKey")();
  const [asked] = fake.calls.filter((c) => c.name === "window.showInputBox").map((c) => c.args[0]);
  assert.equal(asked.password, true, "the key is not shown as it is typed");
  assert.deepEqual(fake.calls.find((c) => c.name === "secrets.store").args, ["coder.apiKey", "sk-typed"]);
  assert.notEqual(api.server.pid, first, "a new server");
  const view = await openView(fake);
  assert.equal(await converse(view, view.hello.root, "hi"), "With the new key.");
  assert.equal((await mock.requests())[0].headers.authorization, "Bearer sk-typed");
});

test("an untrusted VS Code workspace is untrusted for coder: its own configuration does not loosen the rules", async (t) => {
  const write = (id, path) => toolCall(id, "write", { path, content: "x\n" });
  const mock = await startMock(t, [write("w1", "trusted.txt"), text("Written."), write("w2", "untrusted.txt"), text("Asked.")]);
  const dir = folder(t, "yolo");
  const settings = { serverPath: coderBin, ...modelSettings(mock.url) };

  // Trusted: the workspace's yolo preset applies, and the write runs unasked.
  const trusted = await activate(t, { folder: dir, settings, trusted: true });
  let view = await openView(trusted.fake);
  assert.equal(await converse(view, view.hello.root, "write"), "Written.");
  assert.equal(view.events().filter((e) => e.type === "permission_requested").length, 0);
  assert.equal(readFileSync(join(dir, "trusted.txt"), "utf8"), "x\n");
  await trusted.api.server.stop();

  // Untrusted: the same workspace's preset does not apply; the write is asked about, and the
  // view's answer is what the engine gets.
  const untrusted = await activate(t, { folder: dir, settings, trusted: false });
  view = await openView(untrusted.fake);
  const done = converse(view, view.hello.root, "write again");
  const asked = await waitFor(() => view.events().find((e) => e.type === "permission_requested"));
  view.view.send({ type: "answer", requestId: asked.requestId, decision: { decision: "option", optionId: "deny", message: "not now" } });
  assert.equal(await done, "Asked.");
  assert.throws(() => readFileSync(join(dir, "untrusted.txt")), /ENOENT/);
});

test("an edit of a document open in the editor goes through workspace/applyEdit", async (t) => {
  const mock = await startMock(t, [
    toolCall("e1", "edit", { path: "open.txt", old_string: "before", new_string: "after" }),
    text("Edited."),
  ]);
  const dir = folder(t, "yolo");
  const file = join(dir, "open.txt");
  writeFileSync(file, "line one\nbefore\n");
  // The editor holds the file open, with an unsaved line the agent reads too.
  const document = {
    uri: { scheme: "file", fsPath: file, path: file, toString: () => pathToFileURL(file).href },
    languageId: "plaintext",
    version: 3,
    getText: () => "line one\nbefore\nunsaved\n",
  };
  const { fake } = await activate(t, {
    folder: dir,
    settings: { serverPath: coderBin, ...modelSettings(mock.url) },
    documents: [document],
  });
  const view = await openView(fake);
  assert.equal(await converse(view, view.hello.root, "edit it"), "Edited.");
  const [edit] = fake.calls.filter((c) => c.name === "workspace.applyEdit").map((c) => c.args[0]);
  assert.ok(edit, "the edit went to the editor");
  assert.deepEqual(
    edit.entries.map((e) => [e.uri.fsPath, e.range.start.line, e.range.end.line, e.newText]),
    [[file, 1, 2, "after\n"]],
  );
  // The file on disk is the editor's business now (it saves it).
  assert.equal(readFileSync(file, "utf8"), "line one\nbefore\n");
});

test("a server that dies is started again on the same session, says so once with its log, and the view is whole", async (t) => {
  const mock = await startMock(t, [text("I will remember 42."), text("It was 42.")]);
  const { fake, api } = await activate(t, {
    folder: folder(t),
    settings: { serverPath: coderBin, ...modelSettings(mock.url) },
  });
  const view = await openView(fake);
  assert.equal(await converse(view, view.hello.root, "remember 42"), "I will remember 42.");
  const session = api.server.sessionId;
  const first = api.server.pid;
  process.kill(first, "SIGKILL");
  const hello = await waitFor(() => view.view.posted.find((m) => m.type === "hello" && m.epoch === view.hello.epoch + 1));
  const warnings = await waitFor(() => fake.messages("window.showWarningMessage").length > 0 && fake.messages("window.showWarningMessage"));
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /coder was stopped by SIGKILL; it was started again and the conversation resumed\. Its last log lines:\n/);
  assert.notEqual(api.server.pid, first);
  assert.equal(hello.sessionId, session, "the same session");
  assert.equal(hello.root, view.hello.root, "the same conversation");
  assert.deepEqual(
    hello.earlier.map((e) => [e.role, e.text]),
    [["user", "remember 42"], ["assistant", "I will remember 42."]],
  );
  assert.equal(await converse(view, hello.root, "what was it?"), "It was 42.");
  // The model read the conversation from before the restart.
  const requests = await mock.requests();
  assert.match(JSON.stringify(requests[1].body.messages), /I will remember 42\./);
});

test("the status bar shows the work and the approvals waiting; a hidden view's request is announced", async (t) => {
  const mock = await startMock(t, [toolCall("w1", "write", { path: "w.txt", content: "w\n" }), text("Done.")]);
  const { fake } = await activate(t, {
    folder: folder(t, "balanced"),
    settings: { serverPath: coderBin, ...modelSettings(mock.url) },
  });
  const [item] = fake.statusItems;
  assert.equal(item.text, "$(comment-discussion) coder");
  assert.equal(item.command, "coder.focus");
  const view = fakeWebview();
  // The view exists but is hidden (another view of the side bar is shown).
  fake.providers.get("coder.chat").resolveWebviewView({
    webview: view.webview,
    visible: false,
    onDidChangeVisibility: () => ({ dispose() {} }),
    onDidDispose: () => ({ dispose() {} }),
  });
  view.send({ type: "ready" });
  const hello = await waitFor(() => view.posted.find((m) => m.type === "hello"));
  view.send({ type: "request", id: 1, method: "conversation/send", params: { conversationId: hello.root, text: "write" } });
  const asked = await waitFor(() => view.posted.find((m) => m.type === "event" && m.event.type === "permission_requested"));
  await waitFor(() => item.text === "$(bell-dot) coder: 1 waiting");
  assert.equal(item.backgroundColor.id, "statusBarItem.warningBackground");
  const [announced] = await waitFor(() => fake.messages("window.showInformationMessage").length > 0 && fake.messages("window.showInformationMessage"));
  assert.match(announced, /^coder asks: Edit .*w\.txt$/);
  view.send({ type: "answer", requestId: asked.event.requestId, decision: { decision: "option", optionId: "allow_once" } });
  await waitFor(() => view.posted.some((m) => m.type === "event" && m.event.type === "task_complete"));
  await waitFor(() => item.text === "$(comment-discussion) coder");
});

test("Ask coder about this and Explain this error put the code with its file and lines into the view", async (t) => {
  const mock = await startMock(t, []);
  const dir = folder(t);
  const file = join(dir, "main.rs");
  const document = fakeDocument(file, "fn main() {\n    let x = 1;\n    println!(\"{y}\");\n}\n", { languageId: "rust" });
  const { fake } = await activate(t, {
    folder: dir,
    settings: { serverPath: coderBin, ...modelSettings(mock.url) },
    documents: [document],
  });
  const view = await openView(fake);
  const provider = fake.providers.get("codeActions");
  const { Range } = fake.vscode;
  // A selection: one action; a diagnostic under the cursor: one more.
  const diagnostic = { message: "cannot find value `y` in this scope", range: new Range(2, 15, 2, 16) };
  const actions = provider.provideCodeActions(document, new Range(1, 4, 3, 0), { diagnostics: [diagnostic] });
  assert.deepEqual(actions.map((a) => a.title), ["Ask coder about this", "Explain this error with coder: cannot find value `y` in this scope"]);
  assert.deepEqual(provider.provideCodeActions(document, new Range(1, 4, 1, 4), { diagnostics: [] }), [], "nothing to ask about");
  await fake.commands.get(actions[0].command.command)(...actions[0].command.arguments);
  await fake.commands.get(actions[1].command.command)(...actions[1].command.arguments);
  const prefills = view.view.posted.filter((m) => m.type === "prefill").map((m) => m.text);
  assert.deepEqual(prefills, [
    "@main.rs (lines 2-3):\n```rust\n    let x = 1;\n    println!(\"{y}\");\n```\n",
    "Explain this error and how to fix it: cannot find value `y` in this scope\n@main.rs (lines 3-3):\n```rust\n    println!(\"{y}\");\n```\n",
  ]);
});

test("a binary bundled in the extension for this platform comes before PATH, unless it is not coder", async (t) => {
  const { findServer } = await import("../dist/host.mjs");
  const extension = mkdtempSync(join(tmpdir(), "coder-ext-"));
  t.after(() => rmSync(extension, { recursive: true, force: true }));
  const platformDir = join(extension, "bin", `${process.platform}-${process.arch}`);
  mkdirSync(platformDir, { recursive: true });
  symlinkSync(coderBin, join(platformDir, "coder"));
  const found = await findServer({ extensionPath: extension, pathEnv: "" });
  assert.deepEqual([found.found, found.source, found.path], [true, "bundled", join(platformDir, "coder")]);
  // A broken bundle (another program): PATH's coder is used, the bundle is not started.
  rmSync(join(platformDir, "coder"));
  writeFileSync(join(platformDir, "coder"), '#!/bin/sh\necho "not it"\n');
  chmodSync(join(platformDir, "coder"), 0o755);
  const onPath = mkdtempSync(join(tmpdir(), "coder-path-"));
  t.after(() => rmSync(onPath, { recursive: true, force: true }));
  symlinkSync(coderBin, join(onPath, "coder"));
  const fallback = await findServer({ extensionPath: extension, pathEnv: onPath });
  assert.deepEqual([fallback.found, fallback.source], [true, "path"]);
});

test("review mode: an edit opens in the diff editor; a rejected hunk reaches the model, an accepted change is written", async (t) => {
  const lines = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`);
  const before = `${lines.join("\n")}\n`;
  const after = before.replace("line 2\n", "line two\n").replace("line 19\n", "line nineteen\n");
  const edit = (id) => toolCall(id, "write", { path: "notes.txt", content: after });
  const mock = await startMock(t, [edit("w1"), text("I will keep line 19."), edit("w2"), text("Written whole.")]);
  const dir = folder(t, "balanced");
  writeFileSync(join(dir, "notes.txt"), before);
  const editor = fakeEditor(fakeDocument(join(dir, "notes.txt"), before));
  const { fake } = await activate(t, {
    folder: dir,
    settings: { serverPath: coderBin, ...modelSettings(mock.url), editReview: "review" },
    editors: [editor],
  });
  const view = await openView(fake);
  const lenses = fake.providers.get("codeLens:coder-review");
  const content = fake.providers.get("content:coder-review");

  /** Waits for the diff editor to open; returns its two sides and the lenses' titles. */
  const opened = async (nth) => {
    const diff = await waitFor(() => fake.calls.filter((c) => c.name === "commands.executeCommand" && c.args[0] === "vscode.diff")[nth]);
    const [, left, right, title] = diff.args;
    assert.equal(title, "notes.txt: coder's proposed change (review)");
    assert.equal(content.provideTextDocumentContent(left), before);
    assert.equal(content.provideTextDocumentContent(right), after);
    const shown = () => lenses.provideCodeLenses({ uri: right });
    return { shown, titles: () => shown().map((lens) => lens.command.title) };
  };

  // One hunk rejected: the model is told which, and nothing is written.
  const first = converse(view, view.hello.root, "rename two lines");
  let review = await opened(0);
  assert.deepEqual(review.titles(), [
    "$(check-all) Apply: 2 of 2 hunks accepted",
    "$(close-all) Reject the change",
    "$(check) Accepted (click to reject)",
    "$(check) Accepted (click to reject)",
  ]);
  const run = (lens) => fake.commands.get(lens.command.command)(...lens.command.arguments);
  run(review.shown()[3]);
  assert.equal(review.titles()[3], "$(x) Rejected (click to accept)");
  assert.equal(review.titles()[0], "$(check-all) Apply: 1 of 2 hunks accepted");
  run(review.shown()[0]);
  assert.equal(await first, "I will keep line 19.");
  assert.equal(readFileSync(join(dir, "notes.txt"), "utf8"), before);
  const told = JSON.stringify((await mock.requests())[1].body.messages);
  assert.match(told, /rejected these parts of it; the rest was acceptable/);
  assert.match(told, /\+line nineteen/);
  // The request is settled: its review is gone.
  assert.deepEqual(review.shown(), []);

  // Every hunk accepted: the change is allowed whole and written.
  const second = converse(view, view.hello.root, "do it all");
  review = await opened(1);
  run(review.shown()[0]);
  assert.equal(await second, "Written whole.");
  assert.equal(readFileSync(join(dir, "notes.txt"), "utf8"), after);
  // The editor showing the file marks the two lines the turn changed.
  assert.deepEqual(editor.decorations.map((range) => range.start.line), [1, 18]);
});
