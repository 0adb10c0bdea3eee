// `CoderEngine`, also exported as `SemaCore`: SemaCore's API over the engine, so a program
// written for SemaCore 1.0 or 2.0 runs by changing its import. The core keeps a pool of
// `SemaSession`s (ts/session.ts, where the engine's events are translated); SemaCore 1.0's
// session methods and events on the core act on and come from the active session.

import { codeOf, coded } from "./errors";
import { EventEmitter } from "node:events";

import { Engine, type McpServerOptions, type ModelOptions } from "./engine";
import type { Mode, Preset, RuleInfo } from "./protocol";
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
import { disabledTools, namedTools } from "./tools";
import {
  type AgentInfo,
  type ApiTestParams,
  type ApiTestResult,
  type CustomCommand,
  type FetchModelsParams,
  type FetchModelsResult,
  type MCPServerConfig,
  type MCPServerInfo,
  type SkillInfo,
  type ToolInfo,
  type UpdatableCoreConfigKey,
  CONVERSATION_AGENT,
  UPDATABLE_KEYS,
  customCommands,
  serverInfo,
  serverOptions,
  skillInfo,
  toolInfos,
} from "./info";
import { type ModelProfile, modelFilePath, readModelFile, writeModelFile } from "./models";

export type * from "./info";
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
  /** SemaCore 2: the most sessions the pool holds at once; `createSession` past it resolves
   * `{ ok: false }` (close one first). Default: no limit. */
  maxSessions?: number;
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
] as const;

export type UnsupportedMethod = (typeof UNSUPPORTED)[number];

export class CoderEngine {
  readonly #bus = new EventEmitter();
  readonly #config: SemaCoreConfig;
  readonly #models = new Map<string, ModelConfig>();
  #task: TaskConfig = { main: "", quick: "" };
  /** SemaCore's model file, as `SEMA_ROOT` named it when the core was made. */
  readonly #modelFile = modelFilePath();
  readonly #sessions = new Map<string, SemaSession>();
  #active: SemaSession | undefined;
  /** The program's MCP servers in SemaCore's shape, by name (`mcpServers`, then what the
   * MCP methods set). */
  readonly #servers = new Map<string, MCPServerConfig>();
  /** The tools each restricted server may offer (`updateMCPUseTools`). */
  readonly #mcpUseTools = new Map<string, string[]>();
  /** Tools switched off by `updateDisabledTools` (coder's names), over `useTools`. */
  #hidden: string[] = [];

  constructor(config: SemaCoreConfig = {}) {
    this.#config = { ...config };
    // Unknown tool names are left out with a warning, as SemaCore does.
    for (const warning of disabledTools(config.useTools).warnings) this.#log("warn", warning);
    for (const [name, server] of Object.entries(config.mcpServers ?? {})) {
      this.#servers.set(name, {
        name,
        transport: server.url ? "http" : "stdio",
        ...(server.command ? { command: server.command } : {}),
        ...(server.args ? { args: [...server.args] } : {}),
        ...(server.env ? { env: { ...server.env } } : {}),
        ...(server.url ? { url: server.url } : {}),
        ...(server.headers ? { headers: { ...server.headers } } : {}),
        enabled: server.enabled !== false,
      });
    }
    // The models a program added before, in this process or another (SemaCore's file).
    const saved = readModelFile(this.#modelFile, (message) => this.#log("warn", message));
    for (const profile of saved.modelProfiles) {
      const { name, baseURL, ...rest } = profile;
      this.#models.set(name, { ...rest, baseURL: baseURL ?? "" });
    }
    this.#task = { ...saved.modelPointers };
    if (!this.#task.quick) this.#task.quick = this.#task.main;
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
    this.#saveModels();
    return this.getModelData();
  }

  async delModel(id: string): Promise<ModelUpdateData> {
    this.#models.delete(id);
    // A deleted model's role goes to the other role's model, else to the first one left.
    const first = this.#models.keys().next().value ?? "";
    if (this.#task.main === id) this.#task.main = this.#task.quick !== id && this.#task.quick ? this.#task.quick : first;
    if (this.#task.quick === id) this.#task.quick = this.#task.main;
    this.#applyMain();
    this.#saveModels();
    return this.getModelData();
  }

  async applyTaskModel(config: TaskConfig): Promise<ModelUpdateData> {
    for (const id of [config.main, config.quick]) this.#model(id);
    this.#task = { ...config };
    this.#applyMain();
    this.#saveModels();
    return this.getModelData();
  }

  async switchModel(id: string): Promise<ModelUpdateData> {
    this.#model(id);
    this.#task = { main: id, quick: this.#task.quick || id };
    this.#applyMain();
    this.#saveModels();
    return this.getModelData();
  }

  /** Tests a model's connection with one short request (SemaCore's `testApiConnection`);
   * resolves `{ success, message }` either way. */
  async testApiConnection(params: ApiTestParams): Promise<ApiTestResult> {
    try {
      const reply = await Engine.checkModel(modelOptions({ ...params, provider: params.provider ?? "openai", maxTokens: 0, contextLength: 0 }));
      return { success: true, message: `connected; the model answered: ${reply.trim().slice(0, 200)}` };
    } catch (err) {
      return { success: false, message: err instanceof Error ? err.message : String(err) };
    }
  }

  /** The models a provider lists (`GET {baseURL}/models`, Anthropic's `/v1/models`);
   * resolves `{ success: false, message }` when it cannot be listed. */
  async fetchAvailableModels(params: FetchModelsParams): Promise<FetchModelsResult> {
    try {
      const listed = await Engine.listModels(
        modelOptions({ ...params, provider: params.provider ?? "openai", modelName: "-", maxTokens: 0, contextLength: 0 }),
      );
      return {
        success: true,
        models: listed.map((model) => ({
          id: model.id,
          name: model.displayName ?? model.id,
          ...(model.ownedBy ? { ownedBy: model.ownedBy } : {}),
        })),
      };
    } catch (err) {
      return { success: false, message: err instanceof Error ? err.message : String(err) };
    }
  }

  async getModelData(): Promise<ModelUpdateData> {
    return {
      modelName: this.#task.main,
      modelList: [...this.#models.keys()],
      taskConfig: { ...this.#task },
    };
  }

  // Configuration --------------------------------------------------------------------------

  /** Changes one of SemaCore's updatable settings (`UpdatableCoreConfigKeys`) for every
   * session, from the next request on: `stream` and `thinking` decide which chunk events
   * come; `systemPrompt` and `customRules` become the main conversation's instructions;
   * the `skip*Permission` flags choose coder's permission preset, which only narrows below
   * the one sessions were created with (the engine's ceiling: a wider one is narrowed, with
   * a warning). coder decides skills and MCP tools by the preset too, and has no LLM cache:
   * `skipSkillPermission`, `skipMCPToolPermission` and `enableLLMCache` are kept and logged
   * as having no effect. An unknown key throws `invalid_params`. */
  updateCoreConfByKey<K extends UpdatableCoreConfigKey>(key: K, value: SemaCoreConfig[K & keyof SemaCoreConfig]): void {
    this.updateCoreConfig({ [key]: value } as Partial<Record<UpdatableCoreConfigKey, unknown>>);
  }

  /** `updateCoreConfByKey` for several keys at once. */
  updateCoreConfig(update: Partial<Record<UpdatableCoreConfigKey, unknown>>): void {
    if (typeof update !== "object" || update === null) {
      throw coded("invalid_params", "updateCoreConfig takes an object of settings", TypeError);
    }
    for (const key of Object.keys(update)) {
      if (!(UPDATABLE_KEYS as readonly string[]).includes(key)) {
        throw coded("invalid_params", `updateCoreConfig: "${key}" cannot be changed (updatable: ${UPDATABLE_KEYS.join(", ")})`, TypeError);
      }
    }
    const config = this.#config as Record<string, unknown>;
    const before = { ...this.#config };
    Object.assign(config, update);
    for (const key of ["skipSkillPermission", "skipMCPToolPermission", "enableLLMCache"] as const) {
      if (key in update) this.#log("warn", `${key}: coder has no such setting; it changes nothing`);
    }
    for (const session of this.#sessions.values()) {
      session.configureOutput({ stream: this.#config.stream !== false, thinking: this.#config.thinking !== false });
      if ("systemPrompt" in update || "systemPromptMode" in update || "customRules" in update) {
        session.engine.setContext(session.rootConversation, {
          baseInstructions: baseInstructions(this.#config) ?? null,
          ...(this.#config.customRules !== before.customRules ? { userInstructions: this.#config.customRules ?? "" } : {}),
        });
      }
      const preset = presetFor(this.#config) ?? this.#config.permissions?.preset ?? "balanced";
      if (presetFor(before) !== presetFor(this.#config)) session.engine.command(session.rootConversation, `/permissions ${preset}`);
    }
  }

  /** SemaCore 1.0: the tools the model is offered (`null`: all), by SemaCore's names (or
   * coder's); unknown names are left out with a warning. Applies from the next request. */
  updateUseTools(toolNames: string[] | null): void {
    const { warnings } = disabledTools(toolNames);
    for (const warning of warnings) this.#log("warn", warning);
    this.#config.useTools = toolNames;
    this.#applyTools();
  }

  /** SemaCore 2: the tools the model is not offered, by SemaCore's names (or coder's). */
  updateDisabledTools(toolNames: string[]): void {
    const { tools, warnings } = namedTools(toolNames);
    for (const warning of warnings) this.#log("warn", warning);
    this.#hidden = tools;
    this.#applyTools();
  }

  /** coder's built-in tools by SemaCore's names, each `enable`d unless `useTools`,
   * `updateDisabledTools` or the configuration switched it off. */
  getToolInfos(): ToolInfo[] {
    const session = this.#active ?? this.#sessions.values().next().value;
    if (session) return toolInfos(session.engine.builtinTools());
    const disabled = new Set(this.#disabled());
    return toolInfos(Engine.builtinTools().map((tool) => ({ ...tool, offered: !disabled.has(tool.name) })));
  }

  /** The skills of the workspace and the user-level folder. */
  getSkillsInfo(): SkillInfo[] {
    return this.#read((engine) => engine.skills().map(skillInfo));
  }

  /** coder's sub-agents: conversations the model creates (there are no agent files). */
  getAgentsInfo(): AgentInfo[] {
    return [{ ...CONVERSATION_AGENT }];
  }

  /** The custom commands (`.coder/commands/*.md` and the user-level folder's). */
  async getCustomCommands(): Promise<CustomCommand[]> {
    return this.#read((engine) => customCommands(engine.commands()));
  }

  /** SemaCore 2's name of `getCustomCommands`. */
  async getCommandsInfo(_concise?: boolean, _refresh?: boolean): Promise<CustomCommand[]> {
    return this.getCustomCommands();
  }

  /** SemaCore 2: the rule files the model is given (`AGENTS.md`, `CLAUDE.md`, the
   * user-level rules), each with its path, size and whether it was cut. */
  async getRuleInfo(_refresh?: boolean): Promise<{ rules: RuleInfo[] }> {
    return { rules: this.#read((engine) => engine.rules()) };
  }

  /** SemaCore 2: deletes a saved session of the workspace (`.coder/sessions/<id>.json` and
   * its journal); a session of the pool with that id is closed first. Resolves whether
   * there was one. */
  async deleteSessionHistory(sessionId: string): Promise<boolean> {
    if (this.#sessions.has(sessionId)) await this.closeSessionAsync(sessionId);
    return this.#read((engine) => engine.deleteSavedSession(sessionId), true);
  }

  /** SemaCore 2: deletes every saved session of the workspace but those of the pool;
   * resolves how many. */
  async deleteProjectHistory(): Promise<number> {
    const open = new Set(this.#sessions.keys());
    return this.#read((engine) => {
      const saved = engine.savedSessions().filter((session) => !open.has(session.sessionId));
      return saved.filter((session) => engine.deleteSavedSession(session.sessionId)).length;
    }, true);
  }

  /** The engine watches the command folders and reads a changed file again by itself (or,
   * where the platform's watcher cannot start, at each listing): the next
   * `getCustomCommands` and input see the files as they are. */
  reloadCustomCommands(): void {
    this.#log("debug", "reloadCustomCommands: the engine reads changed command files by itself");
  }

  // MCP servers -----------------------------------------------------------------------------
  //
  // The servers are the program's: `mcpServers` at first, then what these methods set. They
  // apply at once to every session (servers not named stop, new or changed ones start) and
  // to sessions created later; nothing is written to a configuration file, so `scope` is
  // accepted and not used.

  /** SemaCore 1.0: adds a server or replaces the one of its name; resolves once it is
   * connected or has failed (or at once, with `disconnected`, while no session runs). */
  async addOrUpdateMCPServer(config: MCPServerConfig, _scope?: "project" | "user"): Promise<MCPServerInfo> {
    this.#setServer(config);
    await this.#applyServers([config.name]);
    return this.#serverInfo(config.name);
  }

  /** SemaCore 2: adds a server or replaces the one of its name; resolves with every server
   * once it is connected or has failed. */
  async addMCPServer(config: MCPServerConfig): Promise<MCPServerInfo[]> {
    this.#setServer(config);
    await this.#applyServers([config.name]);
    return this.getMCPServerInfo();
  }

  /** Stops and forgets a server. With SemaCore 1.0's `scope` argument: resolves whether there
   * was one; without (SemaCore 2): resolves with the servers left. */
  async removeMCPServer(name: string, scope?: "project" | "user"): Promise<boolean | MCPServerInfo[]> {
    const known = this.#servers.delete(name);
    this.#mcpUseTools.delete(name);
    if (known) await this.#applyServers([name]);
    return scope === undefined ? this.getMCPServerInfo() : known;
  }

  /** SemaCore 1.0: every server with its state, under the scope `project` (the program's). */
  getMCPServerConfigs(): Map<"project" | "user", MCPServerInfo[]> {
    return new Map([["project", this.#serverInfos()], ["user", []]]);
  }

  /** SemaCore 2: every server with its state and, once connected, its tools. */
  async getMCPServerInfo(): Promise<MCPServerInfo[]> {
    return this.#serverInfos();
  }

  /** SemaCore 2: as `getMCPServerInfo` (the engine reports changes as they happen). */
  async refreshMCPServerInfo(): Promise<MCPServerInfo[]> {
    return this.#serverInfos();
  }

  /** SemaCore 1.0: stops a server and starts it again; resolves once it is connected or has
   * failed. An unknown name throws `not_found`. */
  async connectMCPServer(name: string): Promise<MCPServerInfo> {
    this.#knownServer(name);
    const settled = this.#serverSettled([name]);
    for (const session of this.#sessions.values()) session.engine.restartMcpServer(name);
    await settled;
    return this.#serverInfo(name);
  }

  /** SemaCore 2: `connectMCPServer`, resolving with every server. */
  async reconnectMCPServer(name: string): Promise<MCPServerInfo[]> {
    await this.connectMCPServer(name);
    return this.getMCPServerInfo();
  }

  /** SemaCore 2: stops a server and keeps it, switched off. */
  async disableMCPServer(name: string): Promise<MCPServerInfo[]> {
    this.#knownServer(name).enabled = false;
    await this.#applyServers([name]);
    return this.getMCPServerInfo();
  }

  /** SemaCore 2: starts a server switched off. */
  async enableMCPServer(name: string): Promise<MCPServerInfo[]> {
    this.#knownServer(name).enabled = true;
    await this.#applyServers([name]);
    return this.getMCPServerInfo();
  }

  /** Which of a server's tools the model may use (`null`: all), from the next request of
   * every session; resolves with every server. */
  async updateMCPUseTools(name: string, toolNames: string[] | null): Promise<MCPServerInfo[]> {
    const server = this.#knownServer(name);
    if (toolNames !== null && !Array.isArray(toolNames)) {
      throw coded("invalid_params", "updateMCPUseTools: the tool names must be an array or null", TypeError);
    }
    server.useTools = toolNames === null ? null : [...toolNames];
    if (toolNames === null) this.#mcpUseTools.delete(name);
    else this.#mcpUseTools.set(name, [...toolNames]);
    for (const session of this.#sessions.values()) this.#applyUseTools(session);
    return this.getMCPServerInfo();
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
    if (!main && options.mainModel) return { ok: false, error: `unknown model "${options.mainModel}"` };
    if (!main) {
      // As SemaCore: the session opens anyway (`session:ready` follows); input fails with a
      // `config_error` until `addModel` gives it a model.
      this.#bus.emit("config:no_models", { message: "no model configured", suggestion: "call addModel() before createSession()" });
    }
    const max = this.#config.maxSessions;
    if (!legacy && max !== undefined && this.#sessions.size >= max) {
      return { ok: false, error: `the pool holds ${this.#sessions.size} sessions, its maxSessions: close one first` };
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
      engine = Engine.create({
        workingDir: config.workingDir ?? process.cwd(),
        model: main ? modelOptions(main) : undefined,
        modelLater: main ? undefined : true,
        // Plan mode first; else the level's mode, `Ask` keeping what the configuration says.
        mode: plan
          ? "plan"
          : options.permissionLevel && options.permissionLevel !== "Ask"
            ? levelMode(options.permissionLevel, baseMode)
            : config.permissions?.mode,
        preset: config.permissions?.preset ?? presetFor(config),
        disabledTools: this.#disabled(),
        mcpServers: this.#serverOptions(),
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
      // A server's tools change as it starts: the allowlists that restrict some follow.
      if (event === "mcp:server:status" && session && this.#mcpUseTools.size > 0) this.#applyUseTools(session);
      if ((PROCESS_EVENTS as readonly string[]).includes(event) || session === this.#active) this.#bus.emit(event, data);
    };
    session = new SemaSession({
      engine,
      root,
      workingDir: config.workingDir ?? process.cwd(),
      historyLoaded,
      contextWindow: main?.contextLength ?? 0,
      thinking: config.thinking !== false,
      stream: config.stream !== false,
      baseMode,
      basePreset: config.permissions?.preset ?? presetFor(config),
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
    // As SemaCore's: `session:ready` comes after the caller's own code of this tick, so a
    // listener attached right after `createSession()` (without awaiting it) hears it too.
    await null;
    if (!session.disposed) session.ready();
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

  /** coder's tools switched off: those `useTools` leaves out, and `updateDisabledTools`'s. */
  #disabled(): string[] {
    return [...new Set([...disabledTools(this.#config.useTools).disabled, ...this.#hidden])];
  }

  #applyTools(): void {
    const disabled = this.#disabled();
    for (const session of this.#sessions.values()) session.engine.setDisabledTools(disabled);
  }

  /** `read` on a session's engine, or on a short-lived one without a model (which saves
   * nothing: it runs no task; `sessions` lets it reach the saved sessions). */
  #read<T>(read: (engine: Engine) => T, sessions = false): T {
    const session = this.#active ?? this.#sessions.values().next().value;
    if (session && (!sessions || this.#config.saveSessions !== false)) return read(session.engine);
    const engine = Engine.create({
      workingDir: this.#config.workingDir ?? process.cwd(),
      saveSessions: sessions,
      trustWorkspace: this.#config.trustWorkspace,
      modelLater: true,
    });
    try {
      return read(engine);
    } finally {
      void engine.dispose();
    }
  }

  #setServer(config: MCPServerConfig): void {
    serverOptions(config);
    this.#servers.set(config.name, { ...config });
    if (config.useTools) this.#mcpUseTools.set(config.name, [...config.useTools]);
    else this.#mcpUseTools.delete(config.name);
  }

  #knownServer(name: string): MCPServerConfig {
    const server = this.#servers.get(name);
    if (!server) throw coded("not_found", `no MCP server named "${name}" (known: ${[...this.#servers.keys()].join(", ") || "none"})`);
    return server;
  }

  /** The program's servers as the engine's options; the ones the program kept from its
   * configuration (`mcpServers`) keep their own options. */
  #serverOptions(): Record<string, McpServerOptions> {
    const options: Record<string, McpServerOptions> = {};
    for (const [name, server] of this.#servers) {
      const given = this.#config.mcpServers?.[name];
      options[name] = given && sameServer(server, given) ? { ...given, enabled: server.enabled !== false } : serverOptions(server);
    }
    return options;
  }

  /** Gives every session the program's servers and resolves once each of `changed` has
   * settled on the active session (connected, failed, switched off or stopped). */
  async #applyServers(changed: string[]): Promise<void> {
    const settled = this.#serverSettled(changed);
    const options = this.#serverOptions();
    for (const session of this.#sessions.values()) session.engine.setMcpServers(options);
    await settled;
    for (const session of this.#sessions.values()) this.#applyUseTools(session);
  }

  /** Resolves when each named server has reported a state other than `starting` on the
   * active session (at once without one; after 60 s at the latest). */
  #serverSettled(names: string[]): Promise<void> {
    const session = this.#active;
    if (!session || names.length === 0) return Promise.resolve();
    const waiting = new Set(names);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        session.off("mcp:server:status", listener);
        resolve();
      };
      const listener = (data: { name: string; status: string }) => {
        if (data.status !== "starting") waiting.delete(data.name);
        if (waiting.size === 0) done();
      };
      const timer = setTimeout(done, 60_000);
      session.on("mcp:server:status", listener);
    });
  }

  /** The servers' tools the model of `session` may use: every tool of each server, but
   * only the named ones of a restricted server (the main conversation's MCP allowlist). */
  #applyUseTools(session: SemaSession): void {
    const servers = session.engine.mcpServers().filter((server) => server.state === "ready");
    const allowlist =
      this.#mcpUseTools.size === 0
        ? null
        : servers.flatMap((server) => {
            const allowed = this.#mcpUseTools.get(server.name);
            return server.tools.filter((tool) => !allowed || allowed.includes(tool)).map((tool) => `${server.name}__${tool}`);
          });
    try {
      session.engine.setContext(session.rootConversation, { mcpAllowlist: allowlist, refreshMcpView: true });
    } catch (err) {
      // A server that stopped between the listing and now: its next status applies again.
      this.#log("warn", `the MCP tools could not be limited: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  #serverInfos(): MCPServerInfo[] {
    return [...this.#servers.keys()].map((name) => this.#serverInfo(name));
  }

  #serverInfo(name: string): MCPServerInfo {
    const config = this.#knownServer(name);
    const session = this.#active ?? this.#sessions.values().next().value;
    const state = session?.engine.mcpServers().find((server) => server.name === name);
    return serverInfo(config, state);
  }

  #saveModels(): void {
    const modelProfiles: ModelProfile[] = [...this.#models.entries()].map(([name, model]) => ({ name, ...model }));
    try {
      writeModelFile(this.#modelFile, { modelProfiles, modelPointers: { ...this.#task } });
    } catch (err) {
      this.#log("warn", `the models could not be saved: ${err instanceof Error ? err.message : String(err)}`);
    }
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

/** Whether a SemaCore server configuration still is the one `mcpServers` gave. */
function sameServer(server: MCPServerConfig, given: McpServerOptions): boolean {
  return server.command === given.command && server.url === given.url && JSON.stringify(server.args ?? []) === JSON.stringify(given.args ?? []);
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

