// SemaCore's tool names and coder's.

/** SemaCore name -> the coder tools it stands for. */
const SEMA_TOOLS: Record<string, string[]> = {
  Bash: ["bash"],
  Glob: ["glob"],
  Grep: ["grep"],
  Read: ["read"],
  Edit: ["edit", "apply_patch"],
  Write: ["write"],
  TodoWrite: ["todo_write"],
  Task: ["conv_create", "conv_send", "conv_list", "conv_history", "conv_destroy"],
};

/** SemaCore tools coder does not have: naming one is a warning, not an error. */
const MISSING = new Set(["Skill", "NotebookEdit", "AskUserQuestion", "ExitPlanMode"]);

const ALL = Object.values(SEMA_TOOLS).flat();

/** The coder tools to switch off for a SemaCore `useTools` list (`null`: all on), and the
 * warnings to give; an unknown name throws. */
export function disabledTools(useTools: string[] | null | undefined): {
  disabled: string[];
  warnings: string[];
} {
  if (!useTools) return { disabled: [], warnings: [] };
  const wanted = new Set<string>();
  const warnings: string[] = [];
  for (const name of useTools) {
    const tools = SEMA_TOOLS[name];
    if (tools) {
      for (const tool of tools) wanted.add(tool);
    } else if (MISSING.has(name)) {
      warnings.push(`useTools: coder has no ${name} tool; it is left out`);
    } else if (!name.startsWith("mcp__")) {
      const known = [...Object.keys(SEMA_TOOLS), ...MISSING].join(", ");
      throw new Error(`useTools: unknown tool "${name}" (known: ${known})`);
    }
  }
  return { disabled: ALL.filter((tool) => !wanted.has(tool)), warnings };
}

/** The SemaCore name of a coder tool (MCP tools and unknown names stay as they are). */
export function semaName(tool: string): string {
  for (const [sema, tools] of Object.entries(SEMA_TOOLS)) {
    if (tools.includes(tool)) return sema;
  }
  return tool;
}
