// Review mode (`coder.editReview: "review"`): an edit that asks for permission opens in VS
// Code's diff editor, the file as it is beside the file as the change would leave it, with
// "Accepted" / "Rejected" on each hunk and "Apply" above them. The answer is one of the
// request's own options: the change whole when every hunk is accepted; otherwise the
// rejection option with a message naming the rejected hunks, so the model makes the change
// again without them. Nothing is written by the extension: the engine writes what it was
// allowed to, and the model hears what it was not.

import * as vscode from "vscode";

import type { PermissionDecision, PermissionParams } from "../../../bindings-node/ts/protocol";

export const REVIEW_SCHEME = "coder-review";

/** One hunk of a unified diff. */
export interface Hunk {
  header: string;
  newStart: number;
  newLines: number;
  lines: string[];
}

/** The hunks of a unified diff, by the file's path as the diff names it (`b/src/x.rs`,
 * without the `b/`). */
export function parseDiff(diff: string): Map<string, Hunk[]> {
  const files = new Map<string, Hunk[]>();
  let hunks: Hunk[] | undefined;
  let hunk: Hunk | undefined;
  for (const line of diff.split("\n")) {
    if (line.startsWith("+++ ")) {
      const path = line.slice(4).replace(/^b\//, "").trim();
      hunks = [];
      files.set(path, hunks);
      hunk = undefined;
    } else if (line.startsWith("@@") && hunks) {
      const match = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/.exec(line);
      hunk = { header: line, newStart: Number(match?.[1] ?? 1), newLines: Number(match?.[2] ?? 1), lines: [] };
      hunks.push(hunk);
    } else if (hunk && (line.startsWith("+") || line.startsWith("-") || line.startsWith(" "))) {
      hunk.lines.push(line);
    }
  }
  return files;
}

interface FileReview {
  /** The absolute path. */
  path: string;
  label: string;
  oldText: string;
  newText: string;
  hunks: Hunk[];
  /** Per hunk: accepted (the default) or rejected. */
  accepted: boolean[];
}

interface Review {
  request: PermissionParams;
  files: FileReview[];
  finish(decision: PermissionDecision): void;
}

export class EditReviews implements vscode.TextDocumentContentProvider, vscode.CodeLensProvider, vscode.Disposable {
  readonly #reviews = new Map<string, Review>();
  readonly #lensesChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.#lensesChanged.event;
  readonly #subscriptions: vscode.Disposable[];

  constructor() {
    this.#subscriptions = [
      vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, this),
      vscode.languages.registerCodeLensProvider({ scheme: REVIEW_SCHEME }, this),
      vscode.commands.registerCommand("coder.review.toggle", (requestId: string, file: number, hunk: number) =>
        this.#toggle(requestId, file, hunk),
      ),
      vscode.commands.registerCommand("coder.review.apply", (requestId: string) => this.#apply(requestId)),
      vscode.commands.registerCommand("coder.review.rejectAll", (requestId: string) => this.#rejectAll(requestId)),
    ];
  }

  /** Opens the review of `request` (an edit with its files' texts); resolves with the
   * answer, or with nothing when the request was settled elsewhere (the chat view, a
   * withdrawal). */
  review(request: PermissionParams): Promise<PermissionDecision | undefined> {
    const changes = request.changes ?? [];
    const hunks = parseDiff(request.diff ?? "");
    const files: FileReview[] = changes.map((change) => {
      const label = vscode.workspace.asRelativePath(vscode.Uri.file(change.path));
      const found = [...hunks].find(([path]) => change.path === path || change.path.endsWith(`/${path}`))?.[1] ?? [];
      return {
        path: change.path,
        label,
        oldText: change.oldText ?? "",
        newText: change.newText ?? "",
        hunks: found,
        accepted: found.map(() => true),
      };
    });
    return new Promise((resolve) => {
      // Settled elsewhere: `close` drops the review, and its promise says nothing.
      this.#closers.set(request.requestId, () => resolve(undefined));
      this.#reviews.set(request.requestId, {
        request,
        files,
        finish: (decision) => {
          this.#closers.delete(request.requestId);
          this.close(request.requestId);
          resolve(decision);
        },
      });
      this.#lensesChanged.fire();
      files.forEach((file, index) => {
        void vscode.commands.executeCommand(
          "vscode.diff",
          this.#uri(request.requestId, index, "old", file.label),
          this.#uri(request.requestId, index, "new", file.label),
          `${file.label}: coder's proposed change (review)`,
          { preview: false },
        );
      });
    });
  }

  readonly #closers = new Map<string, () => void>();

  /** The request was answered or withdrawn: its review goes away. */
  close(requestId: string): void {
    if (!this.#reviews.delete(requestId)) return;
    this.#closers.get(requestId)?.();
    this.#closers.delete(requestId);
    this.#lensesChanged.fire();
  }

  #uri(requestId: string, file: number, side: "old" | "new", label: string): vscode.Uri {
    return vscode.Uri.parse(`${REVIEW_SCHEME}:/${requestId}/${file}/${side}/${encodeURIComponent(label)}`);
  }

  #parse(uri: vscode.Uri): { review: Review; file: number; side: string } | undefined {
    const [, requestId, file, side] = uri.path.split("/");
    const review = this.#reviews.get(requestId ?? "");
    if (!review || file === undefined || side === undefined) return undefined;
    return { review, file: Number(file), side };
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const found = this.#parse(uri);
    const file = found?.review.files[found.file];
    if (!found || !file) return "";
    return found.side === "old" ? file.oldText : file.newText;
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const found = this.#parse(document.uri);
    const file = found?.review.files[found.file];
    if (!found || !file || found.side !== "new") return [];
    const requestId = found.review.request.requestId;
    const top = new vscode.Range(0, 0, 0, 0);
    const accepted = found.review.files.reduce((n, f) => n + f.accepted.filter(Boolean).length, 0);
    const total = found.review.files.reduce((n, f) => n + f.hunks.length, 0);
    const lenses = [
      new vscode.CodeLens(top, {
        title: `$(check-all) Apply: ${accepted} of ${total} hunks accepted`,
        command: "coder.review.apply",
        arguments: [requestId],
      }),
      new vscode.CodeLens(top, { title: "$(close-all) Reject the change", command: "coder.review.rejectAll", arguments: [requestId] }),
    ];
    file.hunks.forEach((hunk, index) => {
      const line = Math.max(0, hunk.newStart - 1);
      lenses.push(
        new vscode.CodeLens(new vscode.Range(line, 0, line, 0), {
          title: file.accepted[index] ? "$(check) Accepted (click to reject)" : "$(x) Rejected (click to accept)",
          command: "coder.review.toggle",
          arguments: [requestId, found.file, index],
        }),
      );
    });
    return lenses;
  }

  #toggle(requestId: string, file: number, hunk: number): void {
    const review = this.#reviews.get(requestId);
    const accepted = review?.files[file]?.accepted;
    if (!accepted || accepted[hunk] === undefined) return;
    accepted[hunk] = !accepted[hunk];
    this.#lensesChanged.fire();
  }

  #rejectAll(requestId: string): void {
    const review = this.#reviews.get(requestId);
    if (!review) return;
    for (const file of review.files) file.accepted.fill(false);
    this.#apply(requestId);
  }

  /** Answers with the request's own options: allow it whole, or reject it saying which
   * hunks the person did not want. */
  #apply(requestId: string): void {
    const review = this.#reviews.get(requestId);
    if (!review) return;
    const options = review.request.options;
    const rejected = review.files.flatMap((file) =>
      file.hunks.filter((_, index) => !file.accepted[index]).map((hunk) => ({ file, hunk })),
    );
    if (rejected.length === 0) {
      const allow = options.find((option) => option.kind === "allow_once");
      if (allow) review.finish({ decision: "option", optionId: allow.optionId });
      return;
    }
    const reject = options.find((option) => option.kind === "reject_once" && option.takesMessage);
    if (!reject) return;
    const total = review.files.reduce((n, f) => n + f.hunks.length, 0);
    const message =
      rejected.length === total
        ? "The person reviewed the change and rejected all of it."
        : [
            "The person reviewed the change and rejected these parts of it; the rest was acceptable. Make the change again without them:",
            ...rejected.map(({ file, hunk }) => `${file.label} ${hunk.header}\n${hunk.lines.join("\n")}`),
          ].join("\n");
    review.finish({ decision: "option", optionId: reject.optionId, message });
  }

  dispose(): void {
    for (const requestId of [...this.#reviews.keys()]) this.close(requestId);
    for (const subscription of this.#subscriptions) subscription.dispose();
    this.#lensesChanged.dispose();
  }
}
