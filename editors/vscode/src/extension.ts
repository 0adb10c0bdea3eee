// The VS Code side: finds and starts `coder lsp` (server.ts), and shows the conversation in
// a chat view (a webview in the side bar, or in an editor tab on request). The view's
// traffic goes through `ChatRelay`, which carries it to `coder lsp` unchanged.

import { randomBytes } from "node:crypto";

import * as vscode from "vscode";

import type { HostMessage, ViewMessage } from "./messages";
import { chatPage } from "./page";
import { ChatRelay } from "./relay";
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
  /** Settles when the first start succeeded or failed (its message was shown). */
  ready: Promise<void>;
}

export function activate(context: vscode.ExtensionContext): CoderApi {
  const log = vscode.window.createOutputChannel("coder");
  const workspace = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? "";
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
      // A request nobody sees would wait forever: bring the view forward.
      attention: () => {
        if (!chatVisible) void vscode.commands.executeCommand(`${VIEW_ID}.focus`);
      },
    },
    configuredMode,
  );
  server.onDidStart((info) => {
    epoch += 1;
    void context.workspaceState.update(SESSION_KEY, info.sessionId);
    void relay.restarted({ sessionId: info.sessionId, workspace, epoch, historyLoaded: info.historyLoaded });
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
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.selection.isEmpty) return;
      const path = vscode.workspace.asRelativePath(editor.document.uri);
      const { start: from, end } = editor.selection;
      const text = editor.document.getText(editor.selection);
      await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
      relay.broadcast({
        type: "prefill",
        text: `@${path} (lines ${from.line + 1}-${end.line + 1}):\n\`\`\`${editor.document.languageId}\n${text}\n\`\`\`\n`,
      });
    }),
    vscode.workspace.onDidChangeConfiguration((change) => {
      if (RESTART_SETTINGS.some((setting) => change.affectsConfiguration(setting))) void restart();
    }),
    // Trust granted: the workspace's own configuration applies from the next start on.
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restart()),
  );

  return { server, relay, ready: start() };
}

export function deactivate(): void {
  // The server is one of the context's subscriptions: VS Code disposes of it.
}
