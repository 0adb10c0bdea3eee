// SemaCore's tool names and coder's. coder's names come from `protocol.ts`, generated from
// the Rust lists the engine's registry is checked against; only the SemaCore side is kept
// here.

import { coded } from "./errors";
import { BUILTIN_TOOLS, CONVERSATION_TOOLS, type ToolName } from "./protocol";

/** SemaCore name -> the coder tools it stands for. */
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
};

/** SemaCore tools coder does not have: naming one is a warning, not an error. */
const MISSING = new Set(["Skill", "NotebookEdit", "ExitPlanMode"]);

const ALL: readonly ToolName[] = [...BUILTIN_TOOLS, ...CONVERSATION_TOOLS];

/** The coder tools to switch off for a SemaCore `useTools` list (`null`: all on), and the
 * warnings to give; an unknown name throws. */
export function disabledTools(useTools: string[] | null | undefined): {
  disabled: string[];
  warnings: string[];
} {
  if (!useTools) return { disabled: [], warnings: [] };
  const wanted = new Set<ToolName>();
  const warnings: string[] = [];
  for (const name of useTools) {
    const tools = SEMA_TOOLS[name];
    if (tools) {
      for (const tool of tools) wanted.add(tool);
    } else if (MISSING.has(name)) {
      warnings.push(`useTools: coder has no ${name} tool; it is left out`);
    } else if (!name.startsWith("mcp__")) {
      const known = [...Object.keys(SEMA_TOOLS), ...MISSING].join(", ");
      throw coded("invalid_params", `useTools: unknown tool "${name}" (known: ${known})`);
    }
  }
  return { disabled: ALL.filter((tool) => !wanted.has(tool)), warnings };
}

/** The SemaCore name of a coder tool (MCP tools and unknown names stay as they are). */
export function semaName(tool: string): string {
  for (const [sema, tools] of Object.entries(SEMA_TOOLS)) {
    if ((tools as readonly string[]).includes(tool)) return sema;
  }
  return tool;
}
