// The VS Code side: starts `coder lsp` through VS Code's LanguageClient (which also syncs
// open documents, so the agent reads unsaved text, and applies its edits through
// `workspace/applyEdit`, so they land in the undo history), streams replies into an output
// channel and asks tool permissions with a quick pick.

import * as vscode from "vscode";
import { LanguageClient, type LanguageClientOptions, type ServerOptions } from "vscode-languageclient/node";

import { type Cancellation, CoderSession, type PermissionDecision, type PermissionParams } from "./session";

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("coder");
  const command = vscode.workspace.getConfiguration("coder").get<string>("path") ?? "coder";
  const serverOptions: ServerOptions = { command, args: ["lsp", "--stdio"] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
  };
  client = new LanguageClient("coder", "coder", serverOptions, clientOptions);
  const session = new CoderSession(client);
  await client.start();

  // The conversation the commands talk to; created on first use (one create, however many
  // commands race for it).
  let conversation: string | undefined;
  let creating: Promise<string> | undefined;
  const start = () =>
    session.create().then(
      (id) => (conversation = id),
      (err: unknown) => {
        creating = undefined; // the next command tries again
        throw err;
      },
    );
  const current = () => (creating ??= start());

  session.onEvent((event) => {
    if (event.conversationId !== conversation) return;
    if (event.type === "agent_message_delta") output.append(event.delta);
    else if (event.type === "tool_call_completed") output.appendLine(`\n• ${event.toolName} ${event.summary}`);
    else if (event.type === "tool_call_failed") output.appendLine(`\n✗ ${event.toolName} ${event.summary}`);
    else if (event.type === "error") output.appendLine(`\nerror: ${event.message}`);
    else if (event.type === "task_complete") output.appendLine("\n");
    else if (event.type === "turn_aborted") output.appendLine(`\n(${event.reason})`);
  });
  session.onPermission(askPermission);

  context.subscriptions.push(
    output,
    vscode.commands.registerCommand("coder.ask", async () => {
      const text = await vscode.window.showInputBox({ prompt: "Ask coder" });
      if (!text) return;
      output.show(true);
      output.appendLine(`> ${text}`);
      const started = await session.send(await current(), text);
      // A built-in command (`/help`) answers at once, with no task to follow.
      if (started.text) output.appendLine(started.text);
    }),
    vscode.commands.registerCommand("coder.newConversation", async () => {
      creating = start();
      await creating;
      output.appendLine("— new conversation —");
    }),
    vscode.commands.registerCommand("coder.interrupt", async () => {
      if (conversation) await session.interrupt(conversation);
    }),
    vscode.commands.registerCommand("coder.showHistory", async () => {
      const entries = await session.history(await current());
      output.show(true);
      for (const entry of entries) output.appendLine(`${entry.role}: ${entry.text ?? ""}`);
    }),
  );
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}

/**
 * A modal quick pick over the request's own options, in the engine's order and words; an
 * option that takes a message asks for one (optional). A plan is opened beside the editor
 * first. Dismissing the pick denies; a request the engine withdrew closes it.
 */
async function askPermission(request: PermissionParams, cancelled: Cancellation): Promise<PermissionDecision> {
  const withdrawn = new vscode.CancellationTokenSource();
  cancelled.onCancellationRequested(() => withdrawn.cancel());
  if (request.plan) {
    const document = await vscode.workspace.openTextDocument({ language: "markdown", content: request.plan });
    await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preview: true });
  }
  const choices = request.options.map((option) => ({
    label: option.label,
    detail: option.covers ? `Covers ${option.covers}` : undefined,
    option,
  }));
  const picked = await vscode.window.showQuickPick(choices, {
    title: `coder asks: ${request.summary}`,
    placeHolder: request.command ?? request.summary,
    ignoreFocusOut: true,
  }, withdrawn.token);
  withdrawn.dispose();
  if (!picked) return { decision: "deny", message: "the user dismissed the request" };
  const message = picked.option.takesMessage
    ? await vscode.window.showInputBox({ prompt: "A word for the model (optional)", ignoreFocusOut: true })
    : undefined;
  return message
    ? { decision: "option", optionId: picked.option.optionId, message }
    : { decision: "option", optionId: picked.option.optionId };
}
