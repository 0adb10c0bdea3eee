// `coder-agent-engine/types`: SemaCore's configuration and session types (SemaCore 2's
// `sema-core/types`), for programs that import them from there.

export type { ModelConfig, ModelUpdateData, SemaCoreConfig, TaskConfig } from "./sema";
export type {
  AgentMode,
  CreateSessionOptions,
  CreateSessionResult,
  ForkFileChange,
  ForkFileEffect,
  ForkOptions,
  ForkPreview,
  ForkResult,
  InputImageAttachment,
  PermissionLevel,
  TaskListItem,
  TaskStatus,
} from "./session";
export { MAIN_AGENT_ID } from "./session";
