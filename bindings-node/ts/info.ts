// SemaCore's information types (tools, skills, agents, custom commands, models, MCP
// servers), and how coder's answers become them.

import type { McpServerState } from "./engine";
import { coded } from "./errors";
import type { CommandInfo, McpServerOptions, SkillInfo as CoderSkill } from "./protocol";
import { semaName } from "./tools";

export interface ToolInfo {
  name: string;
  description: string;
  status: "enable" | "disable";
}

export interface SkillInfo {
  name: string;
  description: string;
  /** `user`: the user-level folder; `project`: the workspace's `.coder/skills/`. */
  locate: "user" | "project";
}

export interface AgentInfo {
  name: string;
  description: string;
  tools?: string[] | "*";
  model?: string;
  locate: "user" | "project" | "builtin";
}

export interface CustomCommand {
  name: string;
  displayName: string;
  description: string;
  argumentHint?: string;
  filePath: string;
  scope: "user" | "project";
  /** The prompt, without the frontmatter (before `$ARGUMENTS` is replaced). */
  content: string;
}

export interface ModelInfo {
  id: string;
  name: string;
  ownedBy?: string;
}

export interface FetchModelsParams {
  provider?: string;
  baseURL: string;
  apiKey: string;
}

export interface FetchModelsResult {
  success: boolean;
  models?: ModelInfo[];
  message?: string;
}

export interface ApiTestParams {
  provider?: string;
  baseURL: string;
  apiKey: string;
  modelName: string;
}

export interface ApiTestResult {
  success: boolean;
  message: string;
}

export type MCPServerStatus = "disconnected" | "connecting" | "connected" | "error";

/** A server as SemaCore's MCP methods take it. coder speaks MCP over stdio and streamable
 * HTTP (`transport: "http"`); an SSE-only server is refused. */
export interface MCPServerConfig {
  name: string;
  transport: "stdio" | "sse" | "http";
  description?: string;
  enabled?: boolean;
  /** The server's tools the model may use; `null` or left out: all of them. */
  useTools?: string[] | null;
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  url?: string;
  headers?: Record<string, string>;
}

export interface MCPServerInfo {
  config: MCPServerConfig;
  status: MCPServerStatus;
  /** The server's tools, once it is connected. */
  capabilities?: { tools: Array<{ name: string }> };
  error?: string;
}

/** A SemaCore server configuration as the engine's options; throws `invalid_params` for one
 * coder cannot run. */
export function serverOptions(config: MCPServerConfig): McpServerOptions {
  if (typeof config?.name !== "string" || !config.name) throw coded("invalid_params", "an MCP server needs a name", TypeError);
  if (config.transport === "sse") {
    throw coded("invalid_params", `MCP server "${config.name}": coder speaks MCP over stdio and streamable HTTP, not SSE alone; give its streamable HTTP URL with transport "http"`);
  }
  if (config.transport === "http" ? !config.url : !config.command) {
    throw coded("invalid_params", `MCP server "${config.name}": ${config.transport === "http" ? "url" : "command"} is missing`, TypeError);
  }
  return config.transport === "http"
    ? { url: config.url, ...(config.headers ? { headers: { ...config.headers } } : {}), enabled: config.enabled !== false }
    : {
        command: config.command,
        ...(config.args ? { args: [...config.args] } : {}),
        ...(config.env ? { env: { ...config.env } } : {}),
        enabled: config.enabled !== false,
      };
}

/** The engine's report of a server, in SemaCore's shape. */
export function serverInfo(config: MCPServerConfig, state: McpServerState | undefined): MCPServerInfo {
  const status: MCPServerStatus =
    state?.state === "ready" ? "connected" : state?.state === "starting" ? "connecting" : state?.state === "failed" ? "error" : "disconnected";
  return {
    config: { ...config },
    status,
    ...(state?.state === "ready" ? { capabilities: { tools: state.tools.map((name) => ({ name })) } } : {}),
    ...(state?.error ? { error: state.error } : {}),
  };
}

/** The keys `updateCoreConfByKey` takes (SemaCore's `UpdatableCoreConfigKeys`). */
export const UPDATABLE_KEYS = [
  "stream",
  "thinking",
  "systemPrompt",
  "customRules",
  "skipFileEditPermission",
  "skipBashExecPermission",
  "skipShellExecPermission",
  "skipSkillPermission",
  "skipMCPToolPermission",
  "enableLLMCache",
] as const;

export type UpdatableCoreConfigKey = (typeof UPDATABLE_KEYS)[number];

/** coder's built-in tools under SemaCore's names: one entry per SemaCore name, enabled
 * while any coder tool it stands for is offered. */
export function toolInfos(tools: Array<{ name: string; description: string; offered: boolean }>): ToolInfo[] {
  const byName = new Map<string, ToolInfo>();
  for (const tool of tools) {
    const name = semaName(tool.name);
    const known = byName.get(name);
    if (!known) byName.set(name, { name, description: tool.description, status: tool.offered ? "enable" : "disable" });
    else if (tool.offered) known.status = "enable";
  }
  return [...byName.values()];
}

export function skillInfo(skill: CoderSkill): SkillInfo {
  return { name: skill.name, description: skill.description, locate: skill.source === "user" ? "user" : "project" };
}

/** The custom commands of coder's list (the built-in ones are not SemaCore's). */
export function customCommands(commands: CommandInfo[]): CustomCommand[] {
  return commands
    .filter((command) => command.source !== "builtin")
    .map((command) => ({
      name: command.name,
      displayName: `/${command.name}`,
      description: command.description,
      ...(command.argumentHint ? { argumentHint: command.argumentHint } : {}),
      filePath: command.path ?? "",
      scope: command.source === "user" ? "user" : "project",
      content: command.body ?? "",
    }));
}

/** coder's one kind of sub-agent: a conversation the model creates (`conv_create`) with
 * the tools of its parent; there are no agent definition files. */
export const CONVERSATION_AGENT: AgentInfo = {
  name: "conversation",
  description: "A conversation the model creates with conv_create and talks to with conv_send; it has the tools of the session.",
  tools: "*",
  locate: "builtin",
};
