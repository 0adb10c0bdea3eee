// `SemaSession`: one session of SemaCore 2's pool, over one coder `Engine`. It owns the
// translation of the engine's events into SemaCore's names and payloads (docs/events.md),
// which the SemaCore 1 API on the core reaches through the active session.

import { EventEmitter } from "node:events";
import { isAbsolute, join } from "node:path";

import { codeOf, coded } from "./errors";
import type { Engine } from "./engine";
import type {
  CommandInfo,
  ErrorKind,
  Event,
  InputItem,
  Mode,
  PermissionDecision,
  PermissionOption,
  Preset,
  Question,
} from "./protocol";
import { type AskQuestionResponseData, askQuestionRequest, questionDecision } from "./questions";
import { semaName } from "./tools";

/** The main conversation's agent id in every event (SemaCore's `MAIN_AGENT_ID`). */
export const MAIN_AGENT_ID = "main";

export type AgentMode = "Agent" | "Plan";

/** SemaCore's permission levels, from asking for everything to asking for nothing. */
export type PermissionLevel = "Ask" | "AutoEdit" | "AutoRun" | "Bypass";

/** SemaCore 2's options for `createSession`. */
export interface CreateSessionOptions {
  /** A saved session to resume; left out, a new session. */
  sessionId?: string;
  agentMode?: AgentMode;
  /** Left out: `Ask`. */
  permissionLevel?: PermissionLevel;
  /** A model id (`modelName[provider]`) for this session only; left out, the core's main. */
  mainModel?: string;
  /** Accepted for SemaCore's sake: coder uses one model per session. */
  quickModel?: string;
}

/** What `createSession` resolves with; a failure is a value, not a rejection. */
export type CreateSessionResult = { ok: true; session: SemaSession } | { ok: false; error: string };

/** An image sent with an input: a `data:` URL, or base64 data with its media type. */
export interface InputImageAttachment {
  type?: "image";
  /** A `data:` URL or an `http(s)` URL. */
  url?: string;
  /** Base64 data, with `mediaType` (`image/png`, ...). */
  data?: string;
  mediaType?: string;
  name?: string;
}

export interface ToolPermissionResponse {
  /** The request's `toolId`: the answer goes to that request. Left out, the oldest open
   * request of `toolName`. */
  toolId?: string;
  toolName: string;
  /** `agree` (once), `allow` (always), `refuse` (refused, and the task ends: the call's
   * result says the user refused it, and `session:interrupted` follows), or any other text:
   * refused, the text goes to the model as the reason, and the task goes on. */
  selected: string;
}

/** The answer to `pick:option:request`. */
export interface PickOptionResponse {
  agentId: string;
  answers: string | null;
}

/** The answer to `plan:exit:request` (echoed as `plan:exit:response`). */
export interface PlanExitResponse {
  /** The conversation asked (`main` for the root); left out, the oldest open plan. */
  agentId?: string;
  selected: "startEditing" | "clearContextAndStart" | "keepPlanning";
  /** With `keepPlanning`: what the model should change. */
  feedback?: string;
}

/** `plan:exit:request`: the model asks to leave plan mode with `planContent` (markdown).
 * `planFilePath` is always `""`: the engine keeps the plan in the conversation. */
export interface PlanExitRequest {
  agentId: string;
  planFilePath: string;
  planContent: string;
  options: { startEditing: string; clearContextAndStart: string; keepPlanning: string };
}

/** `plan:implement`: the context was cleared and the plan is the conversation's start. */
export interface PlanImplement {
  planFilePath: string;
  planContent: string;
}

export type ForkFileEffect = "modify" | "recreate" | "delete";

export interface ForkFileChange {
  filePath: string;
  displayPath: string;
  effect: ForkFileEffect;
  additions: number;
  removals: number;
  binary?: boolean;
}

/** What `fork` at an input would do to the files (nothing changes). */
export interface ForkPreview {
  messageUuid: string;
  canRestoreFiles: boolean;
  files: ForkFileChange[];
}

export interface ForkOptions {
  /** Also put the files back to what they held before the input. */
  restoreFiles?: boolean;
}

export type ForkResult = { ok: true; sessionId: string; restoredFiles: string[] } | { ok: false; error: string };

export type TaskStatus = "running" | "completed" | "failed" | "killed";

/** A conversation the model opened (`SubAgent`) or a command a tool runs (`RunShell`). */
export interface TaskListItem {
  taskId: string;
  pid?: number;
  filepath: string;
  status: TaskStatus;
  type: "RunShell" | "SubAgent";
  command: string;
  agentType?: string;
  foreground?: boolean;
  startTime: number;
  endTime?: number;
}

export interface Usage {
  useTokens: number;
  maxTokens: number;
  promptTokens: number;
}

/** The process-level events: they reach `SemaCore.on` from every session. */
export const PROCESS_EVENTS = ["mcp:server:status"] as const;
export type ProcessEvent = (typeof PROCESS_EVENTS)[number];

/** What the core gives a session it opens. */
export interface SessionSetup {
  engine: Engine;
  /** The conversation the session's input goes to. */
  root: string;
  workingDir: string;
  historyLoaded: boolean;
  contextWindow: number;
  /** `false` drops `message:thinking:chunk` events. */
  thinking: boolean;
  /** `false` drops `message:text:chunk` and `message:thinking:chunk` events: replies come
   * whole, in `message:complete` (SemaCore's `stream: false`). */
  stream: boolean;
  /** The mode the person's configuration starts from (`default` unless set). */
  baseMode: Mode;
  /** The preset the configuration names (`permissions.preset`, the `skip*` flags); left
   * out, each level's mode brings its own, as the engine's configuration does. */
  basePreset?: Preset;
  /** The mode the engine was created in. */
  agentMode: AgentMode;
  permissionLevel: PermissionLevel;
  /** Receives every event the session emits, after its own listeners. */
  forward: (event: string, data: unknown) => void;
  log: (message: string) => void;
}

/** What one reply has streamed so far, per conversation. */
interface Reply {
  id: string;
  content: string;
  reasoning: string;
}

interface Ask {
  requestId: string;
  callId: string;
  toolName: string;
  agentId: string;
  /** Set for a plan to approve (`kind: switch_mode`), to its text. */
  plan?: string;
  /** Set for the model's question (`ask_user`). */
  question?: Question;
  options?: PermissionOption[];
}

interface TaskRecord extends TaskListItem {
  /** The conversation that runs it (a `SubAgent`'s own, a command's caller). */
  conversationId: string;
  watchers: Set<(delta: string) => void>;
}

/** The engine's name of each SemaCore plan answer. */
const PLAN_CHOICES = {
  startEditing: "start_editing",
  clearContextAndStart: "clear_context_and_start",
  keepPlanning: "keep_planning",
} as const;

/** Each permission level as coder's mode. `AutoRun` runs commands without asking in
 * SemaCore once a second model judged them safe; coder has no such judge, so it asks for
 * commands as `AutoEdit` does (narrower, never wider). */
const LEVEL_MODES: Record<PermissionLevel, Mode> = {
  Ask: "default",
  AutoEdit: "auto-edit",
  AutoRun: "auto-edit",
  Bypass: "yolo",
};

/** The preset each mode brings when the configuration names none (the engine's own
 * choice, `preset_for` in the core's configuration). */
const LEVEL_PRESETS: Record<Mode, Preset> = {
  plan: "balanced",
  default: "balanced",
  "auto-edit": "auto-edit",
  yolo: "yolo",
};

/** How much each level lets run without asking, as coder's modes order them. */
const LEVEL_RANK: Record<PermissionLevel, number> = { Ask: 0, AutoEdit: 1, AutoRun: 1, Bypass: 2 };

/** SemaCore's `session:error` type for each kind of engine error. */
const SEMA_ERROR_TYPES: Partial<Record<ErrorKind, string>> = {
  context_length_exceeded: "context_length_exceeded",
  provider: "api_error",
  no_provider: "config_error",
  limit_exceeded: "limit_exceeded",
};

export class SemaSession {
  readonly sessionId: string;
  readonly #bus = new EventEmitter();
  readonly #engine: Engine;
  readonly #root: string;
  readonly #setup: SessionSetup;
  #ready: unknown;
  #disposed = false;
  readonly #replies = new Map<string, Reply>();
  #replyCount = 0;
  /** Open permission requests, oldest first. */
  readonly #asks: Ask[] = [];
  /** Plans approved with a cleared context, by agent, until their `mode_changed`. */
  readonly #clearing = new Map<string, string>();
  /** Inputs sent by `processUserInput`, by task id, until their task starts. */
  readonly #inputs = new Map<
    string,
    { input: string; originalInput?: string; attachments?: InputImageAttachment[]; custom?: { command: CommandInfo; args: string } }
  >();
  /** Tool calls running, by call id. */
  readonly #calls = new Map<string, { toolName: string; title: string; agentId: string }>();
  readonly #tasks = new Map<string, TaskRecord>();
  /** Tasks stopped on request: they end `killed`, however the engine reports the end. */
  readonly #stopping = new Set<string>();
  #agentMode: AgentMode;
  #level: PermissionLevel;
  #state: "idle" | "processing" = "idle";
  /** Set by `interrupt` while the interrupted task still runs in the engine: its own
   * `state_changed`s are then stale (`idle` was already reported). */
  #settling = false;
  /** Sub-agent runs, by conversation, from `task:agent:start` to `task:agent:end`. */
  readonly #agents = new Map<string, { startTime: number; tools: number; tokens: number }>();
  #usage: Usage;

  /** Made by `SemaCore.createSession`. */
  constructor(setup: SessionSetup) {
    this.#setup = setup;
    this.#engine = setup.engine;
    this.#root = setup.root;
    this.sessionId = setup.engine.sessionId;
    this.#agentMode = setup.agentMode;
    this.#level = setup.permissionLevel;
    this.#usage = { useTokens: 0, maxTokens: setup.contextWindow, promptTokens: 0 };
    this.#engine.onEvent((event) => this.#translate(event));
  }

  /** The conversation the session's input goes to (SemaCore's main agent). */
  get rootConversation(): string {
    return this.#root;
  }

  /** Which chunk events come from now on (SemaCore's `stream` and `thinking`). */
  configureOutput(output: { stream: boolean; thinking: boolean }): void {
    this.#setup.stream = output.stream;
    this.#setup.thinking = output.thinking;
  }

  /** Emits `session:ready` (kept for listeners that subscribe later). */
  ready(): void {
    this.#ready = {
      pid: process.pid,
      workingDir: this.#setup.workingDir,
      sessionId: this.sessionId,
      historyLoaded: this.#setup.historyLoaded,
      usage: { ...this.#usage },
      projectInputHistory: [],
      todos: [],
      readFileTimestamps: {},
    };
    this.#emit("session:ready", this.#ready);
  }

  // Events ----------------------------------------------------------------------------------

  /** This session's events. `session:ready` already emitted is replayed to a late listener. */
  on<T = any>(event: string, listener: (data: T) => void): this {
    this.#bus.on(event, listener);
    this.#replay(event, listener);
    return this;
  }

  once<T = any>(event: string, listener: (data: T) => void): this {
    if (event === "session:ready" && this.#ready !== undefined) {
      this.#replay(event, listener);
      return this;
    }
    this.#bus.once(event, listener);
    return this;
  }

  off<T = any>(event: string, listener: (data: T) => void): this {
    this.#bus.off(event, listener);
    return this;
  }

  // Input -----------------------------------------------------------------------------------

  /** Sends input to the session (a built-in `/command` runs and answers with
   * `command:result`); returns at once. Image attachments go to the model with the text. */
  processUserInput(input: string, originalInput?: string, attachments?: InputImageAttachment[]): void {
    if (this.#disposed) {
      this.#sessionError("fatal_error", coded("invalid_params", "the session was closed"));
      return;
    }
    if (typeof input !== "string") {
      this.#sessionError("fatal_error", coded("invalid_params", `processUserInput: the input must be a string, not ${input === null ? "null" : typeof input}`));
      return;
    }
    try {
      const images = (attachments ?? []).map(imageItem);
      const items: InputItem[] = [{ type: "text", text: input }, ...images];
      const queued = this.#state !== "idle";
      const result = this.#engine.input(this.#root, images.length > 0 ? items : input);
      if (!result.taskId || result.text) {
        this.#emit("command:result", { agentId: MAIN_AGENT_ID, command: input.trim(), text: result.text });
      }
      if (result.taskId) {
        this.#inputs.set(result.taskId, { input, originalInput, attachments, custom: this.#customCommand(input) });
        this.#emit("input:received", {
          inputId: result.taskId,
          input,
          originalInput,
          queued,
          queueLength: queued ? this.#inputs.size : 0,
          source: "user",
        });
        // SemaCore reports `processing` before `processUserInput` returns; the engine's own
        // `state_changed` follows and is then no change.
        this.#setState("processing");
      }
    } catch (err) {
      this.#sessionError("fatal_error", err);
    }
  }

  /** Compacts the main conversation now (what `/compact` does); `compact:exec` reports it. */
  compact(): void {
    try {
      this.#engine.compact(this.#root);
    } catch (err) {
      this.#sessionError("fatal_error", err);
    }
  }

  /** Interrupts whatever runs, on any conversation, and drops the input queued behind it
   * (SemaCore has no queue: an interrupt ends everything asked for). `state:update idle` is
   * emitted before this returns; `session:interrupted` follows. */
  interrupt(): void {
    if (this.#disposed) return;
    let withdrew = false;
    for (const inputId of [...this.#inputs.keys()]) {
      if (this.#engine.withdrawInput(inputId)) {
        this.#inputs.delete(inputId);
        withdrew = true;
      }
    }
    const running = this.#engine.interruptSession();
    if (running) this.#settling = true;
    this.#setState("idle");
    // Input withdrawn before it started has no task to end: the interruption is reported
    // here, as the running task's end reports it otherwise.
    if (withdrew && !running) {
      queueMicrotask(() => this.#emit("session:interrupted", { agentId: MAIN_AGENT_ID, content: "Process cancelled by user" }));
    }
  }

  // Answers ---------------------------------------------------------------------------------

  respondToToolPermission(response: ToolPermissionResponse): void {
    if (
      typeof response !== "object" ||
      response === null ||
      typeof response.toolName !== "string" ||
      typeof response.selected !== "string"
    ) {
      // A malformed answer never leaves a request open and never allows: the oldest open
      // request is denied.
      const ask = this.#asks.shift();
      if (ask && !this.#disposed) {
        this.#engine.respondPermission(ask.requestId, {
          decision: "deny",
          message: "the answer to the permission request was malformed; the call was denied",
        });
      }
      throw coded("invalid_params", "respondToToolPermission: `toolName` and `selected` must be strings", TypeError);
    }
    const index =
      typeof response.toolId === "string" && response.toolId !== ""
        ? this.#asks.findIndex(
            (ask) => ask.callId === response.toolId && ask.plan === undefined && ask.question === undefined,
          )
        : this.#asks.findIndex(
            (ask) =>
              ask.plan === undefined &&
              ask.question === undefined &&
              (ask.toolName === response.toolName || semaName(ask.toolName) === response.toolName),
          );
    if (index < 0 || this.#disposed) return;
    const [ask] = this.#asks.splice(index, 1);
    // SemaCore's answers, as the engine's options: `agree` allows once, `allow` allows
    // always (once where the request offers no "always"), `refuse` stops the task, and any
    // other text denies with that text for the model.
    const options = ask.options ?? [];
    const ofKind = (kind: PermissionOption["kind"]) => options.find((option) => option.kind === kind);
    const option =
      response.selected === "agree"
        ? ofKind("allow_once")
        : response.selected === "allow"
          ? (ofKind("allow_always") ?? ofKind("allow_once"))
          : response.selected === "refuse"
            ? options.find((option) => option.optionId === "refuse")
            : options.find((option) => option.kind === "reject_once" && option.takesMessage);
    const decision: PermissionDecision =
      option === undefined
        ? { decision: "deny", message: "the answer named no option of this request; the call was denied" }
        : option.takesMessage && !["agree", "allow", "refuse"].includes(response.selected)
          ? { decision: "option", optionId: option.optionId, message: response.selected }
          : { decision: "option", optionId: option.optionId };
    this.#engine.respondPermission(ask.requestId, decision);
    this.#emit("tool:permission:response", { ...response, toolId: ask.callId });
  }

  /** coder's models ask no multiple-choice questions (`pick:option:request` is never
   * emitted), so there is nothing to answer. */
  respondToPickOption(_response: PickOptionResponse): void {
    throw notSupported("respondToPickOption");
  }

  /**
   * Answers the model's questions (`ask:question:request`) of `agentId` (every open one
   * when it is left out): each question's answer is looked up by its text, a choice's label
   * or the person's own words; a question the answers leave out gets none, and the model
   * decides. `ask:question:response` echoes the answer.
   */
  respondToAskQuestion(response: AskQuestionResponseData): void {
    if (typeof response !== "object" || response === null || typeof response.answers !== "object" || response.answers === null) {
      throw coded("invalid_params", "respondToAskQuestion: `answers` must be an object of question -> answer", TypeError);
    }
    const open = this.#asks.filter(
      (ask) => ask.question !== undefined && (response.agentId === undefined || ask.agentId === response.agentId),
    );
    if (open.length === 0 || this.#disposed) return;
    for (const ask of open) {
      this.#asks.splice(this.#asks.indexOf(ask), 1);
      this.#engine.respondPermission(
        ask.requestId,
        questionDecision(ask.question as Question, ask.options ?? [], response.answers),
      );
    }
    this.#emit("ask:question:response", { agentId: open[0].agentId, answers: response.answers });
  }

  /** Answers `plan:exit:request` (the oldest open one, or `agentId`'s). */
  respondToPlanExit(response: PlanExitResponse): void {
    const choice = PLAN_CHOICES[response?.selected as keyof typeof PLAN_CHOICES];
    if (!choice) {
      throw coded(
        "invalid_params",
        "respondToPlanExit: `selected` must be startEditing, clearContextAndStart or keepPlanning",
        TypeError,
      );
    }
    const index = this.#asks.findIndex(
      (ask) => ask.plan !== undefined && (response.agentId === undefined || ask.agentId === response.agentId),
    );
    if (index < 0 || this.#disposed) return;
    const [ask] = this.#asks.splice(index, 1);
    if (choice === "clear_context_and_start") this.#clearing.set(ask.agentId, ask.plan ?? "");
    this.#engine.respondToPlanExit(ask.requestId, { selected: choice, feedback: response.feedback });
    this.#emit("plan:exit:response", { ...response, agentId: ask.agentId });
  }

  // Settings --------------------------------------------------------------------------------

  get agentMode(): AgentMode {
    return this.#agentMode;
  }

  get permissionLevel(): PermissionLevel {
    return this.#level;
  }

  /** Switches the main conversation into or out of plan mode. */
  updateAgentMode(mode: AgentMode): void {
    if (mode !== "Agent" && mode !== "Plan") {
      throw coded("invalid_params", `updateAgentMode: the mode must be "Agent" or "Plan", not ${JSON.stringify(mode)}`, TypeError);
    }
    if (this.#disposed) return;
    // `setMode` throws when the engine refuses the mode; once it returns, the mode is set.
    this.#engine.setMode(this.#root, mode === "Plan" ? "plan" : this.#levelMode(this.#level));
    this.#agentMode = mode;
  }

  /**
   * Sets how much runs without asking: `Ask` (coder's configured mode), `AutoEdit` (file
   * edits run), `AutoRun` (as `AutoEdit`: coder has no model that judges commands safe),
   * `Bypass` (everything runs). A session never goes above the level it was created with
   * (`createSession({ permissionLevel })`, the engine's ceiling for its mode): a higher level
   * is narrowed to that one. `permissionLevel:update` follows with the level in force.
   */
  updatePermissionLevel(level: PermissionLevel): void {
    if (!(level in LEVEL_MODES)) {
      throw coded("invalid_params", "updatePermissionLevel: the level must be Ask, AutoEdit, AutoRun or Bypass", TypeError);
    }
    if (this.#disposed) return;
    // The engine narrows a mode to the one the session was created with (its configured
    // ceiling, with a `warning`): the level in force is reported, not the one asked for.
    const ceiling = this.#setup.permissionLevel;
    const effective = LEVEL_RANK[level] > LEVEL_RANK[ceiling] ? ceiling : level;
    // The preset moves with the level: a session created at `Bypass` has the `yolo` preset,
    // and a narrower mode alone would leave its preset allowing everything.
    const preset = this.#setup.basePreset ?? LEVEL_PRESETS[this.#levelMode(effective)];
    this.#engine.command(this.#root, `/permissions ${preset}`);
    if (this.#agentMode !== "Plan") this.#engine.setMode(this.#root, this.#levelMode(effective));
    this.#level = effective;
    this.#emit("permissionLevel:update", { level: effective });
  }

  // Fork ------------------------------------------------------------------------------------

  /** The inputs of the main conversation a fork can go back to: `messageUuid` is `point`. */
  forkPoints(): Array<{ messageUuid: string; text: string }> {
    return this.#engine.rewindPoints(this.#root).map((point) => ({ messageUuid: String(point.point), text: point.text }));
  }

  /** What `fork(messageUuid, { restoreFiles: true })` would do to the files; nothing
   * changes. `messageUuid` is an input's place (`forkPoints`). */
  async getForkPreview(messageUuid: string): Promise<ForkPreview> {
    const point = inputPoint(messageUuid);
    const result = await this.#engine.rewind(this.#root, point, { dryRun: true });
    // The engine names the files relative to the workspace.
    const files: ForkFileChange[] = [
      ...result.restored.map((path) => ({ path, effect: "modify" as const })),
      ...result.removed.map((path) => ({ path, effect: "delete" as const })),
    ].map(({ path, effect }) => {
      const lines = result.lineChanges?.find((change) => change.path === path);
      return { filePath: this.#absolute(path), displayPath: path, effect, additions: lines?.added ?? 0, removals: lines?.removed ?? 0 };
    });
    return { messageUuid, canRestoreFiles: result.filesRecorded, files };
  }

  /** Cuts the main conversation back to before the input `messageUuid` (the session id
   * stays); with `restoreFiles`, the files go back too. */
  async fork(messageUuid: string, options: ForkOptions = {}): Promise<ForkResult> {
    try {
      const point = inputPoint(messageUuid);
      if (options.restoreFiles) {
        const result = await this.#engine.rewind(this.#root, point);
        return {
          ok: true,
          sessionId: this.sessionId,
          restoredFiles: [...result.restored, ...result.removed].map((path) => this.#absolute(path)),
        };
      }
      // The history alone: every file stays as it is.
      const result = await this.#engine.rewind(this.#root, point, { files: false });
      if (result.messagesRemoved === 0) return { ok: false, error: `no input at ${messageUuid}` };
      return { ok: true, sessionId: this.sessionId, restoredFiles: [] };
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
  }

  // Tasks -----------------------------------------------------------------------------------

  /** The conversations the model opened and the commands tools ran, this session's. */
  getTaskList(): TaskListItem[] {
    return [...this.#tasks.values()].map(({ conversationId: _c, watchers: _w, ...item }) => ({ ...item }));
  }

  /** Calls `onDelta` with a running task's output (a command's, or a conversation's
   * reply text) until the returned function is called or the task ends. */
  watchTask(taskId: string, onDelta: (delta: string) => void): () => void {
    const task = this.#tasks.get(taskId);
    if (!task || task.status !== "running") return () => {};
    task.watchers.add(onDelta);
    return () => task.watchers.delete(onDelta);
  }

  /** Stops a running task by interrupting the conversation that runs it. */
  stopTask(taskId: string): boolean {
    const task = this.#tasks.get(taskId);
    if (!task || task.status !== "running" || this.#disposed) return false;
    this.#stopping.add(taskId);
    return this.#engine.interrupt(task.conversationId);
  }

  /** Stops every running task; returns how many were running. */
  stopAllTasks(): number {
    const running = [...this.#tasks.values()].filter((task) => task.status === "running");
    if (running.length > 0 && !this.#disposed) {
      for (const task of running) this.#stopping.add(task.taskId);
      this.#engine.interruptSession();
    }
    return running.length;
  }

  /** coder runs a conversation the model opened in its caller's turn; there is no
   * foreground to take it out of. */
  transferAgentToBackground(_taskId: string): boolean {
    throw notSupported("transferAgentToBackground");
  }

  transferAllForegroundAgents(): string[] {
    throw notSupported("transferAllForegroundAgents");
  }

  /** The low-level engine of this session, for what the SemaCore API lacks. */
  get engine(): Engine {
    return this.#engine;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /** Ends the session: what runs is interrupted, the snapshot saved. */
  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    await this.#engine.dispose();
    this.#bus.removeAllListeners();
  }

  // Internals -------------------------------------------------------------------------------

  #replay(event: string, listener: (data: any) => void): void {
    if (event !== "session:ready" || this.#ready === undefined) return;
    const ready = this.#ready;
    queueMicrotask(() => listener(ready));
  }

  #absolute(path: string): string {
    return isAbsolute(path) ? path : join(this.#setup.workingDir, path);
  }

  #levelMode(level: PermissionLevel): Mode {
    return level === "Ask" ? this.#setup.baseMode : LEVEL_MODES[level];
  }

  /** The custom command `input` runs (`/name args`), as the engine lists it. */
  #customCommand(input: string): { command: CommandInfo; args: string } | undefined {
    const match = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(input.trim());
    if (!match) return undefined;
    const command = this.#engine.commands().find((c) => c.name === match[1] && c.source !== "builtin");
    return command ? { command, args: match[2] ?? "" } : undefined;
  }

  /** Reports a change of SemaCore's state; the same state twice is reported once. */
  #setState(state: "idle" | "processing"): void {
    if (this.#state === state) return;
    this.#state = state;
    this.#emit("state:update", { state });
  }

  #emit(event: string, data: unknown): void {
    this.#bus.emit(event, data);
    this.#setup.forward(event, data);
  }

  #sessionError(type: string, err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    const code = codeOf(err) ?? "internal";
    this.#emit("session:error", { type: SEMA_ERROR_TYPES[code as ErrorKind] ?? type, error: { code, message } });
  }

  #reply(conversation: string): Reply {
    let reply = this.#replies.get(conversation);
    if (!reply) {
      this.#replyCount += 1;
      reply = { id: `msg_${this.sessionId}_${this.#replyCount}`, content: "", reasoning: "" };
      this.#replies.set(conversation, reply);
    }
    return reply;
  }

  #taskStart(task: TaskRecord): void {
    this.#tasks.set(task.taskId, task);
    const { taskId, command, filepath, status, type, agentType } = task;
    this.#emit("task:start", { taskId, command, filepath, status, type, ...(agentType ? { agentType } : {}) });
  }

  #taskEnd(taskId: string, status: "completed" | "failed" | "killed", summary: string): void {
    const task = this.#tasks.get(taskId);
    if (!task || task.status !== "running") return;
    if (this.#stopping.delete(taskId)) status = "killed";
    task.status = status;
    task.endTime = Date.now();
    task.watchers.clear();
    this.#emit("task:end", { taskId, status, summary });
  }

  #watch(taskId: string, delta: string): void {
    const task = this.#tasks.get(taskId);
    if (!task) return;
    for (const watcher of task.watchers) watcher(delta);
  }

  #translate(event: Event): void {
    const conversation = event.conversationId;
    const agentId = conversation === this.#root ? MAIN_AGENT_ID : conversation;
    const isMain = agentId === MAIN_AGENT_ID;
    switch (event.type) {
      case "state_changed":
        if (this.#settling) {
          // The interrupted task's last changes: `idle` was reported by `interrupt`.
          if (event.state === "idle") this.#settling = false;
          break;
        }
        // Waiting for a person's answer is part of processing: SemaCore's own programs ask
        // for the next input on `idle`.
        this.#setState(event.state === "idle" ? "idle" : "processing");
        break;
      case "task_started": {
        const input = event.taskId ? this.#inputs.get(event.taskId) : undefined;
        if (input && event.taskId) {
          this.#inputs.delete(event.taskId);
          if (input.custom) {
            const { command, args } = input.custom;
            this.#emit("command:custom:resolved", {
              commandName: command.name,
              displayName: `/${command.name}`,
              description: command.description,
              scope: command.source === "user" ? "user" : "project",
              args,
              originalInput: input.input,
              processedContent: event.input ?? "",
            });
          }
          this.#emit("input:processing", {
            inputId: event.taskId,
            input: input.input,
            originalInput: input.originalInput,
            ...(input.attachments?.length ? { attachments: input.attachments } : {}),
            source: "user",
          });
        }
        if (!isMain) {
          // A sub-agent's id is its conversation's: `agentId` of its events is the same.
          this.#agents.set(conversation, { startTime: Date.now(), tools: 0, tokens: 0 });
          this.#emit("task:agent:start", {
            taskId: conversation,
            subagent_type: "conversation",
            agent_type: "conversation",
            title: `conversation ${conversation}`,
            description: `conversation ${conversation}`,
            instructions: event.input ?? "",
            prompt: event.input ?? "",
            background: false,
          });
          if (!this.#tasks.has(conversation) || this.#tasks.get(conversation)?.status !== "running") {
            this.#taskStart({
              taskId: conversation,
              conversationId: conversation,
              filepath: "",
              status: "running",
              type: "SubAgent",
              command: event.input ?? "",
              agentType: "conversation",
              foreground: true,
              startTime: Date.now(),
              watchers: new Set(),
            });
          }
        }
        break;
      }
      case "agent_message_delta": {
        const reply = this.#reply(conversation);
        reply.content += event.delta;
        // A sub-agent's text reaches its watchers and its `message:complete`, never the main
        // agent's stream.
        if (!isMain) this.#watch(conversation, event.delta);
        else if (this.#setup.stream) {
          this.#emit("message:text:chunk", { id: reply.id, content: reply.content, delta: event.delta });
        }
        break;
      }
      case "agent_reasoning_delta": {
        const reply = this.#reply(conversation);
        reply.reasoning += event.delta;
        if (isMain && this.#setup.thinking && this.#setup.stream) {
          this.#emit("message:thinking:chunk", { id: reply.id, content: reply.reasoning, delta: event.delta });
        }
        break;
      }
      case "reply_complete": {
        const reply = this.#reply(conversation);
        this.#replies.delete(conversation);
        this.#emit("message:complete", {
          id: reply.id,
          agentId,
          reasoning: event.reasoning,
          content: event.text,
          hasToolCalls: event.toolCalls.length > 0,
          toolCalls: event.toolCalls.map((call) => ({ name: semaName(call.toolName), args: call.arguments })),
        });
        break;
      }
      case "token_count": {
        const run = this.#agents.get(conversation);
        if (run) run.tokens += event.last.inputTokens + event.last.outputTokens;
        if (isMain) {
          this.#usage = {
            useTokens: event.contextTokens,
            maxTokens: event.contextWindow ?? this.#usage.maxTokens,
            promptTokens: event.last.inputTokens || this.#usage.promptTokens,
          };
          this.#emit("conversation:usage", { usage: { ...this.#usage } });
        }
        break;
      }
      case "compacted":
        this.#emit("compact:exec", {
          agentId,
          trigger: event.trigger,
          tokenBefore: event.tokenBefore,
          tokenCompact: event.tokenCompact,
          compactRate: event.compactRate,
          summary: event.summary,
          archivedMessages: event.archivedMessages,
        });
        break;
      case "context_cleared":
        // The context's messages are gone (`/clear`); `agentId` names the conversation.
        this.#emit("session:cleared", { sessionId: this.sessionId, agentId });
        break;
      case "permission_withdrawn": {
        // The request ended without an answer: a later answer has nothing to answer.
        const index = this.#asks.findIndex((ask) => ask.requestId === event.requestId);
        if (index >= 0) this.#asks.splice(index, 1);
        break;
      }
      case "permission_requested":
        if (event.kind === "switch_mode") {
          const plan = event.plan ?? "";
          this.#asks.push({ requestId: event.requestId, callId: event.callId, toolName: event.toolName, agentId, plan });
          const request: PlanExitRequest = {
            agentId,
            planFilePath: "",
            planContent: plan,
            options: {
              startEditing: "Start editing",
              clearContextAndStart: "Clear context and start",
              keepPlanning: "Keep planning",
            },
          };
          this.#emit("plan:exit:request", request);
          break;
        }
        if (event.question !== undefined) {
          // The model's question: SemaCore's `ask:question:request`, answered by
          // `respondToAskQuestion`.
          this.#asks.push({
            requestId: event.requestId,
            callId: event.callId,
            toolName: event.toolName,
            agentId,
            question: event.question,
            options: event.options,
          });
          this.#emit("ask:question:request", askQuestionRequest(agentId, event.question));
          break;
        }
        this.#asks.push({
          requestId: event.requestId,
          callId: event.callId,
          toolName: event.toolName,
          agentId,
          options: event.options,
        });
        this.#emit("tool:permission:request", {
          agentId,
          toolId: event.callId,
          toolName: semaName(event.toolName),
          title: event.summary,
          content: event.arguments,
          ...(event.command !== undefined ? { command: event.command } : {}),
          ...(event.diff !== undefined ? { diff: event.diff } : {}),
          options: semaOptions(event.options),
        });
        break;
      case "tool_call_started": {
        const run = this.#agents.get(conversation);
        if (run) run.tools += 1;
        this.#calls.set(event.callId, { toolName: semaName(event.toolName), title: event.toolName, agentId });
        this.#emit("tool:execution:start", {
          agentId,
          toolId: event.callId,
          toolName: semaName(event.toolName),
          title: event.toolName,
          args: event.arguments,
        });
        if (event.kind === "execute") {
          const args = event.arguments as { command?: unknown } | null;
          this.#taskStart({
            taskId: event.callId,
            conversationId: conversation,
            filepath: "",
            status: "running",
            type: "RunShell",
            command: typeof args?.command === "string" ? args.command : event.title,
            foreground: true,
            startTime: Date.now(),
            watchers: new Set(),
          });
        }
        break;
      }
      case "tool_call_output_delta": {
        const call = this.#calls.get(event.callId);
        this.#emit("tool:execution:chunk", {
          agentId: call?.agentId ?? agentId,
          toolId: event.callId,
          toolName: call?.toolName ?? "",
          title: call?.title ?? "",
          summary: "",
          content: event.delta,
        });
        this.#watch(event.callId, event.delta);
        break;
      }
      case "tool_call_completed":
        this.#calls.delete(event.callId);
        this.#taskEnd(event.callId, "completed", event.summary);
        this.#emit("tool:execution:complete", {
          agentId,
          toolId: event.callId,
          toolName: semaName(event.toolName),
          title: event.toolName,
          summary: event.summary,
          content: event.diff ?? event.output,
        });
        break;
      case "tool_call_failed":
        this.#calls.delete(event.callId);
        this.#taskEnd(event.callId, "failed", event.summary);
        this.#emit("tool:execution:error", {
          agentId,
          toolId: event.callId,
          toolName: semaName(event.toolName),
          title: event.toolName,
          content: event.error,
        });
        break;
      case "file_reference":
        // SemaCore's shape (`type`, `name`, `content`), with coder's own fields kept.
        this.#emit("file:reference", {
          agentId,
          references: event.references.map((reference) => ({
            type: reference.kind === "directory" ? "dir" : "file",
            name: reference.path,
            content: reference.content ?? "",
            ...reference,
          })),
        });
        break;
      case "todo_updated":
        this.#emit(
          "todos:update",
          event.todos.map((todo) => ({ ...todo, activeForm: todo.content })),
        );
        break;
      case "turn_aborted":
        this.#replies.delete(conversation);
        this.#asks.length = 0;
        for (const [callId, call] of this.#calls) {
          if (call.agentId === agentId) {
            this.#calls.delete(callId);
            this.#taskEnd(callId, "killed", "interrupted");
          }
        }
        if (event.reason === "interrupted") {
          this.#emit("session:interrupted", { agentId, content: "Process cancelled by user" });
        }
        if (!isMain) {
          this.#taskEnd(conversation, "killed", "interrupted");
          this.#agents.delete(conversation);
          this.#emit("task:agent:end", { taskId: conversation, status: "interrupted", content: "Interrupted" });
        }
        break;
      case "task_complete":
        if (!isMain) {
          this.#taskEnd(conversation, event.error ? "failed" : "completed", event.lastAgentMessage ?? "");
          const run = this.#agents.get(conversation);
          this.#agents.delete(conversation);
          this.#emit("task:agent:end", {
            taskId: conversation,
            status: event.error ? "failed" : "completed",
            content: event.error ? `Failed: ${event.error}` : agentSummary(run),
          });
        }
        break;
      case "error":
        this.#emit("session:error", {
          type: SEMA_ERROR_TYPES[event.kind] ?? "model_error",
          error: { code: event.kind, message: event.message },
        });
        break;
      case "warning":
      case "retrying":
        this.#setup.log(event.message);
        break;
      case "workspace_reloaded":
        // No SemaCore event says this: it passes through under the engine's own name.
        this.#emit("workspace:reloaded", { what: event.what, paths: event.paths });
        break;
      case "verification":
        this.#emit("verification", {
          status: event.status,
          command: event.command,
          attempt: event.attempt,
          maxRetries: event.maxRetries,
          exitCode: event.exitCode,
          message: event.message,
        });
        break;
      case "mcp_server_status":
        this.#emit("mcp:server:status", {
          name: event.server,
          status: event.state,
          toolCount: event.tools,
          error: event.error,
        });
        break;
      case "mode_changed": {
        if (isMain) this.#agentMode = event.mode === "plan" ? "Plan" : "Agent";
        const plan = this.#clearing.get(agentId);
        if (plan !== undefined && event.previous === "plan" && event.mode !== "plan") {
          this.#clearing.delete(agentId);
          const implement: PlanImplement = { planFilePath: "", planContent: plan };
          this.#emit("plan:implement", implement);
        }
        break;
      }
      case "agent_message":
      case "agent_reasoning":
      case "tool_calls_requested":
      case "task_dropped":
      case "input_receipt":
        break;
    }
  }
}

/** SemaCore's summary of a finished sub-agent: `Done(3 tools use · 12.1k tokens · 2m 14s)`. */
export function agentSummary(run: { startTime: number; tools: number; tokens: number } | undefined): string {
  if (!run) return "Done";
  const tokens = run.tokens >= 1000 ? `${(run.tokens / 1000).toFixed(1)}k` : String(run.tokens);
  const seconds = Math.round((Date.now() - run.startTime) / 1000);
  const time = seconds >= 60 ? `${Math.floor(seconds / 60)}m ${seconds % 60}s` : `${seconds}s`;
  return `Done(${run.tools} tools use · ${tokens} tokens · ${time})`;
}

/** An `Error` saying coder has no such feature; `code` is `not_supported`. */
export function notSupported(method: string): Error & { code: "not_supported" } {
  return Object.assign(new Error(`${method} is not supported by coder`), { code: "not_supported" as const });
}

/** SemaCore's `permissions` preset from its level (for a session's first mode). */
export function levelMode(level: PermissionLevel | undefined, base: Mode): Mode {
  return level === undefined || level === "Ask" ? base : LEVEL_MODES[level];
}

export function isPermissionLevel(level: unknown): level is PermissionLevel {
  return typeof level === "string" && level in LEVEL_MODES;
}

/** A fork's `messageUuid`: an input's place in the main conversation. */
function inputPoint(messageUuid: string): number {
  const point = Number(messageUuid);
  if (!Number.isInteger(point) || point < 0) {
    throw coded("invalid_params", `fork: "${messageUuid}" names no input (expected its place, from forkPoints())`);
  }
  return point;
}

/** An image attachment as the engine's image input. */
function imageItem(attachment: InputImageAttachment): InputItem {
  const url =
    attachment?.url ??
    (attachment?.data ? `data:${attachment.mediaType ?? "image/png"};base64,${attachment.data}` : undefined);
  if (!url) throw coded("invalid_params", "an image attachment needs `url` or `data`", TypeError);
  return { type: "image", image_url: url };
}

/** SemaCore's answers to a permission request, labelled with the engine's options. */
function semaOptions(options: PermissionOption[]): Record<string, string> {
  const labels: Record<string, string> = {};
  const once = options.find((option) => option.kind === "allow_once");
  const always = options.find((option) => option.kind === "allow_always");
  const refuse = options.find((option) => option.optionId === "refuse");
  if (once) labels.agree = once.label;
  if (always) labels.allow = always.label;
  if (refuse) labels.refuse = refuse.label;
  return labels;
}

export type { Preset };
