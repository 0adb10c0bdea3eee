// `CoderEngine`, also exported as `SemaCore`: SemaCore's API over the engine, so a program
// written for SemaCore 1.0 or 2.0 runs by changing its import. The core keeps a pool of
// `SemaSession`s (ts/session.ts, where the engine's events are translated); SemaCore 1.0's
// session methods and events on the core act on and come from the active session.

import { codeOf, coded } from "./errors";
import { EventEmitter } from "node:events";

import { Engine, type McpServerOptions, type ModelOptions } from "./engine";
import type { Mode, Preset } from "./protocol";
import {
  type AgentMode,
  type CreateSessionOptions,
  type CreateSessionResult,
  type PermissionLevel,
  type PlanExitResponse,
  type ToolPermissionResponse,
  PROCESS_EVENTS,
  SemaSession,
  isPermissionLevel,
  levelMode,
  notSupported,
} from "./session";
import type { AskQuestionResponseData } from "./questions";
import { disabledTools } from "./tools";

export type {
  PlanExitRequest,
  PlanExitResponse,
  PlanImplement,
  ToolPermissionResponse,
} from "./session";

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
  /** SemaCore 2's name of `skipBashExecPermission`. */
  skipShellExecPermission?: boolean;
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

/** The methods of SemaCore 2 for what coder does not have: each throws `not_supported`. */
const UNSUPPORTED = [
  "addMarketplaceFromGit",
  "addMarketplaceFromDirectory",
  "updateMarketplace",
  "removeMarketplace",
  "installPlugin",
  "uninstallPlugin",
  "enablePlugin",
  "disablePlugin",
  "updatePlugin",
  "refreshMarketplacePluginsInfo",
  "getMarketplacePluginsInfo",
  "getCronTasks",
  "deleteCronTask",
  "enableCronTask",
  "disableCronTask",
  "getDesignSkillsInfo",
  "getDesignSystemsInfo",
  "getMemoryInfo",
  "getHooksInfo",
  "addAgentConf",
  "removeAgentConf",
  "addCommandConf",
  "removeCommandConf",
  "removeSkillConf",
  "enableSkill",
  "disableSkill",
  "addMCPServer",
  "removeMCPServer",
  "reconnectMCPServer",
  "disableMCPServer",
  "enableMCPServer",
  "updateMCPUseTools",
  "fetchAvailableModels",
  "deleteProjectHistory",
  "deleteSessionHistory",
] as const;

export type UnsupportedMethod = (typeof UNSUPPORTED)[number];

export class CoderEngine {
  readonly #bus = new EventEmitter();
  readonly #config: SemaCoreConfig;
  readonly #models = new Map<string, ModelConfig>();
  #task: TaskConfig = { main: "", quick: "" };
  readonly #sessions = new Map<string, SemaSession>();
  #active: SemaSession | undefined;

  constructor(config: SemaCoreConfig = {}) {
    this.#config = { ...config };
    // Fails early on an unknown tool name, as SemaCore's own checks would.
    disabledTools(config.useTools);
  }

  /** Process events (`mcp:server:status`, from every session) and, for SemaCore 1.0
   * programs, the active session's events. */
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

  /**
   * Opens a session, which becomes the active one; `session:ready` follows (on the session,
   * and on the core). `opts` is SemaCore 2's `CreateSessionOptions`, or SemaCore 1.0's
   * session id (a string, or nothing): then the session it replaces is closed, as 1.0 had
   * one session. A failure resolves with `{ ok: false, error }`.
   */
  async createSession(opts?: string | CreateSessionOptions): Promise<CreateSessionResult> {
    const legacy = opts === undefined || typeof opts === "string";
    const options: CreateSessionOptions = typeof opts === "string" ? { sessionId: opts } : (opts ?? {});
    const mainId = options.mainModel ?? this.#task.main;
    const main = this.#models.get(mainId);
    if (!main) {
      const error = options.mainModel ? `unknown model "${options.mainModel}"` : "no model configured";
      this.#bus.emit("config:no_models", { message: error, suggestion: "call addModel() before createSession()" });
      return { ok: false, error };
    }
    if (options.permissionLevel !== undefined && !isPermissionLevel(options.permissionLevel)) {
      return { ok: false, error: "permissionLevel must be Ask, AutoEdit, AutoRun or Bypass" };
    }
    if (legacy && this.#active) await this.closeSessionAsync(this.#active.sessionId);
    const config = this.#config;
    let engine: Engine;
    let historyLoaded = false;
    const baseMode: Mode = config.permissions?.mode && config.permissions.mode !== "plan" ? config.permissions.mode : "default";
    const plan = options.agentMode ? options.agentMode === "Plan" : config.permissions?.mode === "plan" || config.agentMode === "Plan";
    try {
      const { disabled, warnings } = disabledTools(config.useTools);
      for (const warning of warnings) this.#log("warn", warning);
      engine = Engine.create({
        workingDir: config.workingDir ?? process.cwd(),
        model: modelOptions(main),
        // Plan mode first; else the level's mode, `Ask` keeping what the configuration says.
        mode: plan
          ? "plan"
          : options.permissionLevel && options.permissionLevel !== "Ask"
            ? levelMode(options.permissionLevel, baseMode)
            : config.permissions?.mode,
        preset: config.permissions?.preset ?? presetFor(config),
        disabledTools: disabled,
        mcpServers: config.mcpServers,
        saveSessions: config.saveSessions,
        trustWorkspace: config.trustWorkspace,
      });
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
    let resumeError: unknown;
    if (options.sessionId) {
      try {
        historyLoaded = engine.resume(options.sessionId) > 0;
      } catch (err) {
        // The engine left the session fresh; `session:ready` still follows.
        resumeError = err;
      }
    }
    let root = engine.rootConversation;
    if (!historyLoaded && (config.systemPrompt || config.customRules)) {
      // The first conversation created is the root, shaped by SemaCore's prompt and rules.
      root = engine.createConversation({
        baseInstructions: baseInstructions(config),
        userInstructions: config.customRules,
      });
    }
    let session: SemaSession | undefined = undefined;
    const forward = (event: string, data: unknown) => {
      if ((PROCESS_EVENTS as readonly string[]).includes(event) || session === this.#active) this.#bus.emit(event, data);
    };
    session = new SemaSession({
      engine,
      root,
      workingDir: config.workingDir ?? process.cwd(),
      historyLoaded,
      contextWindow: main.contextLength ?? 0,
      thinking: config.thinking !== false,
      baseMode,
      agentMode: plan ? "Plan" : "Agent",
      permissionLevel: options.permissionLevel ?? "Ask",
      forward,
      log: (message) => this.#log("warn", message),
    });
    this.#sessions.set(session.sessionId, session);
    this.#active = session;
    if (resumeError !== undefined) {
      const message = resumeError instanceof Error ? resumeError.message : String(resumeError);
      forward("session:error", { type: "fatal_error", error: { code: codeOf(resumeError) ?? "internal", message } });
    }
    session.ready();
    return { ok: true, session };
  }

  /** A session of the pool, by id. */
  getSession(sessionId: string): SemaSession | undefined {
    return this.#sessions.get(sessionId);
  }

  /** The ids of the pool's sessions, oldest first. */
  listSessions(): string[] {
    return [...this.#sessions.keys()];
  }

  /** Makes a session of the pool the active one (SemaCore 1.0's methods and the core's
   * session events follow it); `false` for an unknown id. */
  setActiveSession(sessionId: string): boolean {
    const session = this.#sessions.get(sessionId);
    if (!session) return false;
    this.#active = session;
    return true;
  }

  /** Closes a session of the pool (its engine is disposed in the background); `false` for
   * an unknown id. */
  closeSession(sessionId: string): boolean {
    if (!this.#sessions.has(sessionId)) return false;
    void this.closeSessionAsync(sessionId);
    return true;
  }

  /** `closeSession`, resolved once the session's engine is disposed. */
  async closeSessionAsync(sessionId: string): Promise<boolean> {
    const session = this.#sessions.get(sessionId);
    if (!session) return false;
    this.#sessions.delete(sessionId);
    if (this.#active === session) this.#active = undefined;
    await session.dispose();
    return true;
  }

  /** The active session. */
  get activeSession(): SemaSession | undefined {
    return this.#active;
  }

  // SemaCore 1.0's session methods: on the active session -----------------------------------

  /** Sends input to the active session; returns at once. */
  processUserInput(input: string, originalInput?: string): void {
    const session = this.#active;
    if (!session) {
      this.#bus.emit("session:error", {
        type: "fatal_error",
        error: { code: "invalid_params", message: "no session: call createSession() first" },
      });
      return;
    }
    session.processUserInput(input, originalInput);
  }

  /** Compacts the active session's main conversation now (what `/compact` does). */
  compact(): void {
    const session = this.#active;
    if (!session) {
      this.#bus.emit("session:error", {
        type: "fatal_error",
        error: { code: "invalid_params", message: "no session: call createSession() first" },
      });
      return;
    }
    session.compact();
  }

  /** Interrupts whatever runs in the active session; `session:interrupted` follows. */
  interruptSession(): void {
    this.#active?.interrupt();
  }

  respondToToolPermission(response: ToolPermissionResponse): void {
    if (!this.#active) {
      if (typeof response?.toolName !== "string" || typeof response?.selected !== "string") {
        throw coded("invalid_params", "respondToToolPermission: `toolName` and `selected` must be strings", TypeError);
      }
      return;
    }
    this.#active.respondToToolPermission(response);
  }

  respondToPlanExit(response: PlanExitResponse): void {
    if (!this.#active) return;
    this.#active.respondToPlanExit(response);
  }

  /** Answers the active session's `ask:question:request`s (see `SemaSession`). */
  respondToAskQuestion(response: AskQuestionResponseData): void {
    if (!this.#active) return;
    this.#active.respondToAskQuestion(response);
  }

  /** The active session's mode: `Plan` while its main conversation plans. */
  get agentMode(): AgentMode {
    return this.#active?.agentMode ?? (this.#config.permissions?.mode === "plan" || this.#config.agentMode === "Plan" ? "Plan" : "Agent");
  }

  updateAgentMode(mode: AgentMode): void {
    this.#active?.updateAgentMode(mode);
  }

  updatePermissionLevel(level: PermissionLevel): void {
    this.#active?.updatePermissionLevel(level);
  }

  /** The low-level engine of the active session, for what the SemaCore API lacks. */
  get engine(): Engine | undefined {
    return this.#active?.engine;
  }

  /** Closes every session and drops the core's listeners. */
  async dispose(): Promise<void> {
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    this.#active = undefined;
    await Promise.all(sessions.map((session) => session.dispose()));
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
    if (!main) return;
    for (const session of this.#sessions.values()) session.engine.setModel(modelOptions(main));
  }

  #log(level: "warn" | "debug", message: string): void {
    const configured = this.#config.logLevel ?? "info";
    if (configured === "none" || (level === "debug" && configured !== "debug")) return;
    console.warn(`[coder] ${message}`);
  }
}

// SemaCore 2's methods for what coder does not have, each throwing `not_supported`.
export interface CoderEngine extends Record<UnsupportedMethod, (...args: unknown[]) => never> {}
for (const method of UNSUPPORTED) {
  Object.defineProperty(CoderEngine.prototype, method, {
    value: function unsupported(): never {
      throw notSupported(method);
    },
    writable: true,
    configurable: true,
  });
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
  if (config.skipFileEditPermission && (config.skipBashExecPermission || config.skipShellExecPermission)) return "yolo";
  if (config.skipFileEditPermission) return "auto-edit";
  return undefined;
}

/** SemaCore's `systemPrompt` as coder's base instructions, which replace the built-in prompt. */
function baseInstructions(config: SemaCoreConfig): string | undefined {
  if (!config.systemPrompt) return undefined;
  if (config.systemPromptMode === "replace" || config.systemPromptMode === "replaceAll") return config.systemPrompt;
  return `${config.systemPrompt}\n\n${Engine.builtInPrompt()}`;
}

