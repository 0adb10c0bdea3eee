// SemaCore's information types (tools, skills, agents, custom commands, models, MCP
// servers), and how coder's answers become them.

import type { CommandInfo, SkillInfo as CoderSkill } from "./protocol";
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

export interface MCPServerInfo {
  config: { name: string; transport: "stdio" | "http"; command?: string; args?: string[]; url?: string; enabled: boolean };
  status: MCPServerStatus;
  /** How many tools the server offers, once it is connected. */
  toolCount?: number;
  error?: string;
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
