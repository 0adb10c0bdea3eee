// The VS Code side: starts `coder lsp` through VS Code's LanguageClient (which also syncs
// open documents, so the agent reads unsaved text, and applies its edits through
// `workspace/applyEdit`, so they land in the undo history), and shows the conversation in
// a chat view (a webview in the side bar, or in an editor tab on request). The view's
// traffic goes through `ChatRelay`, which carries it to `coder lsp` unchanged.

import { randomBytes } from "node:crypto";

import * as vscode from "vscode";
import { LanguageClient, type LanguageClientOptions, type ServerOptions } from "vscode-languageclient/node";

import type { HostMessage, ViewMessage } from "./messages";
import { chatPage } from "./page";
import { ChatRelay } from "./relay";
import { CoderSession } from "./session";

const VIEW_ID = "coder.chat";

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const command = vscode.workspace.getConfiguration("coder").get<string>("path") ?? "coder";
  const serverOptions: ServerOptions = { command, args: ["lsp", "--stdio"] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
  };
  client = new LanguageClient("coder", "coder", serverOptions, clientOptions);
  const session = new CoderSession(client);
  await client.start();
  const capabilities = client.initializeResult?.capabilities.experimental as
    | { coder?: { sessionId?: string } }
    | undefined;
  const workspace = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? "";

  let chatVisible = false;
  const relay = new ChatRelay(
    session,
    { sessionId: capabilities?.coder?.sessionId ?? "", workspace },
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
  );

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

  const prefill = (text: string) => relay.broadcast({ type: "prefill", text });

  context.subscriptions.push(
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
      await session.send(await relay.root(), text);
    }),
    vscode.commands.registerCommand("coder.interrupt", async () => {
      await session.request("session/interrupt", {});
    }),
    vscode.commands.registerCommand("coder.attachSelection", async () => {
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.selection.isEmpty) return;
      const path = vscode.workspace.asRelativePath(editor.document.uri);
      const { start, end } = editor.selection;
      const text = editor.document.getText(editor.selection);
      await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
      prefill(`@${path} (lines ${start.line + 1}-${end.line + 1}):\n\`\`\`${editor.document.languageId}\n${text}\n\`\`\`\n`);
    }),
  );
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
