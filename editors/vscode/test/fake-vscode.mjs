// A stand-in for the `vscode` module that records what the extension asks of VS Code: the
// messages it shows, the commands it registers and runs, the secrets it stores, the edits
// it applies, the webviews it fills. Only what the extension uses is here; a call to
// anything else fails the test (the property is undefined).
//
// `loadExtension` requires dist/extension.js afresh with such a fake as its `vscode`.

import Module, { createRequire } from "node:module";
import { join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const require = createRequire(import.meta.url);
const extensionFile = resolve(import.meta.dirname, "../dist/extension.js");

class Disposable {
  constructor(dispose = () => {}) {
    this.dispose = dispose;
  }
}

class EventEmitter {
  #listeners = new Set();
  event = (listener) => {
    this.#listeners.add(listener);
    return new Disposable(() => this.#listeners.delete(listener));
  };
  fire(value) {
    for (const listener of [...this.#listeners]) listener(value);
  }
  dispose() {
    this.#listeners.clear();
  }
}

class Uri {
  constructor(scheme, path) {
    this.scheme = scheme;
    this.path = path;
    this.fsPath = path;
  }
  static file(path) {
    return new Uri("file", path);
  }
  static parse(text) {
    const url = new URL(text);
    return new Uri(url.protocol.replace(/:$/, ""), decodeURIComponent(url.pathname));
  }
  static joinPath(base, ...parts) {
    return new Uri(base.scheme, join(base.path, ...parts));
  }
  toString() {
    return this.scheme === "file" ? pathToFileURL(this.path).href : `${this.scheme}:${this.path}`;
  }
}

class Position {
  constructor(line, character) {
    this.line = line;
    this.character = character;
  }
}

class Range {
  constructor(a, b, c, d) {
    [this.start, this.end] = a instanceof Position ? [a, b] : [new Position(a, b), new Position(c, d)];
  }
  get isEmpty() {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

class CodeAction {
  constructor(title, kind) {
    this.title = title;
    this.kind = kind;
  }
}

class CodeLens {
  constructor(range, command) {
    this.range = range;
    this.command = command;
  }
}

class ThemeColor {
  constructor(id) {
    this.id = id;
  }
}

/** An editor showing `document`; the decorations set on it are kept in `decorations`. */
export function fakeEditor(document) {
  const editor = {
    document,
    decorations: [],
    setDecorations(type, ranges) {
      editor.decorations = ranges;
    },
  };
  return editor;
}

/** A document of `text` at `path`, as VS Code hands one to the extension. */
export function fakeDocument(path, text, { languageId = "plaintext", version = 1 } = {}) {
  const lines = text.split("\n");
  return {
    uri: Uri.file(path),
    languageId,
    version,
    getText(range) {
      if (!range) return text;
      const last = Math.min(range.end.line, lines.length - 1);
      const picked = lines.slice(range.start.line, last + 1);
      picked[picked.length - 1] = picked[picked.length - 1].slice(0, range.end.character);
      picked[0] = picked[0].slice(range.start.character);
      return picked.join("\n");
    },
  };
}

class WorkspaceEdit {
  entries = [];
  replace(uri, range, newText) {
    this.entries.push({ uri, range, newText });
  }
}

/** A fake `vscode` for one test: `settings` (without the `coder.` prefix), the workspace
 * folder, whether it is trusted, the secrets already stored, and the answers the person
 * gives (`inputs` for input boxes, `choices` for messages with buttons, in order). */
export function fakeVscode({ settings = {}, folder, trusted = true, secrets = {}, inputs = [], choices = [], documents = [], editors = [] }) {
  const calls = [];
  const record = (name, ...args) => calls.push({ name, args });
  const commands = new Map();
  const providers = new Map();
  const stored = new Map(Object.entries(secrets));
  const statusItems = [];
  const events = {
    configuration: new EventEmitter(),
    trust: new EventEmitter(),
    open: new EventEmitter(),
    change: new EventEmitter(),
    close: new EventEmitter(),
  };
  const show = (name) => (message, ...items) => {
    record(name, message, ...items);
    return Promise.resolve(items.length > 0 ? choices.shift() : undefined);
  };
  const vscode = {
    Disposable,
    EventEmitter,
    Uri,
    Position,
    Range,
    WorkspaceEdit,
    CodeAction,
    CodeLens,
    ThemeColor,
    CodeActionKind: { Empty: { value: "" }, QuickFix: { value: "quickfix" } },
    StatusBarAlignment: { Left: 1, Right: 2 },
    OverviewRulerLane: { Left: 1 },
    ViewColumn: { Beside: -2, Active: -1 },
    languages: {
      registerCodeActionsProvider: (selector, provider) => {
        providers.set("codeActions", provider);
        return new Disposable();
      },
      registerCodeLensProvider: (selector, provider) => {
        providers.set(`codeLens:${selector.scheme}`, provider);
        return new Disposable();
      },
    },
    env: { clipboard: { writeText: async (text) => record("clipboard.writeText", text) } },
    workspace: {
      get isTrusted() {
        return trusted;
      },
      workspaceFolders: folder ? [{ uri: Uri.file(folder), name: "ws", index: 0 }] : undefined,
      textDocuments: documents,
      getConfiguration: (section) => ({
        get: (key, fallback) => {
          const value = settings[section === "coder" ? key : `${section}.${key}`];
          return value === undefined ? fallback : value;
        },
      }),
      onDidChangeConfiguration: events.configuration.event,
      registerTextDocumentContentProvider: (scheme, provider) => {
        providers.set(`content:${scheme}`, provider);
        return new Disposable();
      },
      onDidGrantWorkspaceTrust: events.trust.event,
      onDidOpenTextDocument: events.open.event,
      onDidChangeTextDocument: events.change.event,
      onDidCloseTextDocument: events.close.event,
      applyEdit: async (edit) => {
        record("workspace.applyEdit", edit);
        return true;
      },
      openTextDocument: async (uri) => {
        record("workspace.openTextDocument", uri.fsPath);
        return documents.find((document) => document.uri.fsPath === uri.fsPath) ?? { uri };
      },
      asRelativePath: (uri) => relative(folder ?? "/", uri.fsPath),
    },
    window: {
      createOutputChannel: (name) => ({ name, append() {}, appendLine() {}, show() {}, dispose() {} }),
      showErrorMessage: show("window.showErrorMessage"),
      showWarningMessage: show("window.showWarningMessage"),
      showInformationMessage: show("window.showInformationMessage"),
      showInputBox: async (options) => {
        record("window.showInputBox", options);
        return inputs.shift();
      },
      showTextDocument: async (document, options) => record("window.showTextDocument", document.uri.fsPath, options),
      registerWebviewViewProvider: (id, provider, options) => {
        record("window.registerWebviewViewProvider", id, options);
        providers.set(id, provider);
        return new Disposable();
      },
      createWebviewPanel: (...args) => {
        record("window.createWebviewPanel", ...args);
        return fakePanel();
      },
      activeTextEditor: undefined,
      visibleTextEditors: editors,
      onDidChangeVisibleTextEditors: new EventEmitter().event,
      createTextEditorDecorationType: (options) => ({ options, dispose() {} }),
      createStatusBarItem: () => {
        const item = { text: "", tooltip: "", show() {}, dispose() {} };
        statusItems.push(item);
        return item;
      },
    },
    commands: {
      registerCommand: (id, handler) => {
        commands.set(id, handler);
        return new Disposable(() => commands.delete(id));
      },
      executeCommand: async (id, ...args) => {
        record("commands.executeCommand", id, ...args);
        return commands.get(id)?.(...args);
      },
    },
  };
  const context = {
    extensionPath: resolve(import.meta.dirname, ".."),
    extensionUri: Uri.file(resolve(import.meta.dirname, "..")),
    subscriptions: [],
    secrets: {
      get: async (key) => stored.get(key),
      store: async (key, value) => {
        record("secrets.store", key, value);
        stored.set(key, value);
      },
      delete: async (key) => {
        record("secrets.delete", key);
        stored.delete(key);
      },
    },
    workspaceState: {
      state: new Map(),
      get(key) {
        return this.state.get(key);
      },
      async update(key, value) {
        this.state.set(key, value);
      },
    },
  };
  return { vscode, context, calls, commands, providers, events, stored, statusItems, messages: (name) => calls.filter((c) => c.name === name).map((c) => c.args[0]) };
}

/** A webview as VS Code gives one to a provider: what the extension posts is kept in
 * `posted`; `send` is the page posting to the extension. */
export function fakeWebview() {
  const posted = [];
  const received = new EventEmitter();
  const webview = {
    options: {},
    html: "",
    cspSource: "vscode-resource:",
    asWebviewUri: (uri) => ({ toString: () => `vscode-resource:${uri.path}` }),
    postMessage: async (message) => {
      posted.push(message);
      return true;
    },
    onDidReceiveMessage: received.event,
  };
  return { webview, posted, send: (message) => received.fire(message) };
}

function fakePanel() {
  const disposed = new EventEmitter();
  return { webview: fakeWebview().webview, onDidDispose: disposed.event, dispose: () => disposed.fire() };
}

/** dist/extension.js, loaded afresh with `fake` as its `vscode`. */
export function loadExtension(fake) {
  const load = Module._load;
  Module._load = function (request, ...rest) {
    return request === "vscode" ? fake.vscode : load.call(this, request, ...rest);
  };
  try {
    delete require.cache[extensionFile];
    return require(extensionFile);
  } finally {
    Module._load = load;
  }
}
