// The low-level API: one engine session with many conversations, mirroring the `coder lsp`
// methods, and the raw engine events (see docs/events.md) as listeners or an async iterable.

import { coded } from "./errors";
import { native, type NativeEngine } from "./native";
import { TASK_END_EVENTS } from "./protocol";
import type {
  ArchivedSegment,
  ChatMessage,
  CommandResult,
  SessionInfo,
  CommandInfo,
  ConversationSummary,
  CreateParams,
  DestroyResult,
  EngineOptions,
  Event,
  ForkResult,
  HistoryEntry,
  InputItem,
  Mode,
  McpServerOptions,
  ModelOptions,
  PathMatch,
  PermissionDecision,
  PermissionRule,
  RewindPoint,
  RewindResult,
  RuleInfo,
  SessionSnapshot,
  SetContextParams,
  SkillInfo,
  SteerResult,
  SubscribeResult,
} from "./protocol";

/** What `setContext` changes of a conversation's context: every field may be left out (it
 * is kept); `null` puts `baseInstructions` or `mcpAllowlist` back to the default. */
export type ContextUpdate = Omit<SetContextParams, "conversationId">;

/** One configured MCP server as the engine reports it. */
export interface McpServerState {
  name: string;
  command?: string;
  args: string[];
  url?: string;
  enabled: boolean;
  state: "starting" | "ready" | "failed" | "disabled";
  /** Its tools' names, once it is ready. */
  tools: string[];
  error?: string;
}

// The option types are generated from the Rust definitions (`coder_protocol::options`).
export type { EngineOptions, McpServerOptions, ModelOptions } from "./protocol";

export type EventListener = (event: Event) => void;

/** Where a listener attached with `subscribe` starts. */
export interface SubscribeOptions {
  /** The first `seq` wanted: one more than the highest the listener holds (0 for all the
   * engine still keeps). */
  fromSeq: number;
  /** Called once, first, when `fromSeq` is older than the oldest event the engine keeps:
   * where the session is; the events from its `nextSeq` follow. */
  onSnapshot?: (snapshot: SessionSnapshot) => void;
}

/** The three answers to a plan (`exit_plan_mode`'s permission request). */
export type PlanExitChoice = "start_editing" | "clear_context_and_start" | "keep_planning";

/** An answer to a plan: `feedback` goes to the model with `keep_planning`. */
export interface PlanExitAnswer {
  selected: PlanExitChoice;
  feedback?: string;
}

/** The mode change an `exit_plan_mode` answer or `setMode` made. */
export type ModeChangedEvent = Extract<Event, { type: "mode_changed" }>;

/** Disposes the native side of engines collected without `dispose`. */
const collected = new FinalizationRegistry<NativeEngine>((native) => {
  native.dispose().catch(() => {});
});

/** One engine session. Create with `Engine.create`, end with `dispose`. */
export class Engine {
  readonly #native: NativeEngine;
  readonly #listeners = new Set<EventListener>();
  #keepAlive: ReturnType<typeof setInterval> | undefined;
  /** Tasks sent from here that have not ended. */
  readonly #pending = new Set<string>();
  #disposed = false;

  private constructor(options: EngineOptions) {
    // The addon holds the event callback for the engine's whole life; through a WeakRef it
    // does not keep this object alive, so an engine dropped without `dispose` (and with no
    // task of its own running) is collected and its native side disposed.
    const self = new WeakRef(this);
    this.#native = native().NativeEngine.create({ ...options }, (batch) => {
      const engine = self.deref();
      if (engine) engine.#deliver(batch);
    });
    collected.register(this, this.#native, this);
  }

  /** A connection test: one short request to `model`, no retries. Resolves with the
   * model's reply; rejects with why the model cannot be used (status and message from the
   * provider, a refused connection, a 15 s timeout). */
  static checkModel(model: ModelOptions): Promise<string> {
    return native().checkModel({ ...model });
  }

  /** The models a provider lists (`GET /models`); `model.model` is not used. Rejects with
   * the provider's answer when it cannot list them. */
  static listModels(model: ModelOptions): Promise<Array<{ id: string; ownedBy?: string; displayName?: string }>> {
    return native().listModels({ ...model });
  }

  /** coder's built-in tools, with what each is for. */
  static builtinTools(): Array<{ name: string; description: string }> {
    return native().builtinToolList();
  }

  /** coder's built-in system prompt; a conversation's `baseInstructions` replace it. */
  static builtInPrompt(): string {
    return native().builtInPrompt();
  }

  /** Starts a session; throws on invalid options (an unknown field, no model anywhere). */
  static create(options: EngineOptions): Engine {
    return new Engine(options);
  }

  get sessionId(): string {
    return this.#native.sessionId();
  }

  get rootConversation(): string {
    return this.#native.rootConversation();
  }

  /**
   * The sessions saved in the workspace (`.coder/sessions/`), newest first: id, when saved,
   * model, conversation and message counts, and the first thing asked (`title`).
   */
  savedSessions(): SessionInfo[] {
    return this.#native.savedSessions();
  }

  /** Deletes a saved session of the workspace (its snapshot and journal); `false` when
   * there was none. Rejects with `busy` for the session running in this engine. */
  deleteSavedSession(sessionId: string): boolean {
    return this.#native.deleteSavedSession(sessionId);
  }

  /** Deletes every saved session of the workspace but this engine's; returns how many. */
  deleteSavedSessions(): number {
    return this.#native.deleteSavedSessions();
  }

  /** Takes up a saved session (`.coder/sessions/<id>.json`); returns the messages loaded. */
  resume(sessionId: string): number {
    return this.#live().resume(sessionId);
  }

  /**
   * The conversation's points, oldest first: each input a person sent it that its history
   * still holds (a compaction or a clear takes earlier ones away), by its place among the
   * conversation's inputs, with its first line.
   */
  rewindPoints(conversationId: string): RewindPoint[] {
    return this.#native.rewindPoints(conversationId);
  }

  /**
   * Takes the conversation back to before `point`: the files the engine's turns changed
   * since go back to what they held then (files changed since by the person, or by another
   * conversation's later turns, are kept and named in `kept`), and the history is cut
   * before that input; the model's next request carries it as it is left. With `dryRun`,
   * resolves with what it would do and changes nothing. Outside a git repository only the
   * conversation goes back (`filesRecorded: false`). Rejects with `busy` while a task runs.
   */
  rewind(conversationId: string, point: number, options: { dryRun?: boolean; files?: boolean } = {}): Promise<RewindResult> {
    return this.#live().rewind(conversationId, point, options.dryRun ?? false, options.files ?? true);
  }

  /**
   * Starts a new saved session from `point` of the conversation and goes on in it (as
   * `resume` does): the fork holds this session's conversations, that one cut before the
   * point. The session it leaves stays on disk as it was; no file of the workspace is
   * touched. Resolves with the fork's id (`sessionId`).
   */
  fork(conversationId: string, point: number): Promise<ForkResult> {
    return this.#live().fork(conversationId, point);
  }

  createConversation(params: CreateParams = {}): string {
    return this.#live().createConversation(params);
  }

  /** Queues input; returns the task id at once. Progress arrives as events. */
  send(conversationId: string, input: string | InputItem[]): string {
    const items = typeof input === "string" ? [{ type: "text" as const, text: input }] : input;
    const task = this.#live().send(conversationId, items);
    this.#pending.add(task);
    this.#hold();
    return task;
  }

  /**
   * Steers input into the conversation's running task: its model reads it at the next
   * checkpoint (after the current tool calls), without the task ending, and an
   * `input_receipt` event says `steered`. When no task runs there (or it ends first), the
   * input is queued as `send()` queues it, under the same id. `steering` says whether a task
   * of the conversation was running.
   */
  steer(conversationId: string, input: string | InputItem[]): SteerResult {
    const items = typeof input === "string" ? [{ type: "text" as const, text: input }] : input;
    const steered = this.#live().steer(conversationId, items);
    if (!steered.steering) {
      this.#pending.add(steered.inputId);
      this.#hold();
    }
    return steered;
  }

  /** Withdraws input no model has read yet (queued, or waiting to be steered). */
  withdrawInput(inputId: string): boolean {
    return this.#live().withdrawInput(inputId);
  }

  list(): ConversationSummary[] {
    return this.#native.list();
  }

  /**
   * The slash commands a person can type (`/name args`): the built-in ones, then the custom
   * ones (`.coder/commands/<name>.md`), with descriptions and argument hints, for completion.
   */
  commands(): CommandInfo[] {
    return this.#native.commands();
  }

  /**
   * Workspace paths matching what a person typed after `@`, best first, for a completion
   * menu: fuzzy and path-aware (`src/lib` finds `server/core/src/lib.rs`), `.gitignore`d
   * and hidden paths left out (hidden ones come when the query starts a name with `.`), a
   * `dir/` prefix narrows to that folder, an empty query lists the top of the workspace, a
   * quoted query (`"my fi`) keeps its spaces. `indices` are the matched positions in code
   * points (`Array.from(path)`), for highlighting. `limit` defaults to 50 (at most 1000).
   */
  completePaths(query: string, limit?: number): PathMatch[] {
    return this.#native.completePaths(query, limit);
  }

  /** Sets the session's MCP servers by name, as the program's own choice (it applies at
   * once): servers not named stop, new or changed ones start; `mcp_server_status` events
   * follow as each starts or fails. */
  setMcpServers(servers: Record<string, McpServerOptions>): void {
    this.#live().setMcpServers({ ...servers });
  }

  /** Stops an MCP server and starts it again; `false` when there is no such server. */
  restartMcpServer(name: string): boolean {
    return this.#live().restartMcpServer(name);
  }

  /** The configured MCP servers, with their state and, once ready, their tools' names. */
  mcpServers(): McpServerState[] {
    return this.#native.mcpServers();
  }

  /** Hides built-in tools (coder's names) from the tasks that start from now on; `[]`
   * offers again every tool the configuration allows. */
  setDisabledTools(names: string[]): void {
    this.#live().setDisabledTools(names);
  }

  /** The built-in tools, each with whether tasks starting now are offered it. */
  builtinTools(): Array<{ name: string; description: string; offered: boolean }> {
    return this.#native.builtinTools();
  }

  /** The skills (`.coder/skills/<dir>/SKILL.md`) the model is told about. */
  skills(): SkillInfo[] {
    return this.#native.skills();
  }

  history(conversationId: string, limit?: number): HistoryEntry[] {
    return this.#native.history(conversationId, limit ?? null);
  }

  /** The conversation in OpenAI Chat Completions form, tool calls included. */
  messages(conversationId: string): ChatMessage[] {
    return this.#native.messages(conversationId);
  }

  destroy(conversationId: string): DestroyResult {
    return this.#live().destroy(conversationId);
  }

  /**
   * Compacts the conversation's history now: the model summarises its older part, which is
   * archived (`archive`). Returns the task id at once; `compacted` and `token_count` events
   * report it.
   */
  compact(conversationId: string): string {
    const task = this.#live().compact(conversationId);
    this.#pending.add(task);
    this.#hold();
    return task;
  }

  /**
   * Takes what a person typed, as a prompt box would: a built-in `/command` runs as
   * `command()` does (`text` for people, no task for most); anything else, a custom command
   * included, is queued as `send()` queues it and its `taskId` returned. An unknown command
   * throws (`invalid_params`).
   */
  input(conversationId: string, input: string | InputItem[]): CommandResult {
    const items = typeof input === "string" ? [{ type: "text" as const, text: input }] : input;
    const result = this.#live().input(conversationId, items);
    if (result.taskId) {
      this.#pending.add(result.taskId);
      this.#hold();
    }
    return result;
  }

  /**
   * Runs a slash command (`/help`, `/model name`, `/mode plan`, `/compact`, `/diff`, a custom
   * command, ...) in the conversation: `text` for people, and the `taskId` or
   * `conversationId` it started. An unknown command throws (`invalid_params`).
   */
  command(conversationId: string, command: string): CommandResult {
    const result = this.#live().command(conversationId, command);
    if (result.taskId) {
      this.#pending.add(result.taskId);
      this.#hold();
    }
    return result;
  }

  /** What compactions replaced, one segment per compaction, oldest first. */
  archive(conversationId: string): ArchivedSegment[] {
    return this.#native.archive(conversationId);
  }

  /** Interrupts the conversation's running task; returns whether one was running. */
  interrupt(conversationId: string): boolean {
    return this.#live().interrupt(conversationId);
  }

  /**
   * Interrupts the session's work, whatever conversation it is on: the running task stops
   * and the continuations queued by its handoffs are dropped, their calls closed with a
   * result saying so. Returns whether a task was running.
   */
  interruptSession(): boolean {
    return this.#live().interruptSession();
  }

  respondPermission(requestId: string, decision: PermissionDecision): void {
    this.#live().respondPermission(requestId, decision);
  }

  /**
   * Answers the permission request of an `exit_plan_mode` call (its `options` are
   * `start_editing`, `clear_context_and_start`, `keep_planning`): start editing with the
   * history kept, clear the history and start from the plan, or keep planning with
   * optional `feedback` for the model. A `mode_changed` event follows when plan mode ends.
   */
  respondToPlanExit(requestId: string, answer: PlanExitAnswer): void {
    this.#live().respondPermission(requestId, planDecision(answer));
  }

  setModel(model: ModelOptions): void {
    this.#live().setModel({ ...model });
  }

  setMode(conversationId: string, mode: Mode): void {
    this.#live().setMode(conversationId, mode);
  }

  /**
   * Changes a conversation's context (`conversation/setContext`): its base instructions
   * (`null`: the built-in prompt), new user instructions (a user message after its
   * history), its MCP allowlist (checked as at creation; `null`: every tool), its tool
   * preferences, or `refreshMcpView` to build its MCP view again. A running task keeps the
   * context it started with; the next one has the new one. Throws (`invalid_params`, and
   * nothing changes) when any part is refused.
   */
  setContext(conversationId: string, update: ContextUpdate): void {
    this.#live().setContext({ ...update, conversationId });
  }

  /**
   * The rules files the system prompt holds now (`AGENTS.md`, `CLAUDE.md`, `.coder/rules/`,
   * the user-level file), in the prompt's order, nearest last; see docs/prompt.md.
   */
  rules(): RuleInfo[] {
    return this.#native.rules();
  }

  /**
   * The permission rules a person recorded with "always" for this project: kept in their
   * own state, applied by every door (docs/permissions.md).
   */
  permissionRules(): PermissionRule[] {
    return this.#native.permissionRules();
  }

  /** Removes one recorded permission rule by id; whether there was one. */
  removePermissionRule(id: string): boolean {
    return this.#native.removePermissionRule(id);
  }

  /** The running task as `[conversationId, taskId]`. */
  runningTask(): [string, string] | null {
    const running = this.#native.runningTask();
    return running ? [running[0], running[1]] : null;
  }

  /** Calls `listener` for every event, in `seq` order; returns the unsubscribe function.
   * While listeners are behind, consecutive text or thinking deltas of one task arrive
   * merged into one (joined text, the last `seq`; see the README). */
  onEvent(listener: EventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Attaches another listener from `fromSeq`, as a client that reconnects does: it gets
   * the events from `fromSeq` on (kept by the engine, never merged), or, when those are no
   * longer kept, `onSnapshot` with a snapshot of the session first, then every later event
   * in `seq` order. The other listeners are not disturbed. Returns the unsubscribe function.
   * Throws `invalid_params` for a `fromSeq` past the next event's. */
  subscribe(options: SubscribeOptions, listener: EventListener): () => void {
    let first = true;
    const subscription = this.#live().subscribe(options.fromSeq, (batch: string) => {
      if (first) {
        first = false;
        const missed = JSON.parse(batch) as SubscribeResult;
        if ("snapshot" in missed) {
          call(() => options.onSnapshot?.(missed.snapshot));
          return;
        }
        for (const event of missed.events) call(() => listener(event));
        return;
      }
      for (const event of JSON.parse(batch) as Event[]) call(() => listener(event));
    });
    const close = (): void => subscription.close();
    this.#onDispose.push(close);
    return close;
  }

  /** Every event from now until `dispose`, as an async iterable. */
  events(): AsyncIterableIterator<Event> {
    const queue: Event[] = [];
    let wake: (() => void) | undefined;
    let done = false;
    const unsubscribe = this.onEvent((event) => {
      queue.push(event);
      wake?.();
    });
    this.#onDispose.push(() => {
      done = true;
      wake?.();
    });
    const iterator: AsyncIterableIterator<Event> = {
      [Symbol.asyncIterator]: () => iterator,
      next: async () => {
        while (queue.length === 0 && !done) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
        }
        const value = queue.shift();
        return value ? { value, done: false } : { value: undefined, done: true };
      },
      return: async () => {
        unsubscribe();
        done = true;
        return { value: undefined, done: true };
      },
    };
    return iterator;
  }

  readonly #onDispose: Array<() => void> = [];

  /** Ends the session: the running task is interrupted, the snapshot saved, MCP servers
   * stopped; every event up to the end is delivered before the promise resolves. */
  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    collected.unregister(this);
    try {
      await this.#native.dispose();
    } finally {
      this.#release();
      for (const finish of this.#onDispose) finish();
      this.#listeners.clear();
    }
  }

  #deliver(batch: string): void {
    const events = JSON.parse(batch) as Event[];
    for (const event of events) {
      if (endsTask(event) && event.taskId) {
        this.#pending.delete(event.taskId);
      }
      if (event.type === "state_changed" && event.state === "idle" && this.#pending.size === 0) {
        this.#release();
      }
      for (const listener of this.#listeners) call(() => listener(event));
    }
  }

  /** The addon, for calls that change the session: they throw after `dispose` (reads such
   * as `history` still answer). */
  #live(): NativeEngine {
    if (this.#disposed) throw coded("invalid_params", "this engine was disposed");
    return this.#native;
  }

  /** Keeps Node's event loop, and this engine, alive while work is queued or running (the
   * event listener itself never does, so an idle engine never holds a process open). */
  #hold(): void {
    this.#keepAlive ??= setInterval(() => this.#native, 1 << 30);
  }

  #release(): void {
    if (this.#keepAlive) clearInterval(this.#keepAlive);
    this.#keepAlive = undefined;
  }
}

/** Calls a listener. The other listeners and later events still get theirs when it
 * throws; the error surfaces as an uncaught exception, as a throwing EventEmitter
 * listener's would. */
function call(listener: () => void): void {
  try {
    listener();
  } catch (err) {
    queueMicrotask(() => {
      throw err;
    });
  }
}

/** A plan answer as the permission answer the engine takes; anything else than the three
 * choices throws. */
function planDecision(answer: PlanExitAnswer): PermissionDecision {
  switch (answer?.selected) {
    case "start_editing":
      return { decision: "start_editing" };
    case "clear_context_and_start":
      return { decision: "clear_context_and_start" };
    case "keep_planning":
      return typeof answer.feedback === "string"
        ? { decision: "keep_planning", message: answer.feedback }
        : { decision: "keep_planning" };
    default:
      throw coded(
        "invalid_params",
        "respondToPlanExit: `selected` must be start_editing, clear_context_and_start or keep_planning",
        TypeError,
      );
  }
}

/** Whether `event` ends a task: every task id `send` returned ends with exactly one such
 * event (`task_complete`, `turn_aborted`, or `task_dropped` for a task dropped unrun). */
export function endsTask(event: Event): boolean {
  return (TASK_END_EVENTS as readonly string[]).includes(event.type);
}
