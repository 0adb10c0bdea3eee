// coder's engine in-process: the SemaCore-compatible `CoderEngine` and the low-level
// `Engine`, with the protocol types generated from the Rust definitions.

export { CoderEngine, SemaCore } from "./sema";
export { SemaSession, MAIN_AGENT_ID } from "./session";
export type {
  AgentMode,
  CreateSessionOptions,
  CreateSessionResult,
  ForkOptions,
  ForkPreview,
  ForkResult as SemaForkResult,
  InputImageAttachment,
  PermissionLevel,
  PickOptionResponse,
  TaskListItem,
} from "./session";
export type {
  UnsupportedMethod,
  ModelConfig,
  ModelUpdateData,
  SemaCoreConfig,
  PlanExitRequest,
  PlanExitResponse,
  PlanImplement,
  TaskConfig,
  ToolPermissionResponse,
} from "./sema";
export { Engine, endsTask } from "./engine";
export { TASK_END_EVENTS } from "./protocol";
export type { ErrorCode } from "./errors";
export type { AskQuestion, AskQuestionRequestData, AskQuestionResponseData } from "./questions";
export type {
  ContextUpdate,
  EngineOptions,
  EventListener,
  McpServerOptions,
  ModeChangedEvent,
  ModelOptions,
  PlanExitAnswer,
  PlanExitChoice,
  SubscribeOptions,
} from "./engine";
export type * from "./protocol";
