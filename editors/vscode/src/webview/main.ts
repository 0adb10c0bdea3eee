// The chat view's front end. It reaches coder only through the extension host
// (`acquireVsCodeApi().postMessage`), calling `coder lsp`'s methods by name, and renders the
// engine's events as they come: the answer as Markdown (marked, then DOMPurify: what the
// model writes is never trusted as HTML) with highlighted code and copy buttons, thinking
// folded, each tool call as a card with its live output and diff, permission requests with
// the options the engine sent (never options of its own), other conversations as nested
// threads. The engine holds the state: on load the view asks for every event it still keeps
// (`session/subscribe`) and is whole again.

import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/common";
import { Marked, type Tokens } from "marked";

import type {
  ChatMessage,
  ConversationId,
  EngineState,
  Event,
  HistoryEntry,
  InputItem,
  Mode,
  PermissionOption,
  SessionSnapshot,
  TaskId,
  ToolKind,
  ToolLocation,
} from "../../../../bindings-node/ts/protocol";
import type { HostMessage, Method, ParamsOf, ResultOf, ViewMessage } from "../messages";

declare function acquireVsCodeApi(): { postMessage(message: ViewMessage): void };

const vscode = acquireVsCodeApi();
const post = (message: ViewMessage) => vscode.postMessage(message);

function byId<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found as T;
}

const log = byId<HTMLElement>("log");
const input = byId<HTMLTextAreaElement>("input");
const sendButton = byId<HTMLButtonElement>("send");
const stopButton = byId<HTMLButtonElement>("stop");
const busySend = byId<HTMLSelectElement>("busy-send");
const statusLine = byId<HTMLElement>("status");
const modePicker = byId<HTMLSelectElement>("mode");
const presetShown = byId<HTMLOutputElement>("preset");
const gauge = byId<HTMLElement>("gauge");
const modelField = byId<HTMLInputElement>("model");
const menu = byId<HTMLUListElement>("completions");
const attachmentsBox = byId<HTMLElement>("attachments");

// ---------------------------------------------------------------------------------------
// Requests to coder lsp, through the host.

let nextRequest = 1;
const waiting = new Map<number, { resolve(result: unknown): void; reject(error: Error): void }>();

/** Calls one of `coder lsp`'s methods; resolves with its typed result. */
function call<M extends Method>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
  const id = nextRequest++;
  return new Promise<ResultOf<M>>((resolve, reject) => {
    waiting.set(id, { resolve: (result) => resolve(result as ResultOf<M>), reject });
    post({ type: "request", id, method, params } as ViewMessage);
  });
}

// ---------------------------------------------------------------------------------------
// Markdown.

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

const markdown = new Marked({ gfm: true });
markdown.use({
  renderer: {
    // Code blocks: highlighted when their language is known (never guessed: that costs a
    // pass per language), with a copy button the log's click handler serves.
    code(token: Tokens.Code): string {
      const language = (token.lang ?? "").trim().split(/\s+/)[0] ?? "";
      const known = language !== "" && hljs.getLanguage(language) !== undefined;
      const body = known
        ? hljs.highlight(token.text, { language, ignoreIllegals: true }).value
        : escapeHtml(token.text);
      const label = known ? escapeHtml(language) : "";
      return (
        `<div class="code"><div class="code-bar"><span class="language">${label}</span>` +
        `<button type="button" class="copy" aria-label="Copy code">Copy</button></div>` +
        `<pre><code class="hljs${known ? ` language-${label}` : ""}">${body}</code></pre></div>`
      );
    },
  },
});

function renderMarkdown(text: string): string {
  const html = markdown.parse(text, { async: false });
  return DOMPurify.sanitize(html);
}

/** An answer being written. Finished blocks (up to a blank line outside a code fence) are
 * rendered once each; only the block being written is rendered again, at most once a
 * frame, so a long answer costs what its last block costs. */
class Reply {
  readonly node: HTMLElement;
  #text = "";
  #frozen = 0;
  #scanned = 0;
  #inFence = false;
  #safe = 0;
  #tail: HTMLElement;
  #queued = false;
  #done = false;

  constructor(parent: HTMLElement) {
    this.node = element("div", "message assistant");
    this.#tail = element("div", "block");
    this.node.append(this.#tail);
    parent.append(this.node);
  }

  get text(): string {
    return this.#text;
  }

  add(delta: string): void {
    this.#text += delta;
    if (this.#queued) return;
    this.#queued = true;
    requestAnimationFrame(() => {
      this.#queued = false;
      this.#render();
    });
  }

  #render(): void {
    if (this.#done) return;
    this.#scan();
    if (this.#safe > this.#frozen) {
      const block = element("div", "block");
      block.innerHTML = renderMarkdown(this.#text.slice(this.#frozen, this.#safe));
      this.node.insertBefore(block, this.#tail);
      this.#frozen = this.#safe;
    }
    this.#tail.innerHTML = renderMarkdown(this.#text.slice(this.#frozen));
    follow();
  }

  /** Finds the last blank line outside a code fence among the whole lines not seen yet. */
  #scan(): void {
    for (;;) {
      const end = this.#text.indexOf("\n", this.#scanned);
      if (end < 0) return;
      const line = this.#text.slice(this.#scanned, end);
      if (/^ {0,3}(```|~~~)/.test(line)) this.#inFence = !this.#inFence;
      else if (!this.#inFence && line.trim() === "" && !/^\s*([-*+]|\d+[.)])\s/.test(this.#nextLineStart(end + 1))) {
        this.#safe = end + 1;
      }
      this.#scanned = end + 1;
    }
  }

  /** The start of the line after a blank one: a list item continuing a list is not cut
   * away from it (a loose list renders as one list). */
  #nextLineStart(from: number): string {
    return this.#text.slice(from, from + 8);
  }

  /** The answer is whole: rendered once more in one piece. */
  finish(text?: string): void {
    this.#done = true;
    if (text !== undefined && text !== "") this.#text = text;
    this.node.replaceChildren();
    const block = element("div", "block");
    block.innerHTML = renderMarkdown(this.#text);
    this.node.append(block);
    this.#tail = block;
    this.#frozen = this.#text.length;
    this.#scanned = this.#frozen;
    this.#safe = this.#frozen;    follow();
  }
}

// ---------------------------------------------------------------------------------------
// The log.

function element<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Keeps the newest line in sight unless the person scrolled up to read. */
let pinned = true;
log.addEventListener("scroll", () => {
  pinned = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
});
function follow(): void {
  trim();
  if (pinned) log.scrollTop = log.scrollHeight;
}

/** The log keeps its newest items only, so a long session's view stays small: the
 * conversation itself is the engine's, and `/resume` or the history bring back the rest. */
const MAX_LOG_ITEMS = 240;
let trimmed = 0;
let trimmedNote: HTMLElement | undefined;

function trim(): void {
  if (log.childElementCount - (trimmedNote ? 1 : 0) <= MAX_LOG_ITEMS) return;
  if (!trimmedNote) {
    trimmedNote = element("div", "note trimmed");
    log.prepend(trimmedNote);
  }
  while (log.childElementCount > MAX_LOG_ITEMS + 1) {
    const oldest = trimmedNote.nextElementSibling;
    if (!oldest) break;
    oldest.remove();
    trimmed++;
  }
  trimmedNote.textContent = `${trimmed.toLocaleString("en")} earlier items are not shown here.`;
  // What pointed into the removed items goes too.
  for (const [id, card] of toolCards) if (!card.card.isConnected) toolCards.delete(id);
  for (const [id, node] of inputs) if (!node.isConnected) inputs.delete(id);
  for (const [id, t] of threads) if (t.body !== log && !t.body.isConnected) threads.delete(id);
}

/** A conversation's place in the log: the log itself for the root, a nested thread for
 * one created by `conv_create`. */
interface Thread {
  id: ConversationId;
  body: HTMLElement;
  summary?: HTMLElement;
  reply?: Reply;
  thinking?: { node: HTMLDetailsElement; body: HTMLElement; started: number; last: number };
}

let root: ConversationId = "";
let workspaceDir = "";
const threads = new Map<ConversationId, Thread>();
const toolCards = new Map<string, ToolCard>();
const permissionCards = new Map<string, PermissionCard>();
/** User messages by the id of their input (the task, or a steer's input id). */
const inputs = new Map<TaskId, HTMLElement>();
/** Receipts that arrived before the message they belong to. */
const earlyReceipts = new Map<TaskId, string>();
let lastSeq = -1;
/** Set while replaying what the engine kept: times measured now mean nothing. */
let replaying = false;

function thread(id: ConversationId): Thread {
  const known = threads.get(id);
  if (known) return known;
  if (id === root || root === "") {
    const made = { id, body: log };
    threads.set(id, made);
    return made;
  }
  // Another conversation: a thread of its own, folded open, where it first shows.
  const box = element("details", "thread");
  box.open = true;
  const summary = element("summary", "", "Conversation");
  summary.setAttribute("aria-label", `Nested conversation ${id.slice(0, 8)}`);
  const body = element("div", "thread-body");
  box.append(summary, body);
  log.append(box);
  const made = { id, body, summary };
  threads.set(id, made);
  return made;
}

function note(where: HTMLElement, text: string, className = "note"): HTMLElement {
  const node = element("div", className, text);
  where.append(node);
  follow();
  return node;
}

function userMessage(where: HTMLElement, id: TaskId | undefined, text: string, nested: boolean): HTMLElement {
  const node = element("div", nested ? "message handed" : "message user");
  node.append(element("div", "text", text));
  const receipt = element("span", "receipt");
  node.append(receipt);
  if (!nested) {
    // The message takes the focus, so that its actions are reached from the keyboard too.
    node.tabIndex = 0;
    node.setAttribute("aria-label", `Your message: ${text.slice(0, 200)}`);
    const actions = element("div", "message-actions");
    const rewind = element("button", "secondary", "Rewind to here");
    rewind.type = "button";
    rewind.title = "Take the conversation, and the files coder changed, back to before this message";
    rewind.addEventListener("click", () => void rewindTo(node, text));
    const fork = element("button", "secondary", "Fork from here");
    fork.type = "button";
    fork.title = "A new session from before this message; this one stays as it is";
    fork.addEventListener("click", () => void forkFrom(node, text));
    actions.append(rewind, fork);
    node.append(actions);
  }
  where.append(node);
  if (id) {
    inputs.set(id, node);
    const early = earlyReceipts.get(id);
    if (early) setReceipt(node, early);
  }
  follow();
  return node;
}

/** Shows what became of a message sent while coder worked (`queued`, `steered`, `dropped`);
 * a message whose task starts needs no word. */
function setReceipt(node: HTMLElement, receipt: string): void {
  const badge = node.querySelector<HTMLElement>(".receipt");
  if (!badge) return;
  if (receipt === "started") receipt = "";
  badge.textContent = receipt;
  badge.dataset.receipt = receipt;
}

function endThinking(t: Thread): void {
  if (!t.thinking) return;
  const seconds = Math.max(1, Math.round((t.thinking.last - t.thinking.started) / 1000));
  const summary = t.thinking.node.querySelector("summary");
  if (summary) summary.textContent = replaying ? "Thought" : `Thought for ${seconds}s`;
  t.thinking = undefined;
}

// ---------------------------------------------------------------------------------------
// Tool calls.

const KIND_ICONS: Record<ToolKind, string> = {
  read: "📄",
  edit: "✏️",
  delete: "🗑️",
  move: "↔️",
  search: "🔍",
  execute: "▶️",
  think: "💭",
  fetch: "🌐",
  switch_mode: "🔀",
  other: "⚙️",
};

function locationLinks(locations: ToolLocation[]): HTMLElement | undefined {
  if (locations.length === 0) return undefined;
  const list = element("div", "locations");
  for (const location of locations) {
    // Inside the workspace a path is shown from its top, as people name it.
    const shown = workspaceDir && location.path.startsWith(`${workspaceDir}/`) ? location.path.slice(workspaceDir.length + 1) : location.path;
    const link = element("button", "location", location.line ? `${shown}:${location.line}` : shown);
    link.setAttribute("aria-label", `Open ${shown}${location.line ? ` at line ${location.line}` : ""}`);
    link.type = "button";
    link.title = "Open in the editor";
    link.addEventListener("click", () => post({ type: "open", path: location.path, line: location.line }));
    list.append(link);
  }
  return list;
}

/** A unified diff, its added and removed lines marked. */
function diffView(diff: string): HTMLElement {
  const pre = element("pre", "diff");
  pre.setAttribute("aria-label", "Changes");
  for (const line of diff.split("\n")) {
    const className = line.startsWith("+++") || line.startsWith("---")
      ? "file"
      : line.startsWith("@@")
        ? "hunk"
        : line.startsWith("+")
          ? "added"
          : line.startsWith("-")
            ? "removed"
            : "";
    pre.append(element("span", className, line));
  }
  return pre;
}

interface ToolCard {
  card: HTMLElement;
  state: HTMLElement;
  output: HTMLPreElement;
}

function toolStarted(t: Thread, event: Extract<Event, { type: "tool_call_started" }>): void {
  const card = element("section", "card tool");
  card.dataset.kind = event.kind;
  card.setAttribute("aria-label", event.title);
  const head = element("div", "head");
  head.append(
    element("span", "icon", KIND_ICONS[event.kind] ?? KIND_ICONS.other),
    element("span", "title", event.title),
  );
  const state = element("span", "state", "running");
  head.append(state);
  card.append(head);
  const links = locationLinks(event.locations);
  if (links) card.append(links);
  const output = element("pre", "output");
  output.hidden = true;
  output.setAttribute("aria-label", "Output");
  card.append(output);
  t.body.append(card);
  toolCards.set(event.callId, { card, state, output });
  // The call runs: whatever asked about it was answered.
  for (const request of permissionCards.values()) if (request.callId === event.callId) request.settle("Answered.");
  follow();
}

/** The files each task changed, from its calls' diffs, for the card at its end. */
const changedFiles = new Map<TaskId, Set<string>>();

function toolEnded(event: Extract<Event, { type: "tool_call_completed" | "tool_call_failed" }>): void {
  if (event.type === "tool_call_completed" && event.diff && event.taskId) {
    const files = changedFiles.get(event.taskId) ?? new Set<string>();
    for (const match of event.diff.matchAll(/^\+\+\+ (?:b\/)?(.+)$/gm)) if (match[1] !== "/dev/null") files.add(match[1] ?? "");
    changedFiles.set(event.taskId, files);
  }
  const tool = toolCards.get(event.callId);
  for (const request of permissionCards.values()) if (request.callId === event.callId) request.settle("Answered.");
  if (!tool) return;
  const failed = event.type === "tool_call_failed";
  tool.state.textContent = `${failed ? "failed" : "done"} · ${formatDuration(event.durationMs)}`;
  tool.card.classList.add(failed ? "failed" : "done");
  tool.card.append(element("div", "summary", event.summary));
  if (event.type === "tool_call_completed" && event.diff) tool.card.append(diffView(event.diff));
  follow();
}

function formatDuration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

// ---------------------------------------------------------------------------------------
// Permission requests.

interface PermissionCard {
  callId: string;
  taskId: TaskId | null;
  settle(text: string): void;
}

function permissionRequested(t: Thread, event: Extract<Event, { type: "permission_requested" }>): void {
  const card = element("section", "card permission");
  card.setAttribute("aria-label", `Permission: ${event.title}`);
  const head = element("div", "head");
  head.append(element("span", "icon", KIND_ICONS[event.kind] ?? KIND_ICONS.other), element("span", "title", event.title));
  card.append(head, element("div", "reason", event.reason));
  const links = locationLinks(event.locations);
  if (links) card.append(links);
  if (event.question) card.append(element("div", "question", event.question.question));
  if (event.command) card.append(element("pre", "command", event.command));
  if (event.diff) card.append(diffView(event.diff));
  if (event.plan) {
    const plan = element("div", "plan");
    plan.innerHTML = renderMarkdown(event.plan);
    card.append(plan);
  }
  const options = element("div", "options");
  options.setAttribute("role", "group");
  options.setAttribute("aria-label", "Your answer");
  const why = element("textarea", "why");
  why.rows = 2;
  why.placeholder = "Tell the model why not, or what to do instead (optional)";
  why.setAttribute("aria-label", "A message to the model with your answer (optional)");
  const choose = (option: PermissionOption) => {
    const message = option.takesMessage ? why.value.trim() : "";
    post({
      type: "answer",
      requestId: event.requestId,
      decision: message ? { decision: "option", optionId: option.optionId, message } : { decision: "option", optionId: option.optionId },
    });
    settle(`You chose: ${option.label}${message ? ` — “${message}”` : ""}`);
  };
  for (const option of event.options) {
    const choice = element("div", `option ${option.kind}`);
    const button = element("button", "", option.label);
    button.type = "button";
    button.dataset.optionId = option.optionId;
    button.setAttribute("aria-keyshortcuts", option.key);
    button.addEventListener("click", () => choose(option));
    choice.append(button);
    if (option.covers) {
      const covers = element("div", "covers", `Always covers: ${option.covers}`);
      covers.id = `covers-${event.requestId}-${option.optionId}`;
      button.setAttribute("aria-describedby", covers.id);
      choice.append(covers);
    }
    options.append(choice);
  }
  card.append(options);
  if (event.options.some((option) => option.takesMessage)) card.append(why);
  // The options' own keys choose them while the card has focus (not while typing).
  card.addEventListener("keydown", (key) => {
    if (key.target === why || key.ctrlKey || key.metaKey || key.altKey) return;
    const option = event.options.find((o) => o.key === key.key);
    if (option) {
      key.preventDefault();
      choose(option);
    }
  });
  t.body.append(card);
  const settle = (text: string) => {
    if (!permissionCards.delete(event.requestId)) return;
    card.classList.add("settled");
    options.remove();
    why.remove();
    card.append(element("div", "answer", text));
    updateStatus();
  };
  permissionCards.set(event.requestId, { callId: event.callId, taskId: event.taskId, settle });
  updateStatus();
  follow();
  if (!replaying) options.querySelector("button")?.focus({ preventScroll: true });
}

// ---------------------------------------------------------------------------------------
// State: busy, tokens, context, mode.

let state: EngineState = "idle";
let busySince = 0;
let tokens = 0;

function setState(next: EngineState): void {
  if (next !== "idle" && state === "idle") busySince = Date.now();
  state = next;
  if (next === "idle") busySince = 0;
  stopButton.hidden = next === "idle";
  document.body.dataset.state = next;
  updateStatus();
}

function updateStatus(): void {
  const asking = permissionCards.size;
  if (state === "idle") {
    statusLine.textContent = "";
    return;
  }
  const seconds = busySince ? Math.round((Date.now() - busySince) / 1000) : 0;
  const parts = [asking > 0 ? `waiting for you (${asking})` : "working", `${seconds}s`];
  if (tokens > 0) parts.push(`${tokens.toLocaleString("en")} tokens`);
  parts.push("Esc to stop");
  statusLine.textContent = parts.join(" · ");
}
setInterval(() => {
  if (state !== "idle") updateStatus();
}, 1000);

function setGauge(used: number, window: number | null): void {
  if (!window) return;
  const share = Math.min(100, Math.round((used / window) * 100));
  gauge.setAttribute("aria-valuenow", String(share));
  gauge.title = `Context: ${used.toLocaleString("en")} of ${window.toLocaleString("en")} tokens`;
  const fill = gauge.querySelector<HTMLElement>(".fill");
  if (fill) fill.style.width = `${share}%`;
  const label = gauge.querySelector<HTMLElement>(".label");
  if (label) label.textContent = `context ${share}%`;
}

// ---------------------------------------------------------------------------------------
// Events.

function apply(event: Event): void {
  if (event.seq <= lastSeq) return;
  lastSeq = event.seq;
  const t = thread(event.conversationId);
  const nested = event.conversationId !== root;
  switch (event.type) {
    case "task_started": {
      if (!nested && document.activeElement !== modelField) modelField.value = event.model;
      if (!nested && event.input !== undefined) {
        staleChanges?.();
        staleChanges = undefined;
      }
      if (event.input === undefined) return;
      const known = event.taskId ? inputs.get(event.taskId) : undefined;
      if (known) {
        // Queued input that starts now: it moves to where its work begins.
        t.body.append(known);
        setReceipt(known, "");
      } else {
        userMessage(t.body, event.taskId ?? undefined, event.input, nested);
      }
      if (nested && t.summary) t.summary.textContent = `Conversation: ${event.input.split("\n")[0]?.slice(0, 80) ?? ""}`;
      return;
    }
    case "agent_reasoning_delta": {
      const now = performance.now();
      if (!t.thinking) {
        const node = element("details", "thinking");
        const body = element("div", "thinking-body");
        node.append(element("summary", "", "Thinking…"), body);
        t.body.append(node);
        t.thinking = { node, body, started: now, last: now };
      }
      t.thinking.body.textContent += event.delta;
      t.thinking.last = now;
      return;
    }
    case "agent_message_delta":
      endThinking(t);
      t.reply ??= new Reply(t.body);
      t.reply.add(event.delta);
      return;
    case "reply_complete":
      endThinking(t);
      t.reply?.finish(event.text);
      t.reply = undefined;
      return;
    case "tool_call_started":
      toolStarted(t, event);
      return;
    case "tool_call_output_delta": {
      const tool = toolCards.get(event.callId);
      if (!tool) return;
      tool.output.hidden = false;
      tool.output.textContent += event.delta;
      tool.output.scrollTop = tool.output.scrollHeight;
      follow();
      return;
    }
    case "tool_call_completed":
    case "tool_call_failed":
      toolEnded(event);
      return;
    case "permission_requested":
      permissionRequested(t, event);
      return;
    case "permission_withdrawn":
      permissionCards.get(event.requestId)?.settle(`Withdrawn: ${event.reason}`);
      return;
    case "state_changed":
      setState(event.state);
      return;
    case "token_count":
      tokens = event.total.totalTokens;
      if (!nested) setGauge(event.contextTokens, event.contextWindow);
      updateStatus();
      return;
    case "mode_changed":
      if (!nested) modePicker.value = event.mode;
      note(t.body, `Mode: ${event.mode}`);
      return;
    case "input_receipt": {
      const node = inputs.get(event.inputId);
      if (node) setReceipt(node, event.receipt);
      else earlyReceipts.set(event.inputId, event.receipt);
      return;
    }
    case "turn_aborted":
      endThinking(t);
      t.reply?.finish();
      t.reply = undefined;
      settleTask(event.taskId, "Not answered: the task ended");
      if (event.reason === "interrupted") note(t.body, "Stopped.", "note stopped");
      else if (event.replacedBy) {
        note(
          t.body,
          `Handed over to another conversation (${event.replacedBy.toolName}); this work goes on when it answers.`,
          "note handoff",
        );
      }
      return;
    case "task_complete":
      settleTask(event.taskId, "Not answered: the task ended");
      if (!nested && event.taskId) changedCard(t, event.taskId);
      if (event.stepLimit) note(t.body, `Stopped at the step limit (${event.stepLimit} model calls).`);
      return;
    case "task_dropped":
      settleTask(event.taskId, "Not answered: the task ended");
      if (event.taskId) {
        const node = inputs.get(event.taskId);
        if (node) setReceipt(node, "dropped");
      }
      return;
    case "error":
      note(t.body, event.message, "note error");
      return;
    case "warning":
      note(t.body, event.message, "note warning");
      return;
    case "retrying":
      note(t.body, `${event.message} (retry ${event.attempt} of ${event.maxRetries})`, "note warning");
      return;
    case "compacted":
      note(t.body, `Context compacted: ${event.tokenBefore.toLocaleString("en")} → ${event.tokenCompact.toLocaleString("en")} tokens.`);
      return;
    case "workspace_reloaded":
      if (event.what === "commands" || event.what === "skills") commandChoices = undefined;
      return;
    case "verification":
      note(t.body, event.message, event.status === "failed" ? "note error" : "note");
      return;
    default:
      return;
  }
}

/** At the end of a task that changed files: the files, and keep or undo (the engine's
 * `/undo`, which puts back every file the turn changed). */
function changedCard(t: Thread, taskId: TaskId): void {
  const files = changedFiles.get(taskId);
  changedFiles.delete(taskId);
  if (!files || files.size === 0) return;
  const card = element("section", "card changed");
  card.setAttribute("aria-label", "Files changed in this turn");
  const head = element("div", "head");
  head.append(element("span", "icon", "±"), element("span", "title", `Changed ${files.size === 1 ? "1 file" : `${files.size} files`}`));
  card.append(head);
  const workspace = workspaceDir;
  const list = locationLinks([...files].map((path) => ({ path: path.startsWith("/") ? path : `${workspace}/${path}` })));
  if (list) card.append(list);
  const actions = element("div", "options");
  const keep = element("button", "", "Keep");
  keep.type = "button";
  const undo = element("button", "secondary", "Undo these changes");
  undo.type = "button";
  const done = (text: string) => {
    actions.remove();
    card.append(element("div", "answer", text));
  };
  keep.addEventListener("click", () => done("Kept."));
  undo.addEventListener("click", () => {
    undo.disabled = true;
    call("conversation/command", { conversationId: root, command: "/undo" }).then(
      (result) => done(result.text),
      (error: Error) => {
        undo.disabled = false;
        note(card, error.message, "note error");
      },
    );
  });
  actions.append(keep, undo);
  card.append(actions);
  t.body.append(card);
  // `/undo` takes back the last turn only: the card before this one can no longer.
  staleChanges?.();
  staleChanges = () => actions.remove();
  follow();
}

let staleChanges: (() => void) | undefined;

/** Closes the prompts of a task that ended (a replay shows requests answered long ago). */
function settleTask(taskId: TaskId | null, text: string): void {
  for (const request of permissionCards.values()) if (request.taskId === taskId) request.settle(text);
}

/** What the engine kept when the events are gone: the conversations' last messages. */
function applySnapshot(snapshot: SessionSnapshot): void {
  for (const conversation of snapshot.conversations) {
    const t = thread(conversation.id);
    for (const message of conversation.messages) showMessage(t, message);
  }
  for (const event of [...snapshot.runningTools, ...snapshot.permissionRequests]) {
    lastSeq = -1;
    apply(event);
  }
  lastSeq = snapshot.nextSeq - 1;
  setState(snapshot.state);
  modePicker.value = snapshot.mode;
}

function showMessage(t: Thread, message: ChatMessage): void {
  if (!message.content) return;
  if (message.role === "user") userMessage(t.body, undefined, message.content, t.id !== root);
  else if (message.role === "assistant") new Reply(t.body).finish(message.content);
}

// ---------------------------------------------------------------------------------------
// Start, and after a reload: everything the engine kept, then live events.

/** The server's start the view's events come from. */
let epoch: number | undefined;

let generation: number | undefined;

/** The conversation was replaced (a session resumed or forked, a rewind): the view shows
 * the new one from its history; the server's events go on from where they were. */
function clearView(): void {
  log.replaceChildren();
  trimmed = 0;
  trimmedNote = undefined;
  threads.clear();
  toolCards.clear();
  permissionCards.clear();
  inputs.clear();
  earlyReceipts.clear();
  changedFiles.clear();
  staleChanges = undefined;
}

/** The server was started again: its events start over, and so does the view. */
function startOver(): void {
  clearView();
  lastSeq = -1;
  setState("idle");
  held ??= [];
}

/** A message of a resumed session, from before this server started. */
function showEarlier(entry: HistoryEntry, rootId: ConversationId): void {
  if (!entry.text) return;
  const t = thread(rootId);
  if (entry.role === "user") userMessage(t.body, undefined, entry.text, false);
  else if (entry.role === "assistant") new Reply(t.body).finish(entry.text);
}

/** Live events that arrive before the view knows its session, or while the kept ones are
 * being fetched. */
let held: Event[] | undefined = [];

async function catchUp(): Promise<void> {
  held ??= [];
  replaying = true;
  try {
    const kept = await call("session/subscribe", { fromSeq: lastSeq + 1 });
    if ("events" in kept) for (const event of kept.events) apply(event);
    else applySnapshot(kept.snapshot);
  } catch (error) {
    note(log, `Could not load the conversation: ${String((error as Error).message ?? error)}`, "note error");
  } finally {
    replaying = false;
    const live = held;
    held = undefined;
    for (const event of live) apply(event);
  }
}

window.addEventListener("message", (message: MessageEvent<HostMessage>) => {
  const data = message.data;
  switch (data.type) {
    case "hello":
      if (epoch !== undefined && data.epoch !== epoch) startOver();
      else if (generation !== undefined && data.generation !== generation) clearView();
      root = data.root;
      workspaceDir = data.workspace;
      if (epoch !== data.epoch || generation !== data.generation) for (const entry of data.earlier) showEarlier(entry, data.root);
      epoch = data.epoch;
      generation = data.generation;
      greeted();
      void catchUp();
      void readPermissions();
      return;
    case "event":
      if (held) held.push(data.event);
      else apply(data.event);
      return;
    case "response": {
      const request = waiting.get(data.id);
      if (!request) return;
      waiting.delete(data.id);
      if (data.error) request.reject(Object.assign(new Error(data.error.message), { code: data.error.code }));
      else request.resolve(data.result);
      return;
    }
    case "problem":
      note(log, data.message, "note error");
      return;
    case "prefill":
      input.value = input.value ? `${input.value}\n${data.text}` : data.text;
      input.focus();
      return;
  }
});

// ---------------------------------------------------------------------------------------
// The composer.

/** What the person typed and attached, as the protocol's input. */
function inputOf(text: string, images: string[]): { text: string } | { items: InputItem[] } {
  if (images.length === 0) return { text };
  const items: InputItem[] = text ? [{ type: "text", text }] : [];
  for (const url of images) items.push({ type: "image", image_url: url });
  return { items };
}

function showImages(node: HTMLElement, images: string[]): void {
  for (const url of images) {
    const image = element("img");
    image.src = url;
    image.alt = "An image sent with the message";
    node.querySelector(".text")?.after(image);
  }
}

/** Settles when the host has said which session the view shows (its first `hello`). */
let greeted: () => void = () => {};
const connected = new Promise<void>((resolve) => (greeted = resolve));

/** Shows the permission preset and the mode the engine holds, from the answer of a bare
 * `/permissions` (its first line: `preset: balanced, mode: plan`), which changes nothing.
 * No event tells of a preset change, so it is read again after a typed command. */
async function readPermissions(): Promise<void> {
  if (!root) return;
  try {
    const answer = await call("conversation/command", { conversationId: root, command: "/permissions" });
    const first = /^preset: ([\w-]+), mode: ([\w-]+)/.exec(answer.text);
    if (!first) return;
    presetShown.value = first[1];
    // Only a mode the picker offers: the engine's answer is shown, never guessed.
    if ([...modePicker.options].some((option) => option.value === first[2])) modePicker.value = first[2];
  } catch (error) {
    note(log, `Could not read the permission preset: ${String((error as Error).message ?? error)}`, "note error");
  }
}

/** Starts a new conversation, as typing `/new` does: the engine's answer is shown and the
 * view talks to the conversation it made. */
async function newConversation(): Promise<void> {
  if (!root) await connected;
  if (!root) return;
  try {
    const answer = await call("conversation/command", { conversationId: root, command: "/new" });
    userMessage(log, undefined, "/new", false);
    if (answer.text) note(log, answer.text, "note command");
    if (answer.conversationId) root = answer.conversationId;
    await readPermissions();
  } catch (error) {
    note(log, String((error as Error).message ?? error), "note error");
  }
}

async function submit(): Promise<void> {
  // What is sent before the view is connected waits for it.
  if (!root) await connected;
  const text = input.value.trim();
  const images = attached.splice(0);
  showAttachments();
  if ((!text && images.length === 0) || !root) return;
  input.value = "";
  closeMenu();
  const what = inputOf(text, images);
  try {
    if (state !== "idle" && busySend.value === "steer") {
      const steered = await call("conversation/steer", { conversationId: root, ...what });
      const node = inputs.get(steered.inputId) ?? userMessage(log, steered.inputId, text, false);
      showImages(node, images);
      if (!node.querySelector<HTMLElement>(".receipt")?.dataset.receipt) {
        setReceipt(node, steered.steering ? "steering" : "queued");
      }
      return;
    }
    const wasBusy = state !== "idle";
    const sent = await call("conversation/send", { conversationId: root, ...what });
    if (sent.taskId) {
      const known = inputs.get(sent.taskId);
      if (known) showImages(known, images);
      else {
        const node = userMessage(log, sent.taskId, text, false);
        showImages(node, images);
        if (wasBusy && !node.querySelector<HTMLElement>(".receipt")?.dataset.receipt) setReceipt(node, "queued");
      }
    } else {
      // A built-in command answered at once.
      userMessage(log, undefined, text, false);
      if (sent.text) note(log, sent.text, "note command");
    }
    if (sent.conversationId) root = sent.conversationId;
    // A command may have changed the preset (`/permissions yolo`) or the conversation.
    if (!sent.taskId) await readPermissions();
  } catch (error) {
    note(log, String((error as Error).message ?? error), "note error");
  }
}

function stop(): void {
  if (state === "idle") return;
  void call("session/interrupt", {}).catch((error: Error) => note(log, error.message, "note error"));
}

byId<HTMLFormElement>("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  void submit();
});
input.addEventListener("keydown", (event) => {
  if (!menu.hidden && choices.length > 0) {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      select(active + (event.key === "ArrowDown" ? 1 : -1));
      return;
    }
    if (event.key === "Enter" || event.key === "Tab") {
      event.preventDefault();
      accept(active);
      return;
    }
    if (event.key === "Escape") {
      // Closes the menu only: Esc stops coder when no menu is open.
      event.preventDefault();
      event.stopPropagation();
      closeMenu();
      return;
    }
  }
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    void submit();
  }
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && state !== "idle") {
    event.preventDefault();
    stop();
  }
});
stopButton.addEventListener("click", stop);
byId<HTMLButtonElement>("new").addEventListener("click", () => void newConversation());
sendButton.title = "Send (Enter)";
modePicker.addEventListener("change", () => {
  if (!root) return;
  void call("conversation/setMode", { conversationId: root, mode: modePicker.value as Mode }).catch((error: Error) =>
    note(log, error.message, "note error"),
  );
});

// Copy buttons of code blocks.
log.addEventListener("click", (event) => {
  const button = (event.target as HTMLElement).closest<HTMLButtonElement>("button.copy");
  if (!button) return;
  const code = button.closest(".code")?.querySelector("code");
  if (!code) return;
  post({ type: "copy", text: code.textContent ?? "" });
  button.textContent = "Copied";
  setTimeout(() => (button.textContent = "Copy"), 1500);
});

// ---------------------------------------------------------------------------------------
// Sessions: resume a saved one; rewind or fork from a message.

const sessionPicker = byId<HTMLSelectElement>("sessions");

async function listSessions(): Promise<void> {
  try {
    const { sessions } = await call("session/list", {});
    const chosen = sessionPicker.value;
    const first = element("option", "", "Sessions…");
    first.value = "";
    sessionPicker.replaceChildren(first);
    for (const session of sessions) {
      const when = new Date(session.savedAt).toLocaleString("en", { dateStyle: "medium", timeStyle: "short" });
      const option = element("option", "", `${session.title || "(untitled)"} · ${when}`);
      option.value = session.sessionId;
      sessionPicker.append(option);
    }
    sessionPicker.value = chosen;
  } catch (error) {
    note(log, (error as Error).message, "note error");
  }
}

sessionPicker.addEventListener("focus", () => void listSessions());
sessionPicker.addEventListener("change", () => {
  const sessionId = sessionPicker.value;
  if (!sessionId) return;
  sessionPicker.value = "";
  void call("session/resume", { sessionId }).catch((error: Error) => note(log, error.message, "note error"));
});

/** The point of the conversation a message of the view is: the points whose first line
 * is the message's, taken in the order such messages show. */
async function pointOf(node: HTMLElement, text: string): Promise<number | undefined> {
  const firstLine = (text.split("\n")[0] ?? "").slice(0, 100);
  const { points } = await call("conversation/points", { conversationId: root });
  const same = points.filter((point) => point.text === firstLine);
  const shown = [...log.querySelectorAll<HTMLElement>(":scope > .message.user")].filter(
    (message) => (message.querySelector(".text")?.textContent ?? "").split("\n")[0]?.slice(0, 100) === firstLine,
  );
  // The view may show fewer messages than the history holds (trimmed): count from the end.
  const fromEnd = shown.length - 1 - shown.indexOf(node);
  return same[same.length - 1 - fromEnd]?.point;
}

async function rewindTo(node: HTMLElement, text: string): Promise<void> {
  if (state !== "idle") {
    note(log, "Stop coder first: a rewind waits until nothing runs.", "note warning");
    return;
  }
  try {
    const point = await pointOf(node, text);
    if (point === undefined) {
      note(log, "This message is no longer in the conversation's history.", "note warning");
      return;
    }
    const preview = await call("conversation/rewind", { conversationId: root, point, dryRun: true });
    const card = element("section", "card rewind");
    card.setAttribute("aria-label", "Rewind preview");
    card.append(element("div", "title", "Rewind to before this message?"), element("div", "reason", preview.text));
    const files = [
      ...preview.restored.map((path) => `restored: ${path}`),
      ...preview.removed.map((path) => `removed: ${path}`),
      ...preview.kept.map((kept) => `kept: ${kept.path} (${kept.reason})`),
    ];
    if (files.length > 0) card.append(element("pre", "", files.join("\n")));
    const actions = element("div", "options");
    const go = element("button", "", "Rewind");
    go.type = "button";
    const cancel = element("button", "secondary", "Cancel");
    cancel.type = "button";
    cancel.addEventListener("click", () => card.remove());
    go.addEventListener("click", () => {
      go.disabled = true;
      call("conversation/rewind", { conversationId: root, point }).then(
        (done) => note(log, done.text),
        (error: Error) => {
          go.disabled = false;
          note(card, error.message, "note error");
        },
      );
    });
    actions.append(go, cancel);
    card.append(actions);
    node.after(card);
    go.focus();
  } catch (error) {
    note(log, (error as Error).message, "note error");
  }
}

async function forkFrom(node: HTMLElement, text: string): Promise<void> {
  try {
    const point = await pointOf(node, text);
    if (point === undefined) {
      note(log, "This message is no longer in the conversation's history.", "note warning");
      return;
    }
    const forked = await call("session/fork", { conversationId: root, point });
    note(log, forked.text);
  } catch (error) {
    note(log, (error as Error).message, "note error");
  }
}

// ---------------------------------------------------------------------------------------
// Completion: `/` for the engine's commands and skills, `@` for its workspace paths.

interface Choice {
  label: string;
  detail: string;
  insert: string;
  /** Code points of `label` that matched, to highlight. */
  indices?: number[];
}

let choices: Choice[] = [];
let active = 0;
/** Where the text the chosen entry replaces starts. */
let replaceFrom = 0;
let commandChoices: Promise<Choice[]> | undefined;
let completionTicket = 0;

function loadCommands(): Promise<Choice[]> {
  commandChoices ??= Promise.all([call("command/list", {}), call("skill/list", {})]).then(
    ([commands, skills]) => [
      ...commands.commands.map((command) => ({
        label: `/${command.name}`,
        detail: [command.argumentHint, command.description, command.source === "builtin" ? "" : `(${command.source})`]
          .filter(Boolean)
          .join(" "),
        insert: `/${command.name} `,
      })),
      ...skills.skills.map((skill) => ({
        label: skill.name,
        detail: `skill: ${skill.description}`,
        insert: `Use the ${skill.name} skill: `,
      })),
    ],
    (error: unknown) => {
      commandChoices = undefined;
      throw error;
    },
  );
  return commandChoices;
}

/** `@` references with a space in them are quoted, as the engine reads them. */
const reference = (path: string) => (/\s/.test(path) ? `@"${path}"` : `@${path}`);

async function complete(): Promise<void> {
  const ticket = ++completionTicket;
  const before = input.value.slice(0, input.selectionStart ?? input.value.length);
  const slash = /^\/(\S*)$/.exec(before);
  const at = /(?:^|\s)@("?[^\s"]*)$/.exec(before);
  let found: Choice[] = [];
  try {
    if (slash) {
      const query = (slash[1] ?? "").toLowerCase();
      found = (await loadCommands()).filter((choice) => choice.label.toLowerCase().includes(query));
      replaceFrom = 0;
    } else if (at) {
      const query = at[1] ?? "";
      const result = await call("workspace/completePaths", { query, limit: 20 });
      found = result.matches.map((match) => ({
        label: match.path,
        detail: match.kind === "dir" ? "folder" : "",
        insert: match.kind === "dir" ? `@${match.path}` : `${reference(match.path)} `,
        indices: match.indices,
      }));
      replaceFrom = before.length - query.length - 1;
    }
  } catch {
    found = [];
  }
  if (ticket !== completionTicket) return;
  showMenu(found);
}

function showMenu(found: Choice[]): void {
  choices = found;
  menu.replaceChildren();
  if (found.length === 0) {
    closeMenu();
    return;
  }
  found.forEach((choice, index) => {
    const item = element("li");
    item.id = `completion-${index}`;
    item.setAttribute("role", "option");
    const name = element("span", "name");
    const marked = new Set(choice.indices ?? []);
    Array.from(choice.label).forEach((char, at) => {
      name.append(marked.has(at) ? element("mark", "", char) : document.createTextNode(char));
    });
    item.append(name, element("span", "detail", choice.detail));
    item.addEventListener("mousedown", (event) => {
      event.preventDefault(); // the input keeps the focus
      accept(index);
    });
    menu.append(item);
  });
  menu.hidden = false;
  input.setAttribute("aria-expanded", "true");
  select(0);
}

function select(index: number): void {
  if (choices.length === 0) return;
  active = (index + choices.length) % choices.length;
  menu.querySelectorAll("li").forEach((item, at) => item.setAttribute("aria-selected", String(at === active)));
  const chosen = menu.children[active];
  input.setAttribute("aria-activedescendant", chosen?.id ?? "");
  chosen?.scrollIntoView({ block: "nearest" });
}

function accept(index: number): void {
  const choice = choices[index];
  if (!choice) return;
  const caret = input.selectionStart ?? input.value.length;
  input.value = input.value.slice(0, replaceFrom) + choice.insert + input.value.slice(caret);
  const at = replaceFrom + choice.insert.length;
  input.setSelectionRange(at, at);
  closeMenu();
  // A folder: go on completing inside it.
  if (choice.insert.endsWith("/")) void complete();
}

function closeMenu(): void {
  completionTicket++;
  choices = [];
  menu.hidden = true;
  menu.replaceChildren();
  input.setAttribute("aria-expanded", "false");
  input.removeAttribute("aria-activedescendant");
}

input.addEventListener("input", () => void complete());
input.addEventListener("blur", () => setTimeout(closeMenu, 100));

// ---------------------------------------------------------------------------------------
// Images pasted or dropped, sent with the next message.

/** Larger images are refused here rather than by the model's service. */
const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
const attached: string[] = [];

function showAttachments(): void {
  attachmentsBox.replaceChildren();
  attached.forEach((url, index) => {
    const figure = element("figure");
    const image = element("img");
    image.src = url;
    image.alt = `Image ${index + 1} to send`;
    const remove = element("button", "secondary", "×");
    remove.type = "button";
    remove.setAttribute("aria-label", `Remove image ${index + 1}`);
    remove.addEventListener("click", () => {
      attached.splice(index, 1);
      showAttachments();
    });
    figure.append(image, remove);
    attachmentsBox.append(figure);
  });
  attachmentsBox.hidden = attached.length === 0;
}

function attach(files: Iterable<File>): boolean {
  let any = false;
  for (const file of files) {
    if (!file.type.startsWith("image/")) continue;
    any = true;
    if (file.size > MAX_IMAGE_BYTES) {
      note(log, `${file.name || "The image"} is larger than 5 MiB: not attached.`, "note warning");
      continue;
    }
    const reader = new FileReader();
    reader.addEventListener("load", () => {
      if (typeof reader.result === "string") attached.push(reader.result);
      showAttachments();
    });
    reader.readAsDataURL(file);
  }
  return any;
}

input.addEventListener("paste", (event) => {
  if (event.clipboardData && attach(event.clipboardData.files)) event.preventDefault();
});
const composer = byId<HTMLFormElement>("composer");
composer.addEventListener("dragover", (event) => event.preventDefault());
composer.addEventListener("drop", (event) => {
  if (event.dataTransfer && attach(event.dataTransfer.files)) event.preventDefault();
});

byId<HTMLButtonElement>("attach").addEventListener("click", () => post({ type: "attachSelection" }));

modelField.addEventListener("keydown", (event) => {
  if (event.key !== "Enter" || !root) return;
  event.preventDefault();
  const model = modelField.value.trim();
  if (!model) return;
  void call("conversation/command", { conversationId: root, command: `/model ${model}` }).then(
    (result) => note(log, result.text, "note command"),
    (error: Error) => note(log, error.message, "note error"),
  );
});

post({ type: "ready" });
