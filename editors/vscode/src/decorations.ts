// Marks the lines the agent changed in the current turn, in every editor showing the file:
// from the diffs of the turn's completed tool calls (`tool_call_completed`), cleared when
// the next task of the root conversation starts.

import * as vscode from "vscode";

import type { Event } from "../../../bindings-node/ts/protocol";
import { parseDiff } from "./review";

export class ChangedLines implements vscode.Disposable {
  readonly #decoration = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.addedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  /** Changed lines (0-based) by absolute path. */
  readonly #lines = new Map<string, Set<number>>();
  readonly #subscription = vscode.window.onDidChangeVisibleTextEditors(() => this.#show());
  readonly #workspace: string;

  constructor(workspace: string) {
    this.#workspace = workspace;
  }

  /** The lines changed so far in this turn, by path (for tests and hovers). */
  get lines(): ReadonlyMap<string, ReadonlySet<number>> {
    return this.#lines;
  }

  onEvent(event: Event, root: string | undefined): void {
    if (event.type === "task_started" && event.conversationId === root) {
      this.#lines.clear();
      this.#show();
    } else if (event.type === "tool_call_completed" && event.diff) {
      for (const [path, hunks] of parseDiff(event.diff)) {
        const absolute = path.startsWith("/") ? path : `${this.#workspace}/${path}`;
        const lines = this.#lines.get(absolute) ?? new Set<number>();
        for (const hunk of hunks) {
          let line = hunk.newStart - 1;
          for (const text of hunk.lines) {
            if (text.startsWith("+")) lines.add(line);
            if (!text.startsWith("-")) line++;
          }
        }
        this.#lines.set(absolute, lines);
      }
      this.#show();
    }
  }

  #show(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const lines = this.#lines.get(editor.document.uri.fsPath);
      editor.setDecorations(
        this.#decoration,
        [...(lines ?? [])].map((line) => new vscode.Range(line, 0, line, 0)),
      );
    }
  }

  dispose(): void {
    this.#subscription.dispose();
    this.#decoration.dispose();
  }
}
