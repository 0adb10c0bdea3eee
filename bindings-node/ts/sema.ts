// `CoderEngine`, also exported as `SemaCore`: the SemaCore 1.x API over the engine, so a
// program written for SemaCore runs by changing its import. Events carry SemaCore's names and
// payloads; they are translated here from the engine's (docs/events.md).

import { codeOf, coded } from "./errors";
import { EventEmitter } from "node:events";

import { Engine, type McpServerOptions, type ModelOptions } from "./engine";
import type { ErrorKind, Event, Mode, PermissionDecision, PermissionOption, Preset } from "./protocol";
import { disabledTools, semaName } from "./tools";

export interface SemaCoreConfig {
  workingDir?: string;
  logLevel?: "debug" | "info" | "warn" | "error" | "none";
  stream?: boolean;
  /** `false` drops `message:thinking:chunk` events. */
  thinking?: boolean;
  /** Instructions for the model, placed by `systemPromptMode`. */
  systemPrompt?: string;
  /** `append` (default): `systemPrompt` comes first, coder's built-in prompt after it;
   * `replace` / `replaceAll`: `systemPrompt` instead of the built-in prompt (coder still
   * adds the working directory and platform in both). */
  systemPromptMode?: "append" | "replace" | "replaceAll";
  /** Given to the model as the first message of the session. */
  customRules?: string;
  skipFileEditPermission?: boolean;
  skipBashExecPermission?: boolean;
  skipSkillPermission?: boolean;
  skipMCPToolPermission?: boolean;
  useTools?: string[] | null;
  agentMode?: "Agent" | "Plan";
  /** coder's permission preset and mode, over what the `skip*` flags imply. */
  permissions?: { preset?: Preset; mode?: Mode };
  mcpServers?: Record<string, McpServerOptions>;
  /** Keep `.coder/sessions/<id>.json` (default true). */
  saveSessions?: boolean;
  /** The person trusts `workingDir`: its own `.coder/config.json` and `.mcp.json` apply whole.
   * Left out, the user-level config's `trustedFolders` decides (see `EngineOptions`). */
  trustWorkspace?: boolean;
}

export interface ModelConfig {
  provider: string;
  modelName: string;
  baseURL: string;
  apiKey: string;
  maxTokens: number;
  contextLength: number;
}

export interface TaskConfig {
  main: string;
  quick: string;
}

export interface ModelUpdateData {
  modelName: string;
  modelList: string[];
  taskConfig: TaskConfig;
}

export interface ToolPermissionResponse {
  toolName: string;
  /** `agree` (once), `allow` (always), `refuse` (refused, and the task ends: the call's
   * result says the user refused it, and `session:interrupted` follows), or any other text:
   * refused, the text goes to the model as the reason, and the task goes on. */
  selected: string;
}

/** `plan:exit:request`: the model asks to leave plan mode with `planContent` (markdown).
 * `planFilePath` is always `""`: the engine keeps the plan in the conversation and writes
 * no plan file (plan mode writes nothing). */
export interface PlanExitRequest {
  agentId: string;
  planFilePath: string;
  planContent: string;
  options: { startEditing: string; clearContextAndStart: string; keepPlanning: string };
}

/** The answer to `plan:exit:request` (echoed as `plan:exit:response`). */
export interface PlanExitResponse {
  /** The conversation asked (`main` for the root); left out, the oldest open plan. */
  agentId?: string;
  selected: "startEditing" | "clearContextAndStart" | "keepPlanning";
  /** With `keepPlanning`: what the model should change. */
  feedback?: string;
}

/** `plan:implement`: the context was cleared and the plan is the conversation's start. */
export interface PlanImplement {
  planFilePath: string;
  planContent: string;
}

/** The engine's name of each SemaCore plan answer. */
const PLAN_CHOICES = {
  startEditing: "start_editing",
  clearContextAndStart: "clear_context_and_start",
  keepPlanning: "keep_planning",
} as const;

interface Usage {
  useTokens: number;
  maxTokens: number;
  promptTokens: number;
}

/** What one reply has streamed so far, per conversation (for the chunks' `content`). */
interface Reply {
  content: string;
  reasoning: string;
}

const MAIN = "main";

export class CoderEngine {
  readonly #bus = new EventEmitter();
  readonly #config: SemaCoreConfig;
  readonly #models = new Map<string, ModelConfig>();
  #task: TaskConfig = { main: "", quick: "" };
  #engine: Engine | undefined;
  #root = "";
  readonly #replies = new Map<string, Reply>();
  /** Open permission requests, oldest first. */
  readonly #asks: Array<{
    requestId: string;
    toolName: string;
    agentId: string;
    /** Set for a plan to approve (`kind: switch_mode`), to its text. */
    plan?: string;
    /** The engine's options for the request: SemaCore's answers name one of them. */
    options?: PermissionOption[];
  }> = [];
  /** Plans approved with a cleared context, by agent, until their `mode_changed`. */
  readonly #clearing = new Map<string, string>();
  #agentMode: "Agent" | "Plan";
  #usage: Usage = { useTokens: 0, maxTokens: 0, promptTokens: 0 };

  constructor(config: SemaCoreConfig = {}) {
    this.#config = { ...config };
    this.#agentMode = (config.permissions?.mode ?? (config.agentMode === "Plan" ? "plan" : "default")) === "plan"
      ? "Plan"
      : "Agent";
    // Fails early on an unknown tool name, as SemaCore's own checks would.
    disabledTools(config.useTools);
  }

  on<T = any>(event: string, listener: (data: T) => void): this {
    this.#bus.on(event, listener);
    return this;
  }

  once<T = any>(event: string, listener: (data: T) => void): this {
    this.#bus.once(event, listener);
    return this;
  }

  off<T = any>(event: string, listener: (data: T) => void): this {
    this.#bus.off(event, listener);
    return this;
  }

  // Models ---------------------------------------------------------------------------------

  /** Adds a model (id `modelName[provider]`, replacing one of that id); the first one
   * becomes `main` and `quick`. Unless `skipValidation`, one short request tests the
   * connection first, and a model that fails it is not added (the promise rejects with the
   * provider's answer). */
  async addModel(config: ModelConfig, skipValidation = false): Promise<ModelUpdateData> {
    if (!config.modelName || !config.provider) {
      throw coded("invalid_params", "addModel needs provider and modelName");
    }
    if (!skipValidation) {
      try {
        await Engine.checkModel(modelOptions(config));
      } catch (err) {
        const message = `API connection test failed: ${err instanceof Error ? err.message : String(err)}`;
        throw coded(codeOf(err) ?? "provider", message, Error, err);
      }
    }
    const id = `${config.modelName}[${config.provider}]`;
    this.#models.set(id, { ...config });
    if (!this.#task.main) this.#task = { main: id, quick: id };
    this.#applyMain();
    return this.getModelData();
  }

  async delModel(id: string): Promise<ModelUpdateData> {
    this.#models.delete(id);
    if (this.#task.main === id) this.#task.main = "";
    if (this.#task.quick === id) this.#task.quick = this.#task.main;
    return this.getModelData();
  }

  async applyTaskModel(config: TaskConfig): Promise<ModelUpdateData> {
    for (const id of [config.main, config.quick]) this.#model(id);
    this.#task = { ...config };
    this.#applyMain();
    return this.getModelData();
  }

  async switchModel(id: string): Promise<ModelUpdateData> {
    this.#model(id);
    this.#task = { main: id, quick: this.#task.quick || id };
    this.#applyMain();
    return this.getModelData();
  }

  async getModelData(): Promise<ModelUpdateData> {
    return {
      modelName: this.#task.main,
      modelList: [...this.#models.keys()],
      taskConfig: { ...this.#task },
    };
  }

  // Sessions -------------------------------------------------------------------------------

  /** Starts a session (or resumes a saved one); `session:ready` follows. */
  async createSession(sessionId?: string): Promise<void> {
    const main = this.#models.get(this.#task.main);
    if (!main) {
      this.#emit("config:no_models", {
        message: "no model configured",
        suggestion: "call addModel() before createSession()",
      });
      return;
    }
    await this.#engine?.dispose();
    const config = this.#config;
    const { disabled, warnings } = disabledTools(config.useTools);
    for (const warning of warnings) this.#log("warn", warning);
    const engine = Engine.create({
      workingDir: config.workingDir ?? process.cwd(),
      model: modelOptions(main),
      mode: config.permissions?.mode ?? (config.agentMode === "Plan" ? "plan" : undefined),
      preset: config.permissions?.preset ?? presetFor(config),
      disabledTools: disabled,
      mcpServers: config.mcpServers,
      saveSessions: config.saveSessions,
      trustWorkspace: config.trustWorkspace,
    });
    this.#engine = engine;
    let historyLoaded = false;
    if (sessionId) {
      try {
        historyLoaded = engine.resume(sessionId) > 0;
      } catch (err) {
        // The engine left the session fresh; the failure's kind is the error's code, and
        // `session:ready` still follows.
        this.#sessionError("fatal_error", err);
      }
    }
    this.#root = engine.rootConversation;
    if (!historyLoaded && (config.systemPrompt || config.customRules)) {
      // The first conversation created is the root, shaped by SemaCore's prompt and rules.
      this.#root = engine.createConversation({
        baseInstructions: baseInstructions(config),
        userInstructions: config.customRules,
      });
    }
    engine.onEvent((event) => this.#translate(event));
    this.#usage = { useTokens: 0, maxTokens: main.contextLength ?? 0, promptTokens: 0 };
    this.#emit("session:ready", {
      workingDir: config.workingDir ?? process.cwd(),
      sessionId: engine.sessionId,
      historyLoaded,
      usage: { ...this.#usage },
      projectInputHistory: [],
    });
  }

  /** Sends input to the session; returns at once. */
  processUserInput(input: string, _originalInput?: string): void {
    if (!this.#engine) {
      this.#sessionError("fatal_error", coded("invalid_params", "no session: call createSession() first"));
      return;
    }
    try {
      // A built-in `/command` runs (seed 001's pre-processing) and never reaches the model;
      // what it says comes as `command:result`.
      const result = this.#engine.input(this.#root, input);
      if (!result.taskId || result.text) {
        this.#emit("command:result", { agentId: MAIN, command: input.trim(), text: result.text });
      }
    } catch (err) {
      this.#sessionError("fatal_error", err);
    }
  }

  /**
   * Compacts the main conversation now (what `/compact` does): the model summarises its
   * older history, which stays readable through the engine's `archive`; `compact:exec`
   * reports it. Returns at once.
   */
  compact(): void {
    if (!this.#engine) {
      this.#sessionError("fatal_error", coded("invalid_params", "no session: call createSession() first"));
      return;
    }
    try {
      this.#engine.compact(this.#root);
    } catch (err) {
      this.#sessionError("fatal_error", err);
    }
  }

  /**
   * Interrupts whatever runs, on any conversation, and drops the continuations its
   * handoffs queued; `session:interrupted` follows.
   */
  interruptSession(): void {
    this.#engine?.interruptSession();
  }

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
      if (ask && this.#engine) {
        this.#engine.respondPermission(ask.requestId, {
          decision: "deny",
          message: "the answer to the permission request was malformed; the call was denied",
        });
      }
      throw coded("invalid_params", "respondToToolPermission: `toolName` and `selected` must be strings", TypeError);
    }
    const index = this.#asks.findIndex(
      (ask) => ask.toolName === response.toolName || semaName(ask.toolName) === response.toolName,
    );
    if (index < 0 || !this.#engine) return;
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
    this.#emit("tool:permission:response", response);
  }

  /**
   * Answers `plan:exit:request` (the oldest open one, or `agentId`'s): start editing with the
   * history kept, clear the context and start from the plan (`plan:implement` follows), or
   * keep planning with optional `feedback` for the model. `plan:exit:response` echoes it.
   */
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
    if (index < 0 || !this.#engine) return;
    const [ask] = this.#asks.splice(index, 1);
    if (choice === "clear_context_and_start") this.#clearing.set(ask.agentId, ask.plan ?? "");
    this.#engine.respondToPlanExit(ask.requestId, { selected: choice, feedback: response.feedback });
    this.#emit("plan:exit:response", { ...response, agentId: ask.agentId });
  }

  /** `Plan` while the main conversation is in plan mode, else `Agent`; follows the
   * engine's mode changes (an approved plan, `updateAgentMode`). */
  get agentMode(): "Agent" | "Plan" {
    return this.#agentMode;
  }

  /** Switches the main conversation into or out of plan mode. */
  updateAgentMode(mode: "Agent" | "Plan"): void {
    this.#engine?.setMode(this.#root, mode === "Plan" ? "plan" : (this.#config.permissions?.mode ?? "default"));
  }

  /** The low-level engine of the current session, for what the SemaCore API lacks. */
  get engine(): Engine | undefined {
    return this.#engine;
  }

  async dispose(): Promise<void> {
    const engine = this.#engine;
    this.#engine = undefined;
    await engine?.dispose();
    this.#bus.removeAllListeners();
  }

  // Internals ------------------------------------------------------------------------------

  #model(id: string): ModelConfig {
    const model = this.#models.get(id);
    if (!model) {
      throw coded("not_found", `unknown model "${id}"; expected one of: ${[...this.#models.keys()].join(", ")}`);
    }
    return model;
  }

  #applyMain(): void {
    const main = this.#models.get(this.#task.main);
    if (main && this.#engine) this.#engine.setModel(modelOptions(main));
  }

  #emit(event: string, data: unknown): void {
    this.#bus.emit(event, data);
  }

  #log(level: "warn" | "debug", message: string): void {
    const configured = this.#config.logLevel ?? "info";
    if (configured === "none" || (level === "debug" && configured !== "debug")) return;
    console.warn(`[coder] ${message}`);
  }

  /** `session:error`: SemaCore's `type`, and the engine's error code in `error.code` (as on
   * every error the SDK throws; `internal` for one that has none). */
  #sessionError(type: string, err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    this.#emit("session:error", { type, error: { code: codeOf(err) ?? "internal", message } });
  }

  #reply(conversation: string): Reply {
    let reply = this.#replies.get(conversation);
    if (!reply) {
      reply = { content: "", reasoning: "" };
      this.#replies.set(conversation, reply);
    }
    return reply;
  }

  #translate(event: Event): void {
    const conversation = event.conversationId;
    const agentId = conversation === this.#root ? MAIN : conversation;
    const isMain = agentId === MAIN;
    switch (event.type) {
      case "state_changed":
        // Waiting for a person's answer is part of processing: SemaCore's own programs ask
        // for the next input on `idle`.
        this.#emit("state:update", { state: event.state === "idle" ? "idle" : "processing" });
        break;
      case "task_started":
        if (!isMain) {
          this.#emit("task:agent:start", {
            taskId: event.taskId,
            subagent_type: "conversation",
            description: `conversation ${conversation}`,
            prompt: event.input ?? "",
          });
        }
        break;
      case "agent_message_delta": {
        const reply = this.#reply(conversation);
        reply.content += event.delta;
        this.#emit("message:text:chunk", { content: reply.content, delta: event.delta });
        break;
      }
      case "agent_reasoning_delta": {
        const reply = this.#reply(conversation);
        reply.reasoning += event.delta;
        if (this.#config.thinking !== false) {
          this.#emit("message:thinking:chunk", { content: reply.reasoning, delta: event.delta });
        }
        break;
      }
      case "reply_complete":
        this.#replies.delete(conversation);
        this.#emit("message:complete", {
          agentId,
          reasoning: event.reasoning,
          content: event.text,
          hasToolCalls: event.toolCalls.length > 0,
          toolCalls: event.toolCalls.map((call) => ({ name: semaName(call.toolName), args: call.arguments })),
        });
        break;
      case "token_count":
        if (isMain) {
          this.#usage = {
            useTokens: event.contextTokens,
            maxTokens: event.contextWindow ?? this.#usage.maxTokens,
            promptTokens: event.last.inputTokens || this.#usage.promptTokens,
          };
          this.#emit("conversation:usage", { usage: { ...this.#usage } });
        }
        break;
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
        // SemaCore's `session:cleared`: the context's messages are gone (`/clear` through
        // `engine.command`); `sessionId` names the session, `agentId` the conversation.
        this.#emit("session:cleared", { sessionId: this.#engine?.sessionId ?? null, agentId });
        break;
      case "permission_withdrawn": {
        // The request ended without an answer (the mode or preset changed, the task was
        // interrupted): a later answer has nothing to answer.
        const index = this.#asks.findIndex((ask) => ask.requestId === event.requestId);
        if (index >= 0) this.#asks.splice(index, 1);
        break;
      }
      case "permission_requested":
        if (event.kind === "switch_mode") {
          // A plan to approve: the engine sends it whole.
          const plan = event.plan ?? "";
          this.#asks.push({ requestId: event.requestId, toolName: event.toolName, agentId, plan });
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
        this.#asks.push({ requestId: event.requestId, toolName: event.toolName, agentId, options: event.options });
        this.#emit("tool:permission:request", {
          agentId,
          toolName: semaName(event.toolName),
          title: event.summary,
          content: event.arguments,
          // What would run, whole: the command, or the change as a unified diff.
          ...(event.command !== undefined ? { command: event.command } : {}),
          ...(event.diff !== undefined ? { diff: event.diff } : {}),
          // SemaCore's three answers, labelled by the engine's options (no "allow" where the
          // engine offers no "always").
          options: semaOptions(event.options),
        });
        break;
      case "tool_call_started":
        this.#emit("tool:execution:start", {
          agentId,
          toolName: semaName(event.toolName),
          title: event.toolName,
          args: event.arguments,
        });
        break;
      case "tool_call_completed":
        this.#emit("tool:execution:complete", {
          agentId,
          toolName: semaName(event.toolName),
          title: event.toolName,
          summary: event.summary,
          content: event.diff ?? event.output,
        });
        break;
      case "tool_call_failed":
        this.#emit("tool:execution:error", {
          agentId,
          toolName: semaName(event.toolName),
          title: event.toolName,
          content: event.error,
        });
        break;
      case "file_reference":
        this.#emit("file:reference", { agentId, references: event.references });
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
        if (event.reason === "interrupted") {
          this.#emit("session:interrupted", { agentId, content: "Process cancelled by user" });
        }
        if (!isMain) this.#agentEnd(event.taskId, "interrupted", "");
        break;
      case "task_complete":
        if (!isMain) this.#agentEnd(event.taskId, "completed", event.lastAgentMessage ?? "");
        break;
      case "error":
        this.#emit("session:error", {
          type: SEMA_ERROR_TYPES[event.kind] ?? "model_error",
          error: { code: event.kind, message: event.message },
        });
        break;
      case "warning":
      case "retrying":
        this.#log("warn", event.message);
        break;
      case "workspace_reloaded":
        // No SemaCore event says this: it passes through under the engine's own name.
        this.#emit("workspace:reloaded", { what: event.what, paths: event.paths });
        break;
      case "verification":
        // Seed 004's auto-verify loop has no SemaCore event: it passes through under the
        // engine's own name.
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
        // The plan approved with a cleared context has taken the conversation out of plan
        // mode.
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
        break;
    }
  }

  #agentEnd(taskId: string | null | undefined, status: string, content: string): void {
    this.#emit("task:agent:end", { taskId, status, content });
  }
}

/** SemaCore itself is this class under its own name. */
export { CoderEngine as SemaCore };

/** A SemaCore model as the engine's `ModelOptions`. The provider's name passes through:
 * the core decides the wire format from it (`ProviderName` in `ts/protocol.ts`). */
function modelOptions(model: ModelConfig): ModelOptions {
  return {
    provider: model.provider,
    model: model.modelName,
    baseUrl: model.baseURL || undefined,
    apiKey: model.apiKey || undefined,
    contextWindow: model.contextLength || undefined,
    maxOutputTokens: model.maxTokens || undefined,
  };
}

/** SemaCore's `skip*Permission` flags as a coder preset. */
function presetFor(config: SemaCoreConfig): Preset | undefined {
  if (config.skipFileEditPermission && config.skipBashExecPermission) return "yolo";
  if (config.skipFileEditPermission) return "auto-edit";
  return undefined;
}

/** SemaCore's `session:error` type for each kind of engine error (`error.code` carries the
 * kind itself). */
const SEMA_ERROR_TYPES: Partial<Record<ErrorKind, string>> = {
  context_length_exceeded: "context_length_exceeded",
  provider: "api_error",
  no_provider: "config_error",
  limit_exceeded: "limit_exceeded",
};

/** SemaCore's `systemPrompt` as coder's base instructions, which replace the built-in prompt. */
function baseInstructions(config: SemaCoreConfig): string | undefined {
  if (!config.systemPrompt) return undefined;
  if (config.systemPromptMode === "replace" || config.systemPromptMode === "replaceAll") return config.systemPrompt;
  return `${config.systemPrompt}\n\n${Engine.builtInPrompt()}`;
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
