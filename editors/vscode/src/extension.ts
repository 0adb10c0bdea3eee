// The VS Code side: finds and starts `coder lsp` (server.ts), and shows the conversation in
// a chat view (a webview in the side bar, or in an editor tab on request). The view's
// traffic goes through `ChatRelay`, which carries it to `coder lsp` unchanged.

import { randomBytes } from "node:crypto";

import * as vscode from "vscode";

import type { HostMessage, ViewMessage } from "./messages";
import { chatPage } from "./page";
import { ChangedLines } from "./decorations";
import { ChatRelay } from "./relay";
import { EditReviews } from "./review";
import { CoderServer } from "./server";
import { API_KEY_SECRET, configuredMode, initializationOptions } from "./settings";

const VIEW_ID = "coder.chat";
/** The session this workspace's chat last held, resumed when the window comes back. */
const SESSION_KEY = "coder.sessionId";
/** Settings that only a new server takes up. */
const RESTART_SETTINGS = ["coder.serverPath", "coder.provider", "coder.model", "coder.baseUrl"];

/** What `activate` returns: the running server, for other extensions and for tests. */
export interface CoderApi {
  server: CoderServer;
  relay: ChatRelay;
  changed: ChangedLines;
  /** Settles when the first start succeeded or failed (its message was shown). */
  ready: Promise<void>;
}

export function activate(context: vscode.ExtensionContext): CoderApi {
  const log = vscode.window.createOutputChannel("coder");
  const workspace = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? "";
  const taskStarts = new Map<string, number>();
  const reviews = new EditReviews();
  const server = new CoderServer(
    context.extensionPath,
    () => initializationOptions(context.secrets),
    log,
    context.workspaceState.get<string>(SESSION_KEY),
  );
  let chatVisible = false;
  let epoch = 0;
  const relay = new ChatRelay(
    server.session,
    { sessionId: "", workspace, epoch, historyLoaded: 0 },
    {
      copy: (text) => vscode.env.clipboard.writeText(text),
      open: async (path, line) => {
        const document = await vscode.workspace.openTextDocument(vscode.Uri.file(path));
        const at = new vscode.Position(Math.max(0, (line ?? 1) - 1), 0);
        await vscode.window.showTextDocument(document, { selection: new vscode.Range(at, at), preview: true });
      },
      selection: () => selectionText(vscode.window.activeTextEditor),
      // A request nobody sees would wait forever: say so when the view is hidden.
      attention: (request) => {
        if (chatVisible) return;
        void vscode.window.showInformationMessage(`coder asks: ${request.title}`, "Show").then((choice) => {
          if (choice === "Show") void vscode.commands.executeCommand(`${VIEW_ID}.focus`);
        });
      },
      pendingChanged: (count) => status.waiting(count),
      review: (request) =>
        vscode.workspace.getConfiguration("coder").get<string>("editReview") === "review" && (request.changes?.length ?? 0) > 0
          ? reviews.review(request)
          : undefined,
      settled: (requestId) => reviews.close(requestId),
    },
    configuredMode,
  );
  const status = new StatusItem();
  const changed = new ChangedLines(workspace);
  let root: string | undefined;
  server.session.onEvent((event) => {
    changed.onEvent(event, root);
    if (event.type === "state_changed") status.state(event.state);
    // A long task that ends while the view is hidden: say so.
    if (event.type === "task_started") taskStarts.set(event.taskId ?? "", Date.now());
    if (event.type === "task_complete" || event.type === "turn_aborted" || event.type === "task_dropped") {
      const started = taskStarts.get(event.taskId ?? "");
      taskStarts.delete(event.taskId ?? "");
      if (!chatVisible && started !== undefined && Date.now() - started >= LONG_TASK_MS && event.type === "task_complete") {
        void vscode.window.showInformationMessage("coder has finished.", "Show").then((choice) => {
          if (choice === "Show") void vscode.commands.executeCommand(`${VIEW_ID}.focus`);
        });
      }
    }
  });
  server.onDidStart((info) => {
    epoch += 1;
    void context.workspaceState.update(SESSION_KEY, info.sessionId);
    void relay.restarted({ sessionId: info.sessionId, workspace, epoch, historyLoaded: info.historyLoaded });
    void relay.root().then((id) => (root = id), () => undefined);
  });

  const start = async () => {
    try {
      await server.start();
    } catch (err) {
      const message = (err as Error).message;
      relay.problem(message);
      const choice = await vscode.window.showErrorMessage(message, "Open Settings");
      if (choice === "Open Settings") await vscode.commands.executeCommand("workbench.action.openSettings", "coder.serverPath");
    }
  };
  const restart = async () => {
    await server.stop();
    await start();
  };

  /** Fills a webview with the chat page and connects it to the relay. */
  const connect = (webview: vscode.Webview, disposed: (listener: () => void) => vscode.Disposable): void => {
    const dist = vscode.Uri.joinPath(context.extensionUri, "dist");
    webview.options = { enableScripts: true, localResourceRoots: [dist] };
    webview.html = chatPage({
      script: webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js")).toString(),
      style: webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.css")).toString(),
      cspSource: webview.cspSource,
      nonce: randomBytes(16).toString("base64"),
    });
    const port = relay.attach({ post: (message: HostMessage) => webview.postMessage(message) });
    const listening = webview.onDidReceiveMessage((message: ViewMessage) => void port.receive(message));
    disposed(() => {
      port.detach();
      listening.dispose();
    });
  };

  context.subscriptions.push(
    log,
    server,
    reviews,
    changed,
    vscode.window.registerWebviewViewProvider(
      VIEW_ID,
      {
        resolveWebviewView(view) {
          chatVisible = view.visible;
          view.onDidChangeVisibility(() => (chatVisible = view.visible));
          connect(view.webview, (listener) => view.onDidDispose(listener));
        },
      },
      { webviewOptions: { retainContextWhenHidden: true } },
    ),
    vscode.commands.registerCommand("coder.openChatInEditor", () => {
      const panel = vscode.window.createWebviewPanel("coder.chatTab", "coder", vscode.ViewColumn.Beside, {
        enableScripts: true,
        retainContextWhenHidden: true,
      });
      connect(panel.webview, (listener) => panel.onDidDispose(listener));
    }),
    vscode.commands.registerCommand("coder.ask", async () => {
      const text = await vscode.window.showInputBox({ prompt: "Ask coder" });
      if (!text) return;
      await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
      await server.session.send(await relay.root(), text);
    }),
    vscode.commands.registerCommand("coder.interrupt", async () => {
      await server.session.request("session/interrupt", {});
    }),
    vscode.commands.registerCommand("coder.restart", restart),
    vscode.commands.registerCommand("coder.setApiKey", async () => {
      const key = await vscode.window.showInputBox({
        prompt: "The API key for coder's model provider (kept in VS Code's secret storage)",
        password: true,
        ignoreFocusOut: true,
      });
      if (key === undefined) return;
      if (key === "") await context.secrets.delete(API_KEY_SECRET);
      else await context.secrets.store(API_KEY_SECRET, key);
      await restart();
    }),
    vscode.commands.registerCommand("coder.attachSelection", async () => {
      const text = selectionText(vscode.window.activeTextEditor);
      if (!text) return;
      await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
      relay.broadcast({ type: "prefill", text });
    }),
    // "Ask coder about this" (a selection) and "Explain this error" (a diagnostic): the
    // question goes into the view's input box, to be read and sent by the person.
    vscode.commands.registerCommand("coder.askAbout", async (uri: vscode.Uri, range: vscode.Range) => {
      const document = await vscode.workspace.openTextDocument(uri);
      await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
      relay.broadcast({ type: "prefill", text: quote(document, range) });
    }),
    vscode.commands.registerCommand(
      "coder.explainError",
      async (uri: vscode.Uri, range: vscode.Range, message: string) => {
        const document = await vscode.workspace.openTextDocument(uri);
        await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
        relay.broadcast({ type: "prefill", text: `Explain this error and how to fix it: ${message}\n${quote(document, range)}` });
      },
    ),
    vscode.languages.registerCodeActionsProvider({ scheme: "file" }, new AskActions(), {
      providedCodeActionKinds: [vscode.CodeActionKind.Empty],
    }),
    status,
    vscode.commands.registerCommand("coder.focus", () => vscode.commands.executeCommand(`${VIEW_ID}.focus`)),
    vscode.workspace.onDidChangeConfiguration((change) => {
      if (RESTART_SETTINGS.some((setting) => change.affectsConfiguration(setting))) void restart();
    }),
    // Trust granted: the workspace's own configuration applies from the next start on.
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restart()),
  );

  return { server, relay, changed, ready: start() };
}

/** How long a task runs before its end is worth a notification when the view is hidden. */
const LONG_TASK_MS = 30_000;

/** The lines of `range` in `document`, with the file and line numbers, as a person would
 * paste them into a question. */
function quote(document: vscode.TextDocument, range: vscode.Range): string {
  const path = vscode.workspace.asRelativePath(document.uri);
  // A selection that ends at the start of a line does not take that line.
  const last = range.end.character === 0 && range.end.line > range.start.line ? range.end.line - 1 : range.end.line;
  const lines = new vscode.Range(range.start.line, 0, last, Number.MAX_SAFE_INTEGER);
  const text = document.getText(lines).replace(/\n$/, "");
  return `@${path} (lines ${range.start.line + 1}-${last + 1}):\n\`\`\`${document.languageId}\n${text}\n\`\`\`\n`;
}

function selectionText(editor: vscode.TextEditor | undefined): string | undefined {
  if (!editor || editor.selection.isEmpty) return undefined;
  return quote(editor.document, editor.selection);
}

/** The code actions: ask about the selection, explain each diagnostic under the cursor. */
class AskActions implements vscode.CodeActionProvider {
  provideCodeActions(document: vscode.TextDocument, range: vscode.Range, context: vscode.CodeActionContext): vscode.CodeAction[] {
    const actions: vscode.CodeAction[] = [];
    if (!range.isEmpty) {
      const ask = new vscode.CodeAction("Ask coder about this", vscode.CodeActionKind.Empty);
      ask.command = { command: "coder.askAbout", title: "Ask coder about this", arguments: [document.uri, range] };
      actions.push(ask);
    }
    for (const diagnostic of context.diagnostics) {
      const explain = new vscode.CodeAction(`Explain this error with coder: ${diagnostic.message.split("\n")[0]}`, vscode.CodeActionKind.QuickFix);
      explain.diagnostics = [diagnostic];
      explain.command = {
        command: "coder.explainError",
        title: "Explain this error",
        arguments: [document.uri, diagnostic.range, diagnostic.message],
      };
      actions.push(explain);
    }
    return actions;
  }
}

/** The status-bar item: what coder is doing and how many approvals wait; a click shows
 * the chat. */
class StatusItem implements vscode.Disposable {
  readonly #item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  #state = "idle";
  #waiting = 0;

  constructor() {
    this.#item.command = "coder.focus";
    this.#item.name = "coder";
    this.#show();
    this.#item.show();
  }

  state(state: string): void {
    this.#state = state;
    this.#show();
  }

  waiting(count: number): void {
    this.#waiting = count;
    this.#show();
  }

  #show(): void {
    if (this.#waiting > 0) {
      this.#item.text = `$(bell-dot) coder: ${this.#waiting} waiting`;
      this.#item.tooltip = `coder waits for your answer to ${this.#waiting === 1 ? "a request" : `${this.#waiting} requests`}`;
      this.#item.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");
    } else {
      this.#item.text = this.#state === "idle" ? "$(comment-discussion) coder" : "$(loading~spin) coder: working";
      this.#item.tooltip = this.#state === "idle" ? "coder: show the chat" : "coder is working: show the chat";
      this.#item.backgroundColor = undefined;
    }
    this.#item.accessibilityInformation = { label: this.#item.tooltip as string };
  }

  dispose(): void {
    this.#item.dispose();
  }
}

export function deactivate(): void {
  // The server is one of the context's subscriptions: VS Code disposes of it.
}
