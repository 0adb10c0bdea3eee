// `coder lsp` as the extension runs it: found (discovery.ts), started in the workspace
// folder over stdio with vscode-jsonrpc, told the editor's open documents (so the agent
// reads unsaved text) and allowed to change them through `workspace/applyEdit` (so its
// edits land in the undo history), and started again if it dies, resuming its session so
// the conversation is not lost.

import { type ChildProcess, spawn } from "node:child_process";

import * as rpc from "vscode-jsonrpc/node";
import * as vscode from "vscode";

import type { CoderCapabilities, InitializationOptions, SessionId } from "../../../bindings-node/ts/protocol";
import { type Discovery, findServer } from "./discovery";
import { CoderSession, type Connection } from "./session";

/** How many restarts within `RESTART_WINDOW_MS` before giving up. */
const MAX_RESTARTS = 4;
const RESTART_WINDOW_MS = 3 * 60_000;
/** How many lines of the server's log are kept for a message when it dies. */
const LOG_TAIL_LINES = 20;

/**
 * A connection whose underlying one changes when the server is started again: handlers are
 * kept and set on each new one, so `CoderSession` and everything listening to it outlive a
 * restart.
 */
class Reconnecting implements Connection {
  #current: rpc.MessageConnection | undefined;
  readonly #notifications: [string, (params: any) => void][] = [];
  readonly #requests: [string, (params: any, token: rpc.CancellationToken) => unknown][] = [];

  use(connection: rpc.MessageConnection): void {
    for (const [method, handler] of this.#notifications) connection.onNotification(method, handler);
    for (const [method, handler] of this.#requests) connection.onRequest(method, handler);
    this.#current = connection;
  }

  get current(): rpc.MessageConnection | undefined {
    return this.#current;
  }

  sendRequest<R>(method: string, params?: unknown): Promise<R> {
    if (!this.#current) return Promise.reject(new Error("coder is not running"));
    return this.#current.sendRequest<R>(method, params);
  }

  sendNotification(method: string, params?: unknown): void {
    void this.#current?.sendNotification(method, params).catch(() => {});
  }

  onNotification(method: string, handler: (params: any) => void): void {
    this.#notifications.push([method, handler]);
    this.#current?.onNotification(method, handler);
  }

  onRequest(method: string, handler: (params: any, token: rpc.CancellationToken) => unknown): void {
    this.#requests.push([method, handler]);
    this.#current?.onRequest(method, handler);
  }
}

export interface StartInfo {
  sessionId: SessionId;
  /** How many messages a resumed session brought back. */
  historyLoaded: number;
  version: string;
}

/** The editor's settings as `initialize` takes them (`sessionId` is added by the server). */
export type Settings = () => Promise<Omit<InitializationOptions, "sessionId">>;

export class CoderServer implements vscode.Disposable {
  readonly session: CoderSession;
  readonly #connection = new Reconnecting();
  readonly #extensionPath: string;
  readonly #settings: Settings;
  readonly #log: vscode.OutputChannel;
  readonly #tail: string[] = [];
  readonly #restarts: number[] = [];
  readonly #started = new vscode.EventEmitter<StartInfo>();
  readonly #subscriptions: vscode.Disposable[] = [];
  #child: ChildProcess | undefined;
  #sessionId: SessionId | undefined;
  #stopping = false;

  /** Fires after each start: the first, and each restart after the server died. */
  readonly onDidStart = this.#started.event;

  constructor(extensionPath: string, settings: Settings, log: vscode.OutputChannel, sessionId?: SessionId) {
    this.#extensionPath = extensionPath;
    this.#settings = settings;
    this.#log = log;
    this.#sessionId = sessionId;
    this.session = new CoderSession(this.#connection);
    this.#connection.onRequest("workspace/applyEdit", (params: ApplyEditParams) => applyEdit(params));
    this.#subscriptions.push(
      vscode.workspace.onDidOpenTextDocument((document) => this.#didOpen(document)),
      vscode.workspace.onDidChangeTextDocument((change) => {
        if (!synced(change.document) || change.contentChanges.length === 0) return;
        this.#connection.sendNotification("textDocument/didChange", {
          textDocument: { uri: change.document.uri.toString(), version: change.document.version },
          contentChanges: change.contentChanges.map((c) => ({ range: lspRange(c.range), text: c.text })),
        });
      }),
      vscode.workspace.onDidCloseTextDocument((document) => {
        if (!synced(document)) return;
        this.#connection.sendNotification("textDocument/didClose", { textDocument: { uri: document.uri.toString() } });
      }),
    );
  }

  /** The running server's process id (for people reading `ps`, and for tests). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** The session the server holds; a restart resumes it. */
  get sessionId(): SessionId | undefined {
    return this.#sessionId;
  }

  /** The last lines the server wrote to its log. */
  get logTail(): string[] {
    return [...this.#tail];
  }

  /** Finds and starts the server; rejects with a message for people when it cannot. */
  async start(): Promise<StartInfo> {
    const configured = vscode.workspace.getConfiguration("coder").get<string>("serverPath") || undefined;
    const found: Discovery = await findServer({ configured, extensionPath: this.#extensionPath });
    if (!found.found) throw new Error(found.message);
    this.#log.appendLine(`coder ${found.version} at ${found.path} (${found.source})`);
    const options = { ...(await this.#settings()) };
    try {
      return await this.#launch(found.path, found.version, { ...options, sessionId: this.#sessionId });
    } catch (err) {
      if (this.#sessionId === undefined) throw err;
      // A saved session that cannot be taken up (removed, unreadable): a new one.
      this.#log.appendLine(`the session ${this.#sessionId} could not be resumed: ${String(err)}`);
      this.#sessionId = undefined;
      return this.#launch(found.path, found.version, options);
    }
  }

  async #launch(path: string, version: string, options: InitializationOptions): Promise<StartInfo> {
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const child = spawn(path, ["lsp", "--stdio"], { cwd, stdio: ["pipe", "pipe", "pipe"] });
    this.#child = child;
    child.stderr.setEncoding("utf8");
    let partial = "";
    child.stderr.on("data", (chunk: string) => {
      this.#log.append(chunk);
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      this.#tail.push(...lines.filter((line) => line.trim() !== ""));
      this.#tail.splice(0, Math.max(0, this.#tail.length - LOG_TAIL_LINES));
    });
    const connection = rpc.createMessageConnection(
      new rpc.StreamMessageReader(child.stdout),
      new rpc.StreamMessageWriter(child.stdin),
    );
    const failed = new Promise<never>((_, reject) => {
      child.once("error", reject);
      child.once("exit", (code, signal) => reject(new Error(`coder lsp exited (${signal ?? `code ${code}`}) while starting`)));
    });
    this.#connection.use(connection);
    connection.listen();
    failed.catch(() => {});
    let init: { capabilities: { experimental?: { coder?: CoderCapabilities } } };
    try {
      init = await Promise.race([
        connection.sendRequest<typeof init>("initialize", {
          processId: process.pid,
          rootUri: cwd ? vscode.Uri.file(cwd).toString() : null,
          capabilities: { workspace: { applyEdit: true, workspaceEdit: { documentChanges: true } } },
          initializationOptions: options,
        }),
        failed,
      ]);
    } catch (err) {
      connection.dispose();
      child.kill();
      throw err;
    }
    await connection.sendNotification("initialized", {});
    const coder = init.capabilities.experimental?.coder;
    this.#sessionId = coder?.sessionId;
    for (const document of vscode.workspace.textDocuments) this.#didOpen(document);
    child.once("exit", (code, signal) => {
      connection.dispose();
      if (this.#child === child) this.#child = undefined;
      if (!this.#stopping) void this.#died(code, signal);
    });
    const info = { sessionId: coder?.sessionId ?? "", historyLoaded: coder?.historyLoaded ?? 0, version };
    this.#started.fire(info);
    return info;
  }

  /** The server died: say so once, with its last log lines, and start it again on the same
   * session, unless it keeps dying. */
  async #died(code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    const how = signal ? `was stopped by ${signal}` : `exited with code ${code}`;
    const tail = this.#tail.slice(-8).join("\n");
    const now = Date.now();
    while (this.#restarts.length > 0 && now - (this.#restarts[0] ?? now) > RESTART_WINDOW_MS) this.#restarts.shift();
    if (this.#restarts.length >= MAX_RESTARTS) {
      void vscode.window.showErrorMessage(
        `coder ${how} ${MAX_RESTARTS + 1} times in 3 minutes and is not started again. Run "coder: Restart" when it is fixed.${tail ? ` Its last log lines:\n${tail}` : ""}`,
      );
      return;
    }
    this.#restarts.push(now);
    try {
      await this.start();
      void vscode.window.showWarningMessage(
        `coder ${how}; it was started again and the conversation resumed.${tail ? ` Its last log lines:\n${tail}` : ""}`,
      );
    } catch (err) {
      void vscode.window.showErrorMessage(`coder ${how} and could not be started again: ${(err as Error).message}`);
    }
  }

  /** Stops the running server (if any) and starts it again on the same session. */
  async restart(): Promise<StartInfo> {
    await this.stop();
    this.#stopping = false;
    this.#restarts.length = 0;
    return this.start();
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    const child = this.#child;
    const connection = this.#connection.current;
    if (!child || !connection) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    try {
      await Promise.race([connection.sendRequest("shutdown"), exited]);
      await connection.sendNotification("exit");
    } catch {
      child.kill();
    }
    const timer = setTimeout(() => child.kill(), 3000);
    await exited;
    clearTimeout(timer);
  }

  #didOpen(document: vscode.TextDocument): void {
    if (!synced(document)) return;
    this.#connection.sendNotification("textDocument/didOpen", {
      textDocument: {
        uri: document.uri.toString(),
        languageId: document.languageId,
        version: document.version,
        text: document.getText(),
      },
    });
  }

  dispose(): void {
    for (const subscription of this.#subscriptions) subscription.dispose();
    this.#started.dispose();
    void this.stop();
  }
}

/** Files on disk are the engine's business; other documents (output, untitled) are not. */
function synced(document: vscode.TextDocument): boolean {
  return document.uri.scheme === "file";
}

interface LspPosition {
  line: number;
  character: number;
}
interface LspRange {
  start: LspPosition;
  end: LspPosition;
}
interface ApplyEditParams {
  label?: string;
  edit: {
    documentChanges?: { textDocument: { uri: string; version: number | null }; edits: { range: LspRange; newText: string }[] }[];
    changes?: Record<string, { range: LspRange; newText: string }[]>;
  };
}

function lspRange(range: vscode.Range): LspRange {
  return {
    start: { line: range.start.line, character: range.start.character },
    end: { line: range.end.line, character: range.end.character },
  };
}

function vscodeRange(range: LspRange): vscode.Range {
  return new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
}

/** `workspace/applyEdit`: the engine's change to an open document, applied by VS Code (so it
 * is in the undo history), refused when the document is not at the version it was made for. */
async function applyEdit(params: ApplyEditParams): Promise<{ applied: boolean; failureReason?: string }> {
  const edit = new vscode.WorkspaceEdit();
  for (const change of params.edit.documentChanges ?? []) {
    const uri = vscode.Uri.parse(change.textDocument.uri);
    const open = vscode.workspace.textDocuments.find((document) => document.uri.toString() === uri.toString());
    if (open && change.textDocument.version !== null && open.version !== change.textDocument.version) {
      return { applied: false, failureReason: `${uri.fsPath} changed in the editor meanwhile` };
    }
    for (const text of change.edits) edit.replace(uri, vscodeRange(text.range), text.newText);
  }
  for (const [uri, edits] of Object.entries(params.edit.changes ?? {})) {
    for (const text of edits) edit.replace(vscode.Uri.parse(uri), vscodeRange(text.range), text.newText);
  }
  const applied = await vscode.workspace.applyEdit(edit);
  return applied ? { applied } : { applied, failureReason: "VS Code did not apply the edit" };
}
