// SemaCore's tool names and coder's. coder's names come from `protocol.ts`, generated from
// the Rust lists the engine's registry is checked against; only the SemaCore side is kept
// here.

import { coded } from "./errors";
import { BUILTIN_TOOLS, CONVERSATION_TOOLS, type ToolName } from "./protocol";

/** SemaCore name (1.0's first, then 2.0's) -> the coder tools it stands for. */
const SEMA_TOOLS: Record<string, readonly ToolName[]> = {
  Bash: ["bash"],
  Glob: ["glob"],
  Grep: ["grep"],
  Read: ["read"],
  Edit: ["edit", "apply_patch"],
  Write: ["write"],
  TodoWrite: ["todo_write"],
  AskUserQuestion: ["ask_user"],
  Task: CONVERSATION_TOOLS,
  Skill: ["skill"],
  ExitPlanMode: ["exit_plan_mode"],
  RunShell: ["bash"],
  SearchFiles: ["glob"],
  SearchContent: ["grep"],
  ViewFile: ["read"],
  PatchFile: ["edit", "apply_patch"],
  WriteFile: ["write"],
  CreateTodo: ["todo_write"],
  UpdateTodo: ["todo_write"],
  GetTodo: ["todo_write"],
  ListTodos: ["todo_write"],
  PickOption: ["ask_user"],
  SubAgent: CONVERSATION_TOOLS,
  PlanToAgent: ["exit_plan_mode"],
};

/** SemaCore tools coder does not have. */
const MISSING = new Set([
  "NotebookEdit",
  "EditNotebook",
  "FetchUrl",
  "GenerateImage",
  "CreateCron",
  "DelCron",
  "ListCrons",
  "PeekBgJob",
  "StopBgJob",
  "LoadTools",
]);

const ALL: readonly ToolName[] = [...BUILTIN_TOOLS, ...CONVERSATION_TOOLS];

/** The coder tools to switch off for a SemaCore `useTools` list (`null`: all on), and the
 * warnings to give: a name coder has no tool for, or does not know, is left out with a
 * warning, as SemaCore leaves out names it does not know. */
export function disabledTools(useTools: string[] | null | undefined): {
  disabled: string[];
  warnings: string[];
} {
  if (!useTools) return { disabled: [], warnings: [] };
  if (!Array.isArray(useTools)) throw coded("invalid_params", "useTools must be an array of tool names or null", TypeError);
  const wanted = new Set<ToolName>();
  const warnings: string[] = [];
  for (const name of useTools) {
    const tools = typeof name === "string" ? SEMA_TOOLS[name] : undefined;
    if (tools) {
      for (const tool of tools) wanted.add(tool);
    } else if (typeof name === "string" && MISSING.has(name)) {
      warnings.push(`useTools: coder has no ${name} tool; it is left out`);
    } else if (typeof name !== "string" || !name.startsWith("mcp__")) {
      warnings.push(`useTools: unknown tool ${JSON.stringify(name)}; it is left out (known: ${Object.keys(SEMA_TOOLS).join(", ")})`);
    }
  }
  return { disabled: ALL.filter((tool) => !wanted.has(tool)), warnings };
}

/** The coder tools a SemaCore 2 `disabledTools` list names, and the warnings for names
 * coder has no tool for. */
export function namedTools(names: string[]): { tools: string[]; warnings: string[] } {
  if (!Array.isArray(names)) throw coded("invalid_params", "the tool names must be an array", TypeError);
  const tools = new Set<string>();
  const warnings: string[] = [];
  for (const name of names) {
    const mapped = typeof name === "string" ? SEMA_TOOLS[name] : undefined;
    if (mapped) for (const tool of mapped) tools.add(tool);
    else if (typeof name === "string" && (ALL as readonly string[]).includes(name)) tools.add(name);
    else warnings.push(`disabledTools: coder has no tool ${JSON.stringify(name)}; it is left out`);
  }
  return { tools: [...tools], warnings };
}

/** The SemaCore name of a coder tool (MCP tools and unknown names stay as they are). */
export function semaName(tool: string): string {
  for (const [sema, tools] of Object.entries(SEMA_TOOLS)) {
    if ((tools as readonly string[]).includes(tool)) return sema;
  }
  return tool;
}
