// `coder-agent-engine/event`: the names of SemaCore's events and their payloads (SemaCore 2's
// `sema-core/event`), as the core and each `SemaSession` emit them.

export { MAIN_AGENT_ID, PROCESS_EVENTS } from "./session";
export type {
  PickOptionResponse as PickOptionResponseData,
  PlanExitRequest as PlanExitRequestData,
  PlanExitResponse as PlanExitResponseData,
  PlanImplement as PlanImplementData,
  ProcessEvent,
  ToolPermissionResponse,
  Usage,
} from "./session";

/** Every event a session emits, by SemaCore's name (process events included). */
export const SESSION_EVENTS = [
  "session:ready",
  "session:error",
  "session:interrupted",
  "session:cleared",
  "state:update",
  "input:received",
  "input:processing",
  "message:thinking:chunk",
  "message:text:chunk",
  "message:complete",
  "tool:permission:request",
  "tool:permission:response",
  "tool:execution:start",
  "tool:execution:chunk",
  "tool:execution:complete",
  "tool:execution:error",
  "permissionLevel:update",
  "todos:update",
  "conversation:usage",
  "compact:exec",
  "file:reference",
  "plan:exit:request",
  "plan:exit:response",
  "plan:implement",
  "task:agent:start",
  "task:agent:end",
  "task:start",
  "task:end",
  "command:result",
  "mcp:server:status",
] as const;

export type SessionEvent = (typeof SESSION_EVENTS)[number];

export type AppSessionState = "idle" | "processing";

export interface StateUpdateData {
  state: AppSessionState;
}

export interface SessionReadyData {
  pid: number;
  workingDir: string;
  sessionId: string;
  historyLoaded: boolean;
  usage: { useTokens: number; maxTokens: number; promptTokens: number };
  projectInputHistory: string[];
  todos: unknown[];
  readFileTimestamps: Record<string, number>;
}

export interface SessionErrorData {
  type: string;
  error: { code: string; message: string; details?: unknown };
}

export interface SessionInterruptedData {
  agentId: string;
  content: string;
}

export interface SessionClearedData {
  sessionId: string | null;
  agentId?: string;
}

export type InputSource = "user";

export interface InputReceivedData {
  inputId: string;
  input: string;
  originalInput?: string;
  queued: boolean;
  queueLength: number;
  source?: InputSource;
}

export interface InputProcessingData {
  inputId: string;
  input: string;
  originalInput?: string;
  attachments?: import("./session").InputImageAttachment[];
  source?: InputSource;
}

export interface TextChunkData {
  id: string;
  /** The reply's text so far (SemaCore 1.0's field). */
  content: string;
  delta: string;
}

export type ThinkingChunkData = TextChunkData;

export interface MessageCompleteData {
  id: string;
  agentId: string;
  reasoning: string;
  content: string;
  hasToolCalls: boolean;
  toolCalls?: Array<{ name: string; args?: unknown }>;
}

export interface ToolPermissionRequestData {
  agentId: string;
  toolId: string;
  toolName: string;
  title: string;
  content: string | Record<string, unknown>;
  options: Record<string, string>;
  command?: string;
  diff?: string;
}

export interface ToolExecutionStartData {
  agentId: string;
  toolId: string;
  toolName: string;
  title: string;
  args: unknown;
}

export interface ToolExecutionCompleteData {
  agentId: string;
  toolId: string;
  toolName: string;
  title: string;
  summary: string;
  content: string | Record<string, unknown>;
}

/** Live output of a running tool: `content` is the new part only. */
export type ToolExecutionChunkData = ToolExecutionCompleteData;

export interface ToolExecutionErrorData {
  agentId: string;
  toolId?: string;
  toolName: string;
  title: string;
  content: string;
}

export interface PermissionLevelUpdateData {
  level: import("./session").PermissionLevel;
}

export interface ConversationUsageData {
  usage: { useTokens: number; maxTokens: number; promptTokens: number };
}

export interface TaskStartData {
  taskId: string;
  pid?: number;
  command: string;
  filepath: string;
  status: "running" | "completed" | "failed" | "killed";
  type: "RunShell" | "SubAgent";
  agentType?: string;
}

export interface TaskEndData {
  taskId: string;
  status: "completed" | "failed" | "killed";
  summary: string;
}

export interface MCPServerStatusData {
  name: string;
  status: string;
  toolCount?: number;
  error?: string | null;
}
