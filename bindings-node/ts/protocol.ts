// Generated from the Rust types in `server/protocol` (crate `coder-protocol`) with ts-rs,
// by `server/protocol/tests/typescript.rs`. Do not edit by hand: change the Rust types,
// then regenerate with
//
//     UPDATE_PROTOCOL_TS=1 cargo test -p coder-protocol --test typescript
//
// Without `UPDATE_PROTOCOL_TS` that test fails while this file is out of date.

// ids.rs

/**
 * Addresses one conversation inside a session.
 */
export type ConversationId = string;

/**
 * Addresses one task: the run started by one input, made of one or more turns.
 */
export type TaskId = string;

/**
 * Names one session: its snapshot is `.coder/sessions/<sessionId>.json`.
 */
export type SessionId = string;

// event.rs

/**
 * The `type` of each event that ends a task: every task id ends with exactly one of them.
 */
export const TASK_END_EVENTS = [
  "task_complete",
  "turn_aborted",
  "task_dropped",
] as const;

/**
 * One engine event with its envelope.
 *
 * `seq` increases strictly within a session. A front door whose reader falls behind may
 * merge consecutive deltas ([`Event::absorb`]), which leaves gaps; no text is lost.
 */
export type Event = {
  seq: number,
  conversationId: ConversationId,
  /**
   * The task the event belongs to; `None` only for events outside any task.
   */
  taskId: TaskId | null,
} & EventMsg;

/**
 * What happened. Serialized with a snake_case `type` tag next to camelCase fields.
 */
export type EventMsg =
  | {
      "type": "task_started",
      model: string,
      /**
       * The text of the input that started it: the user's input, or the message another
       * conversation sent with `conv_create`/`conv_send` (images are left out). Absent for
       * a continuation, whose input is the result of its own handoff call.
       */
      input?: string,
    }
  | { "type": "agent_message_delta", delta: string }
  | { "type": "agent_reasoning_delta", delta: string }
  | { "type": "agent_message", message: string }
  | { "type": "agent_reasoning", text: string }
  | { "type": "tool_calls_requested", calls: Array<RequestedToolCall> }
  | {
      "type": "reply_complete",
      text: string,
      reasoning: string,
      toolCalls: Array<RequestedToolCall>,
      interrupted: boolean,
    }
  | {
      "type": "tool_call_started",
      callId: string,
      toolName: string,
      arguments: JsonValue,
      /**
       * What the call does; a client shows it by this, not by `toolName`.
       */
      kind: ToolKind,
      /**
       * The paths the call reads or changes, absolute (empty when it names none).
       */
      locations: Array<ToolLocation>,
      /**
       * What it does, in a few words, from its kind and its command or paths (`` Run
       * `cargo test` ``, `Read /abs/src/main.rs`), as `permission_requested` says it.
       */
      title: string,
    }
  | { "type": "tool_call_output_delta", callId: string, stream: OutputStream, delta: string }
  | {
      "type": "tool_call_completed",
      callId: string,
      toolName: string,
      output: string,
      /**
       * One line for people: the call's key argument and its result (`src/main.rs → 120
       * lines`), control characters neutralised, at most 120 characters.
       */
      summary: string,
      durationMs: number,
      /**
       * For tools that changed files: a unified diff of the change.
       */
      diff?: string,
    }
  | {
      "type": "tool_call_failed",
      callId: string,
      toolName: string,
      error: string,
      /**
       * One line for people: the call's key argument and the first line of the error.
       */
      summary: string,
      durationMs: number,
    }
  | {
      "type": "permission_requested",
      requestId: string,
      callId: string,
      toolName: string,
      arguments: JsonValue,
      /**
       * What the call does.
       */
      kind: ToolKind,
      /**
       * The paths the call reads or changes, absolute (empty when it names none).
       */
      locations: Array<ToolLocation>,
      /**
       * What would happen, in a few words, from the call's kind and what it touches
       * (`Run cargo test`, `Edit src/main.rs`).
       */
      title: string,
      /**
       * Why the person is asked: the rule or preset, the command's risk, the sandbox.
       */
      reason: string,
      /**
       * One line saying what would run and why the person is asked.
       */
      summary: string,
      /**
       * The choices, in the order a door shows them; the answer names one by id.
       */
      options: Array<PermissionOption>,
      /**
       * Only a person may allow this call (a dangerous command, a protected file): no
       * mode, preset or auto-approval would, so `allow_always` is not offered. A client
       * without a person to ask should deny it and say so.
       */
      humanRequired: boolean,
      /**
       * For `bash`: the whole command that would run, every line of it.
       */
      command?: string,
      /**
       * For tools that change files (`write`, `edit`, `apply_patch`): the change as a
       * unified diff, computed without writing anything. The call then writes exactly
       * this change, or fails if the files changed meanwhile.
       */
      diff?: string,
      /**
       * For a call that leaves plan mode (`kind: switch_mode`): the plan, whole, in
       * markdown.
       */
      plan?: string,
      /**
       * For tools that change files: each file the change touches, its text now and
       * after (files up to 1 MiB; a larger one is in `diff` only).
       */
      changes?: Array<FileDiff>,
      /**
       * For a question the model asks (`ask_user`): the question and its choices, which
       * are the options.
       */
      question?: Question,
    }
  | { "type": "permission_withdrawn", requestId: string, reason: string }
  | {
      "type": "token_count",
      last: TokenUsage,
      total: TokenUsage,
      /**
       * The size of the conversation's context now, in tokens: what the last request
       * sent plus the reply it got (what the next request starts from). Compare it with
       * `contextWindow`; `total` counts every request and only grows.
       */
      contextTokens: number,
      /**
       * The model's context window: configured (`contextWindow`), else the model's own
       * from coder's table of known models, else a guess (32,768, with a `warning`).
       */
      contextWindow: number | null,
    }
  | {
      "type": "compacted",
      /**
       * What started it: the context passed `compactThreshold` of the window before a
       * model call, or a person asked (`conversation/compact`).
       */
      trigger: CompactTrigger,
      /**
       * The context's size before, in tokens.
       */
      tokenBefore: number,
      /**
       * The context's size after: the summary and the turns kept.
       */
      tokenCompact: number,
      /**
       * `tokenCompact / tokenBefore`, between 0 and 1: the share of the context left.
       */
      compactRate: number,
      /**
       * The summary that now opens the history.
       */
      summary: string,
      /**
       * How many messages were replaced (and archived).
       */
      archivedMessages: number,
      /**
       * The archived segment's index in `conversation/archive`.
       */
      segment: number,
    }
  | {
      "type": "context_cleared",
      /**
       * How many messages left the context.
       */
      clearedMessages: number,
    }
  | {
      "type": "verification",
      status: VerificationStatus,
      /**
       * The allowlisted command, when one was chosen.
       */
      command?: string,
      /**
       * Which run of this task's verification it was, from 1; 0 when none ran.
       */
      attempt: number,
      /**
       * How many times a failed verification may send the model back to fix it
       * (`maxVerifyAttempts`).
       */
      maxRetries: number,
      /**
       * The command's exit code, when it ran to an exit.
       */
      exitCode?: number,
      message: string,
    }
  | {
      "type": "task_complete",
      lastAgentMessage: string | null,
      /**
       * Set when the task stopped because it reached the step limit (`maxSteps`) with
       * work left: the limit, in model calls. Absent when the model finished.
       */
      stepLimit?: number,
      /**
       * Set when the task ended because of an `error`: that error's kind.
       */
      error?: ErrorKind,
    }
  | {
      "type": "turn_aborted",
      reason: AbortReason,
      /**
       * With `replaced`: the task that carries this conversation's work on once the
       * conversation it handed over to has answered (seed 000's T_cont). A client waiting
       * for the outcome of its input follows it: that task ends the work, or hands over
       * again.
       */
      continuation?: TaskId,
      /**
       * With `replaced`: the interrupting tool call that took the task's place and the
       * conversation that runs now, so a front end can say so (seed 000: "the current task
       * was replaced by conv_create; running the target conversation, then continuing").
       */
      replacedBy?: Replacement,
    }
  | { "type": "task_dropped", reason: DropReason }
  | { "type": "input_receipt", inputId: TaskId, receipt: Receipt, step?: number, reason?: string }
  | { "type": "state_changed", state: EngineState }
  | { "type": "todo_updated", todos: Array<TodoItem> }
  | { "type": "file_reference", references: Array<FileReference> }
  | { "type": "mode_changed", mode: Mode, previous: Mode, reason: ModeChangeReason }
  | { "type": "warning", message: string }
  | {
      "type": "retrying",
      message: string,
      reason: string,
      attempt: number,
      maxRetries: number,
      delayMs: number,
    }
  | { "type": "workspace_reloaded", what: ReloadedKind, paths: Array<string> }
  | {
      "type": "mcp_server_status",
      server: string,
      state: McpServerState,
      tools?: number,
      error?: string,
    }
  | { "type": "error", message: string, kind: ErrorKind };

/**
 * One tool call of a reply, as the model wrote it.
 */
export type RequestedToolCall = {
  callId: string,
  toolName: string,
  /**
   * The arguments as JSON; arguments that are not valid JSON come as a string.
   */
  arguments: JsonValue,
};

/**
 * The handoff that replaced a task (`turn_aborted` with `replaced`).
 */
export type Replacement = {
  /**
   * The interrupting tool the model called (`conv_create`, `conv_send`).
   */
  toolName: string,
  /**
   * The conversation that runs now; the replaced task's work goes on after its reply.
   */
  conversationId: ConversationId,
};

/**
 * Why a task ended early.
 */
export type AbortReason = "replaced" | "interrupted";

/**
 * What started a compaction.
 */
export type CompactTrigger = "auto" | "manual";

/**
 * How an automatic verification went.
 */
export type VerificationStatus = "passed" | "retrying" | "failed" | "environment" | "not_run";

/**
 * Why a queued task was dropped before it ran.
 */
export type DropReason = "interrupted" | "conversation_destroyed" | "session_ended" | "withdrawn";

/**
 * Which of the files a session keeps was read again ([`EventMsg::WorkspaceReloaded`]).
 */
export type ReloadedKind = "rules" | "skills" | "commands" | "config" | "mcp";

/**
 * Why a conversation's mode changed.
 */
export type ModeChangeReason = "exit_plan_mode" | "set_mode" | "caller_mode";

/**
 * Where an MCP server is ([`EventMsg::McpServerStatus`]).
 */
export type McpServerState = "ready" | "failed" | "disabled" | "stopped";

/**
 * What the session is doing.
 */
export type EngineState = "idle" | "running" | "waiting_for_permission";

/**
 * Which of a running tool's outputs a delta comes from.
 */
export type OutputStream = "stdout" | "stderr" | "progress";

/**
 * What became of an input ([`EventMsg::InputReceipt`]).
 */
export type Receipt = "queued" | "steered" | "started" | "dropped";

// error.rs

/**
 * What went wrong, in terms a client can act on. A kind's code never changes once
 * published; new kinds may be added, so clients keep a default branch.
 */
export type ErrorKind =
  | "invalid_params"
  | "not_found"
  | "busy"
  | "no_provider"
  | "limit_exceeded"
  | "cancelled"
  | "io"
  | "provider"
  | "context_length_exceeded"
  | "internal";

// usage.rs

/**
 * Tokens spent by one model response, or a running total of several.
 */
export type TokenUsage = {
  inputTokens: number,
  /**
   * Part of `input_tokens` served from the provider's prompt cache.
   */
  cachedInputTokens: number,
  outputTokens: number,
  /**
   * Part of `output_tokens` spent on reasoning, when the provider says so.
   */
  reasoningOutputTokens: number,
  totalTokens: number,
  /**
   * The provider reported no usage, so these figures are the engine's own estimate.
   */
  estimated: boolean,
};

// todo.rs

export type TodoItem = { content: string, status: TodoStatus };

export type TodoStatus = "pending" | "in_progress" | "completed";

// tool_kind.rs

/**
 * What a tool call does.
 */
export type ToolKind =
  | "read"
  | "edit"
  | "delete"
  | "move"
  | "search"
  | "execute"
  | "think"
  | "fetch"
  | "switch_mode"
  | "other";

/**
 * A place in the workspace (or beyond it) a tool call reads or changes.
 */
export type ToolLocation = {
  /**
   * An absolute path.
   */
  path: string,
  /**
   * The first line concerned (1-based), when the call names one.
   */
  line?: number,
};

/**
 * One file a change would make, whole: what it holds now and what it would hold (the
 * Agent Client Protocol's diff content). Beside the unified diff, for editors that show a
 * change side by side.
 */
export type FileDiff = {
  /**
   * An absolute path.
   */
  path: string,
  /**
   * What it holds now; absent for a file the change creates.
   */
  oldText?: string,
  /**
   * What it would hold; absent for a file the change deletes.
   */
  newText?: string,
};

/**
 * A question the model puts to the person (`ask_user`), carried by the permission request
 * that asks it: the request's options are the question's choices in their order, then one
 * for an answer in the person's own words, then one for not answering. A door that knows
 * nothing of questions shows the options as for any request, and the answer works.
 */
export type Question = {
  /**
   * The question, whole.
   */
  question: string,
  /**
   * A short label for it (at most 12 characters): `Auth method`.
   */
  header: string,
  /**
   * Whether several choices may be picked. A door that offers that answers with the
   * option for the person's own words, the picked labels joined by `, ` as its message.
   */
  multiSelect: boolean,
  /**
   * What each choice means, in the order of the request's options.
   */
  choices: Array<QuestionChoice>,
};

/**
 * One answer the model offers to a [`Question`].
 */
export type QuestionChoice = {
  /**
   * What the person picks (1 to 5 words).
   */
  label: string,
  /**
   * What picking it means.
   */
  description: string,
};

// reference.rs

/**
 * One `@` reference of an input and what became of it.
 */
export type FileReference = {
  /**
   * The path as the user wrote it (without `@`, quotes or `#L` range).
   */
  path: string,
  kind: FileReferenceKind,
  /**
   * The lines attached (1-based, inclusive), for a text file.
   */
  lines?: LineRange,
  /**
   * Part of the file or listing was left out (too long).
   */
  truncated: boolean,
  /**
   * With `refused`: why nothing was attached (what the model was told too).
   */
  error?: string,
  /**
   * What the model was given for it, as text: the file's lines or the directory's
   * listing with the words around them (absent for an image).
   */
  content?: string,
};

/**
 * What an `@` reference attached.
 */
export type FileReferenceKind = "file" | "directory" | "image" | "refused";

/**
 * Lines `start..=end`, 1-based.
 */
export type LineRange = { start: number, end: number };

// message.rs

/**
 * Who wrote a message.
 */
export type Role = "system" | "user" | "assistant" | "tool";

/**
 * One message in OpenAI Chat Completions form.
 */
export type ChatMessage = {
  role: Role,
  /**
   * Text content; `None` for an assistant message made only of tool calls.
   */
  content: string | null,
  /**
   * The model's thinking, kept for display and snapshots; never sent back to providers.
   */
  reasoning?: string,
  tool_calls?: Array<ToolCall>,
  tool_call_id?: string,
  /**
   * The tool name, on `tool` messages.
   */
  name?: string,
  /**
   * Images that came with a message: a person's (pasted, attached by an `@` reference,
   * given as input items) or a tool's (a `read` of an image file, an MCP tool's image).
   * Providers receive them in their own form: Anthropic inside the user message or the
   * tool result, OpenAI as content parts of the user message, a tool's in a user message
   * after the tool results.
   */
  attachments?: Array<Attachment>,
};

/**
 * An image carried by a message: its bytes, or a URL the provider fetches.
 */
export type Attachment =
  | {
      /**
       * For example `image/png`.
       */
      mediaType: string,
      /**
       * The bytes, base64 (standard alphabet, padded).
       */
      data: string,
    }
  | { url: string };

/**
 * A tool call made by the assistant.
 */
export type ToolCall = { id: string, type: string, function: FunctionCall };

/**
 * The function a tool call names, with its arguments as a JSON string.
 */
export type FunctionCall = { name: string, arguments: string };

// conversation.rs

/**
 * One piece of user input.
 */
export type InputItem = { "type": "text", text: string } | { "type": "image", image_url: string };

/**
 * Which built-in tools a conversation asks for (seed 000's `internal_tools`, seed 003's
 * `ToolsPrefs`). A flag left out is inherited: from the calling conversation when a model
 * opens one (`conv_create`), else from the session's defaults (`include_plan_tool` and
 * `include_apply_patch_tool` on, the shell the session gives).
 */
export type ToolsPrefs = {
  /**
   * Offer the plan tool (`todo_write`).
   */
  include_plan_tool?: boolean,
  /**
   * Offer `apply_patch`.
   */
  include_apply_patch_tool?: boolean,
  /**
   * Offer web search. coder has no web search tool: `true` is refused with an error.
   */
  web_search_request?: boolean,
  /**
   * Use a streamable (interactive) shell. coder's one shell is `bash`, which takes no
   * input: `true` is refused with an error.
   */
  use_streamable_shell_tool?: boolean,
  /**
   * How the conversation's commands may run. It may only narrow what the session's
   * sandbox and policies give (a looser one is narrowed, with a `warning`).
   */
  shell_mode?: ShellMode,
};

/**
 * How a conversation's commands run (seed 003's `shell_mode`), from the narrowest.
 */
export type ShellMode = "off" | "sandboxed" | "unconfined";

/**
 * A conversation in a listing.
 */
export type ConversationSummary = {
  id: ConversationId,
  messageCount: number,
  /**
   * RFC 3339.
   */
  lastActiveAt: string,
  isRoot: boolean,
};

/**
 * A message of a conversation's history, without tool calls and outputs.
 */
export type HistoryEntry = {
  /**
   * `user` or `assistant`: messages only (seed 000). Context the engine added after a
   * user's input (`@` references' attachments, the first input's todo reminder, in
   * `<system-reminder>` tags, which the model reads and nobody said) is not an entry.
   */
  role: string,
  text?: string,
  /**
   * The entry's images; an empty array when it has none (seed 000 gives every entry
   * `attachments`).
   */
  attachments: Array<HistoryAttachment>,
};

export type HistoryAttachment = {
  /**
   * Always `image`.
   */
  type: string,
  image_url: string,
};

/**
 * Messages a compaction replaced by its summary, kept so nothing is lost: the
 * conversation's archive (`conversation/archive`) holds one segment per compaction, oldest
 * first, and the session snapshot keeps them.
 */
export type ArchivedSegment = {
  /**
   * Its place in the archive, from 0.
   */
  index: number,
  /**
   * When it was archived (RFC 3339).
   */
  archivedAt: string,
  trigger: CompactTrigger,
  /**
   * The summary that replaced it.
   */
  summary: string,
  /**
   * The replaced messages, in OpenAI Chat Completions form.
   */
  messages: Array<ChatMessage>,
};

// replay.rs

/**
 * `session/subscribe` params: the first `seq` the client wants (one more than the highest
 * it holds; 0 for everything the engine still has).
 */
export type SubscribeParams = { fromSeq: number };

/**
 * `session/subscribe` result: `{ events }`, every event from `fromSeq` on, in `seq` order,
 * up to the moment of the answer, never merged; or `{ snapshot }` when `fromSeq` is older
 * than the oldest event the engine keeps. Live `conversation/event` notifications go on
 * meanwhile; a client keeps the highest `seq` it has applied and ignores events at or
 * below it.
 */
export type SubscribeResult = { "events": Array<Event> } | { "snapshot": SessionSnapshot };

/**
 * Where a session is, for a client whose missed events are no longer kept: live events
 * follow from `nextSeq`.
 */
export type SessionSnapshot = {
  /**
   * The `seq` of the first event after the snapshot.
   */
  nextSeq: number,
  sessionId: SessionId,
  /**
   * What the engine is doing, as its last `state_changed` said.
   */
  state: EngineState,
  /**
   * The session's mode: no conversation's is looser.
   */
  mode: Mode,
  /**
   * The session's conversations, oldest first.
   */
  conversations: Array<ConversationState>,
  /**
   * The `permission_requested` events still waiting for an answer, as they were sent.
   */
  permissionRequests: Array<Event>,
  /**
   * The `tool_call_started` events of the calls still running, as they were sent.
   */
  runningTools: Array<Event>,
};

/**
 * One conversation in a [`SessionSnapshot`].
 */
export type ConversationState = {
  id: ConversationId,
  isRoot: boolean,
  mode: Mode,
  /**
   * How many messages its history holds.
   */
  messageCount: number,
  /**
   * Its last messages (at most 20), oldest first, in the history's form (OpenAI Chat
   * Completions).
   */
  messages: Array<ChatMessage>,
};

// permission.rs

/**
 * How much the agent may do on its own (seed 004 section 2).
 */
export type Mode = "plan" | "default" | "auto-edit" | "yolo";

/**
 * A named permission matrix.
 */
export type Preset = "strict" | "balanced" | "auto-edit" | "yolo";

/**
 * What the policy says about a call.
 */
export type PolicyDecision = "allow" | "ask" | "deny";

/**
 * A person's answer to a permission request.
 */
export type PermissionDecision =
  | { "decision": "allow_once" }
  | { "decision": "allow_always" }
  | { "decision": "deny", message?: string }
  | { "decision": "reject_always", message?: string }
  | { "decision": "refuse" }
  | { "decision": "start_editing" }
  | { "decision": "clear_context_and_start" }
  | { "decision": "keep_planning", message?: string }
  | { "decision": "option", optionId: string, message?: string };

/**
 * What choosing an option does, in the Agent Client Protocol's terms.
 */
export type PermissionOptionKind = "allow_once" | "allow_always" | "reject_once" | "reject_always";

/**
 * One choice a permission request offers. Doors show the options a request carries, in
 * order, and nothing else; the answer names one by `optionId`.
 */
export type PermissionOption = {
  /**
   * Stable across versions: `allow_once`, `allow_always`, `deny`, `refuse`; for a plan,
   * `start_editing`, `clear_context_and_start`, `keep_planning`, `refuse`.
   */
  optionId: string,
  kind: PermissionOptionKind,
  /**
   * What a person reads, whole ("Yes, and allow `cargo test` for the rest of this
   * session").
   */
  label: string,
  /**
   * The key a terminal reads for it (`y`, `a`, `n`, `s`, `c`), unique in the request.
   */
  key: string,
  /**
   * Whether a message to the model may come with it (why not, what to change).
   */
  takesMessage: boolean,
  /**
   * For `allow_always`: exactly what it allows from now on, and for how long.
   */
  covers?: string,
};

/**
 * A rule a person recorded with "always" (`allow_always`, `reject_always`): it lasts,
 * for one project, in the person's own state (never in the workspace), and applies in every
 * door.
 */
export type PermissionRule = {
  /**
   * What `permissions/remove` names.
   */
  id: string,
  /**
   * The tool it covers.
   */
  tool: string,
  /**
   * For `bash`: the one command shape it covers (`cargo test`, `rm a.txt`), never a
   * prefix of a compound line: every simple command of a line must be covered.
   */
  command?: string,
  /**
   * For a tool on files: the folder it covers, relative to the project (`src/parser`;
   * empty for every file of the project). The tool's calls whose every path is under it.
   */
  folder?: string,
  /**
   * `allow` or `deny`.
   */
  decision: PolicyDecision,
  /**
   * The project (its folder) the rule holds in.
   */
  project: string,
  /**
   * In words, as the option that recorded it said.
   */
  covers: string,
};

// methods.rs

/**
 * The coder protocol version advertised in `initialize`.
 */
export const PROTOCOL_VERSION = "0.1";

/**
 * Opens a conversation (the root, when it is the session's first and nothing was
 * sent yet); returns its id.
 */
export const CONVERSATION_CREATE = "conversation/create";

/**
 * Queues input for a conversation; returns the task's id at once, progress comes
 * as `conversation/event` notifications.
 */
export const CONVERSATION_SEND = "conversation/send";

/**
 * Steers input into the conversation's running task: its model reads it at the
 * next checkpoint (after the current tool calls) without the task ending
 * (`input_receipt` `steered`); queued as `conversation/send` would be when no task
 * runs there or the task ends first. Answers the input's id at once.
 */
export const CONVERSATION_STEER = "conversation/steer";

/**
 * Withdraws input no model has read yet (queued, or waiting to be steered): its
 * `input_receipt` says `dropped`.
 */
export const CONVERSATION_WITHDRAW = "conversation/withdraw";

/**
 * The session's conversations.
 */
export const CONVERSATION_LIST = "conversation/list";

/**
 * A conversation's history, as people read it.
 */
export const CONVERSATION_HISTORY = "conversation/history";

/**
 * Removes a conversation (not the root).
 */
export const CONVERSATION_DESTROY = "conversation/destroy";

/**
 * Stops the conversation's running task (`turn_aborted`).
 */
export const CONVERSATION_INTERRUPT = "conversation/interrupt";

/**
 * Switches a conversation's mode (`mode_changed` follows when it changed); the
 * next model call has that mode's tools and system prompt.
 */
export const CONVERSATION_SET_MODE = "conversation/setMode";

/**
 * Changes a conversation's context (seed 003's `SetConversationContext`): its base
 * and user instructions, MCP allowlist and tool preferences, or builds its MCP
 * view again. The history keeps its order; a running task keeps the context it
 * started with, and the conversation's next task has the new one.
 */
export const CONVERSATION_SET_CONTEXT = "conversation/setContext";

/**
 * Compacts a conversation's history now: queues a task that summarises its older
 * part (`compacted`, then `token_count`); returns the task's id.
 */
export const CONVERSATION_COMPACT = "conversation/compact";

/**
 * The messages compactions replaced, one segment per compaction, oldest first.
 */
export const CONVERSATION_ARCHIVE = "conversation/archive";

/**
 * Runs a slash command in a conversation (`/help`, `/model`, `/mode`, `/compact`,
 * ..., or a custom command): its text for people, and the task it started, if any.
 * An unknown command is an error and never reaches the model.
 */
export const CONVERSATION_COMMAND = "conversation/command";

/**
 * Stops the session's running task, whatever conversation it is on, and drops the
 * continuations its handoffs queued (their calls get a result saying so).
 */
export const SESSION_INTERRUPT = "session/interrupt";

/**
 * The sessions saved in the workspace (`.coder/sessions/`), newest first.
 */
export const SESSION_LIST = "session/list";

/**
 * Takes up a saved session: its conversations, histories, todos and modes replace
 * this session's, which stays on disk and can be taken up later. Only while no
 * task runs or waits (else `data.kind` `busy`); an unknown id is `-32602` with
 * `data.kind` `not_found`.
 */
export const SESSION_RESUME = "session/resume";

/**
 * The points of a conversation, oldest first: each input a person sent that its
 * history still holds (a compaction or a clear takes the earlier ones away), named
 * by its place among the conversation's inputs, with its first line.
 */
export const CONVERSATION_POINTS = "conversation/points";

/**
 * Takes a conversation back to before one of its points: the files the engine's
 * turns changed since are put back (those changed since by anything else are kept
 * and named) and the history is cut before that input; with `dryRun`, only says
 * what it would do. Only while no task runs or waits (else `data.kind` `busy`).
 */
export const CONVERSATION_REWIND = "conversation/rewind";

/**
 * Starts a new session from a point: a new saved session (its own id and file)
 * holds this one's conversations, that one cut before the point, and the
 * connection goes on in it as after `session/resume`. The session it came from
 * stays on disk as it was, byte for byte; no file of the workspace is touched.
 */
export const SESSION_FORK = "session/fork";

/**
 * Picks the event stream up again from a `seq`: the events since, from the
 * engine's bounded buffer, or a snapshot of the session when they are no longer
 * kept. Live `conversation/event` notifications go on; a `fromSeq` past the next
 * event is `-32602`.
 */
export const SESSION_SUBSCRIBE = "session/subscribe";

/**
 * The rules files the system prompt holds now (user level, `.coder/rules/`, then
 * `AGENTS.md`/`CLAUDE.md` from the workspace root down to the start directory).
 */
export const RULE_LIST = "rule/list";

/**
 * The permission rules a person recorded with "always" for this project (in their
 * own state; every door applies them).
 */
export const PERMISSIONS_LIST = "permissions/list";

/**
 * Removes one recorded permission rule by id.
 */
export const PERMISSIONS_REMOVE = "permissions/remove";

/**
 * The slash commands a person can type: the built-in ones, then the custom ones
 * (`.coder/commands/<name>.md`), for completion.
 */
export const COMMAND_LIST = "command/list";

/**
 * The skills (`.coder/skills/<dir>/SKILL.md`) the model is told about.
 */
export const SKILL_LIST = "skill/list";

/**
 * Workspace paths matching what a person typed after `@`, best first, for a
 * completion menu.
 */
export const WORKSPACE_COMPLETE_PATHS = "workspace/completePaths";

/**
 * Asks a person to approve a tool call.
 */
export const PERMISSION_REQUEST = "permission/request";

/**
 * Carries one engine event, in `seq` order.
 */
export const CONVERSATION_EVENT = "conversation/event";

/**
 * Every client-to-server method, as advertised in `initialize`.
 */
export const METHODS = [
  CONVERSATION_CREATE,
  CONVERSATION_SEND,
  CONVERSATION_STEER,
  CONVERSATION_WITHDRAW,
  CONVERSATION_LIST,
  CONVERSATION_HISTORY,
  CONVERSATION_DESTROY,
  CONVERSATION_INTERRUPT,
  CONVERSATION_SET_MODE,
  CONVERSATION_SET_CONTEXT,
  CONVERSATION_COMPACT,
  CONVERSATION_ARCHIVE,
  CONVERSATION_COMMAND,
  SESSION_INTERRUPT,
  SESSION_LIST,
  SESSION_RESUME,
  CONVERSATION_POINTS,
  CONVERSATION_REWIND,
  SESSION_FORK,
  SESSION_SUBSCRIBE,
  RULE_LIST,
  PERMISSIONS_LIST,
  PERMISSIONS_REMOVE,
  COMMAND_LIST,
  SKILL_LIST,
  WORKSPACE_COMPLETE_PATHS,
] as const;

/**
 * `initialize`'s `initializationOptions`, all optional. The model settings use the config
 * file's names and apply over files and environment (an editor passes what its own
 * settings hold).
 */
export type InitializationOptions = {
  /**
   * Resume this saved session (`.coder/sessions/<sessionId>.json` in the workspace):
   * its conversations and histories come back. An unknown or unreadable session fails
   * `initialize` with `-32602`.
   */
  sessionId?: SessionId,
  /**
   * The provider by name: `openai`, `anthropic`, or the name of another service at
   * `baseUrl` (see [`ProviderName`]).
   */
  provider?: ProviderName,
  /**
   * The model name.
   */
  model?: string,
  /**
   * `http://` or `https://`; for OpenAI up to and including `/v1`.
   */
  baseUrl?: string,
  /**
   * Sent only to `baseUrl` given here or, without one, to the provider's default
   * endpoint; never to a base URL from a workspace file.
   */
  apiKey?: string,
  /**
   * The editor's workspace trust: `true` applies the workspace's own
   * `.coder/config.json` and `.mcp.json` whole for this session; `false` lets them only
   * narrow, even when the user-level config lists the folder; absent, the user-level
   * config's `trustedFolders` decides.
   */
  trustWorkspace?: boolean,
};

/**
 * A model provider by name. `openai` (OpenAI Chat Completions) and `anthropic` (Anthropic
 * Messages) are known, with default endpoints; any other name (`deepseek`, `openrouter`,
 * `qwen`, `moonshot`, `ollama`, ...) is a service at the base URL given with it, spoken to
 * as OpenAI Chat Completions, or as Anthropic Messages when the base URL's path ends in
 * `/anthropic` (`https://api.deepseek.com/anthropic`).
 */
export type ProviderName = "openai" | "anthropic" | (string & {  });

/**
 * What `initialize` advertises under `capabilities.experimental.coder`.
 */
export type CoderCapabilities = {
  protocolVersion: string,
  methods: Array<string>,
  /**
   * This connection's session; its snapshot is `.coder/sessions/<sessionId>.json`.
   */
  sessionId: SessionId,
  /**
   * How many messages a resumed session brought back (0 for a new session).
   */
  historyLoaded: number,
};

/**
 * `conversation/create` params; every field is optional.
 */
export type CreateParams = {
  /**
   * Replaces the built-in system prompt.
   */
  baseInstructions?: string,
  /**
   * Like `baseInstructions`, read from a file relative to the workspace.
   */
  baseInstructionsFile?: string,
  /**
   * Becomes the first user message of the conversation.
   */
  userInstructions?: string,
  /**
   * MCP tools (`server__tool`) the conversation may see; absent sees all.
   */
  mcpAllowlist?: Array<string>,
  toolsPrefs?: ToolsPrefs,
  /**
   * Clamped to the session's mode when looser.
   */
  mode?: Mode,
  /**
   * The model for this conversation's requests; absent uses the session's.
   */
  model?: string,
};

export type CreateResult = { conversationId: ConversationId };

/**
 * `conversation/send` params: `text`, `items`, or both (text first).
 */
export type SendParams = { conversationId: ConversationId, text?: string, items?: Array<InputItem> };

export type SendResult = {
  /**
   * The task the input started. Absent only when the input was a built-in command that
   * answered at once (`/help`, `/mode plan`): its answer is `text`.
   */
  taskId?: TaskId,
  /**
   * What a built-in command said, for people; absent for input the model reads.
   */
  text?: string,
  /**
   * The conversation to go on in, when a built-in command made one (`/new`).
   */
  conversationId?: ConversationId,
};

/**
 * `conversation/compact` result.
 */
export type CompactResult = { taskId: TaskId };

/**
 * Params naming one conversation (`conversation/destroy`, `conversation/interrupt`).
 */
export type TargetParams = { conversationId: ConversationId };

/**
 * `conversation/list` params: an empty object.
 */
export type ListParams = Record<symbol, never>;

export type ListResult = { conversations: Array<ConversationSummary> };

export type HistoryParams = {
  conversationId: ConversationId,
  /**
   * The last `limit` entries; absent returns all.
   */
  limit?: number,
};

export type HistoryResult = { entries: Array<HistoryEntry> };

/**
 * `conversation/archive` result.
 */
export type ArchiveResult = { segments: Array<ArchivedSegment> };

/**
 * `conversation/command` params.
 */
export type CommandParams = {
  conversationId: ConversationId,
  /**
   * The command as typed, `/name` and its arguments.
   */
  command: string,
};

/**
 * `conversation/command` result.
 */
export type CommandResult = {
  /**
   * What the command says, for people (may be several lines).
   */
  text: string,
  /**
   * The task it started (`/compact`, a custom command): follow it by its events.
   */
  taskId?: TaskId,
  /**
   * The conversation to go on in, when the command made one (`/new`).
   */
  conversationId?: ConversationId,
  /**
   * `text` is a unified diff (`/diff full`): a door may colour its lines as a diff.
   */
  diff?: boolean,
};

/**
 * `session/list` params: an empty object.
 */
export type SessionListParams = Record<symbol, never>;

/**
 * `session/list` result.
 */
export type SessionListResult = { sessions: Array<SessionInfo> };

/**
 * A saved session, as a picker shows it.
 */
export type SessionInfo = {
  sessionId: SessionId,
  /**
   * When it was last saved (RFC 3339).
   */
  savedAt: string,
  /**
   * The model of its root conversation.
   */
  model: string,
  conversations: number,
  /**
   * Messages in all its conversations.
   */
  messages: number,
  /**
   * The first thing a person asked in its root conversation, cut to 100 characters.
   */
  title?: string,
};

/**
 * `session/resume` params.
 */
export type SessionResumeParams = { sessionId: SessionId };

/**
 * `session/resume` result: how many messages came back.
 */
export type SessionResumeResult = { sessionId: SessionId, messages: number };

/**
 * `conversation/points` result: the conversation's points, oldest first.
 */
export type PointsResult = { points: Array<RewindPoint> };

/**
 * A point of a conversation: an input a person sent, which a rewind or a fork goes back
 * to. Points the history no longer holds (a compaction summarised them, a clear removed
 * them) are gone and not listed.
 */
export type RewindPoint = {
  /**
   * Its place among the conversation's inputs, from 0: the same after a resume or a
   * compaction (the inputs a compaction summarised still count); after a rewind or a
   * fork, the next input takes the place of the first one cut.
   */
  point: number,
  /**
   * The first line of its text, cut to 100 characters (empty for images alone).
   */
  text: string,
  /**
   * The messages of the history from it on: what a rewind to it removes.
   */
  messages: number,
};

/**
 * `conversation/rewind` params.
 */
export type RewindParams = {
  conversationId: ConversationId,
  /**
   * The point to go back to (see `conversation/points`).
   */
  point: number,
  /**
   * Only say what the rewind would do; nothing changes.
   */
  dryRun?: boolean,
  /**
   * `false`: the history alone goes back and every file stays as it is (the records of
   * the turns cut away are dropped). Default true.
   */
  files?: boolean,
};

/**
 * `conversation/rewind` result: what was done (or, for a dry run, what would be).
 */
export type RewindResult = {
  dryRun: boolean,
  /**
   * The messages cut from the history: the point's input and everything after it. The
   * model's next request carries the history as it is left.
   */
  messagesRemoved: number,
  /**
   * Files put back to what they held before the point.
   */
  restored: Array<string>,
  /**
   * Files created since the point, removed; folders made since and left empty end in
   * `/` (a dry run names files only).
   */
  removed: Array<string>,
  /**
   * Files left as they are, each with why.
   */
  kept: Array<KeptFile>,
  /**
   * Whether the session recorded file changes (false outside a git repository): when
   * not, only the conversation went back.
   */
  filesRecorded: boolean,
  /**
   * For each file of `restored` and `removed`, the lines putting it back adds and
   * removes (a removed file's lines are all removed).
   */
  lineChanges?: Array<LineChange>,
  /**
   * What happened, for people.
   */
  text: string,
};

/**
 * A file a rewind leaves as it is.
 */
export type KeptFile = {
  path: string,
  reason: KeptReason,
  /**
   * The reason in words, for people.
   */
  detail: string,
};

/**
 * How many lines a rewind adds to a file and removes from it.
 */
export type LineChange = { path: string, added: number, removed: number };

/**
 * Why a rewind keeps a file.
 */
export type KeptReason = "changed_since" | "other_conversation" | "not_recorded" | "failed";

/**
 * `session/fork` params.
 */
export type ForkParams = {
  conversationId: ConversationId,
  /**
   * The point the fork starts from (see `conversation/points`): the fork's copy of the
   * conversation is cut before it.
   */
  point: number,
};

/**
 * `session/fork` result: the new session, which the connection goes on in.
 */
export type ForkResult = {
  sessionId: SessionId,
  /**
   * The session it was forked from, left as it was.
   */
  forkedFrom: SessionId,
  /**
   * The messages the fork holds, in all its conversations.
   */
  messages: number,
  /**
   * What happened, for people.
   */
  text: string,
};

/**
 * `conversation/destroy` result: `ok: false` with a reason for the root conversation or
 * an unknown id.
 */
export type DestroyResult = { ok: boolean, reason?: string };

/**
 * `conversation/interrupt` and `session/interrupt` result: an empty object.
 */
export type InterruptResult = Record<symbol, never>;

/**
 * `session/interrupt` params: an empty object.
 */
export type SessionInterruptParams = Record<symbol, never>;

/**
 * `conversation/setMode` params.
 */
export type SetModeParams = { conversationId: ConversationId, mode: Mode };

/**
 * `conversation/setMode` result: an empty object.
 */
export type SetModeResult = Record<symbol, never>;

/**
 * `conversation/setContext` params: what to change of a conversation's context; every
 * field but `conversationId` may be left out, and what is left out is kept.
 */
export type SetContextParams = {
  conversationId: ConversationId,
  /**
   * Replace the built-in system prompt; `null` goes back to it.
   */
  baseInstructions?: string | null,
  /**
   * Like `baseInstructions`, read from a file inside the workspace.
   */
  baseInstructionsFile?: string,
  /**
   * New user instructions: a user message at the start of the conversation's next
   * task, after what its history holds.
   */
  userInstructions?: string,
  /**
   * MCP tools (`server__tool`) the conversation may see, checked as at creation;
   * `null` sees all.
   */
  mcpAllowlist?: string[] | null,
  /**
   * The tools offered besides the MCP ones: a key left out keeps the conversation's
   * current choice; `shell_mode` narrows to the session's shell (with a `warning`), and
   * a tool the session disabled stays hidden (with a `warning`).
   */
  toolsPrefs?: ToolsPrefs,
  /**
   * Build the conversation's MCP view again from the servers' tools as they are now.
   */
  refreshMcpView?: boolean,
};

/**
 * `conversation/setContext` result: an empty object.
 */
export type SetContextResult = Record<symbol, never>;

/**
 * `rule/list` params: an empty object.
 */
export type RuleListParams = Record<symbol, never>;

/**
 * `rule/list` result: the rules files in the order the prompt tells them (nearest last).
 */
export type RuleListResult = { rules: Array<RuleInfo> };

/**
 * One rules file of the system prompt.
 */
export type RuleInfo = {
  /**
   * Where it was read.
   */
  path: string,
  /**
   * Its size on disk in bytes.
   */
  size: number,
  /**
   * Whether it was cut at the size limit (the prompt holds its beginning).
   */
  truncated: boolean,
};

/**
 * `permissions/list` params: an empty object.
 */
export type PermissionsListParams = Record<symbol, never>;

/**
 * `permissions/list` result: this project's recorded rules, oldest first.
 */
export type PermissionsListResult = { rules: Array<PermissionRule> };

/**
 * `permissions/remove` params.
 */
export type PermissionsRemoveParams = { id: string };

/**
 * `permissions/remove` result: whether a rule of that id was removed.
 */
export type PermissionsRemoveResult = { removed: boolean };

/**
 * `conversation/steer` result.
 */
export type SteerResult = {
  /**
   * The input's id: `input_receipt` events name it, and `conversation/withdraw` takes it.
   */
  inputId: TaskId,
  /**
   * A task of the conversation was running: the input goes to it at its next checkpoint
   * (or is queued if it ends first). `false`: the input was queued as a task of its own.
   */
  steering: boolean,
};

/**
 * `conversation/withdraw` params.
 */
export type WithdrawParams = { inputId: TaskId };

/**
 * `conversation/withdraw` result: whether input of that id was waiting and is withdrawn.
 */
export type WithdrawResult = { withdrawn: boolean };

/**
 * `conversation/event` params: one engine event, unchanged.
 */
export type EventParams = { event: Event };

/**
 * `permission/request` params, server to client. The answer is a [`PermissionDecision`]:
 * `{ decision: "allow_once" | "allow_always" | "deny", message? }`, or `{ decision:
 * "refuse" }` (deny and end the task). An answer that is an error, or anything else than
 * such an object, denies the call
 * ([`PermissionDecision::from_answer`]).
 */
export type PermissionParams = {
  requestId: string,
  conversationId: ConversationId,
  taskId: TaskId | null,
  toolName: string,
  arguments: JsonValue,
  /**
   * What the call does.
   */
  kind: ToolKind,
  /**
   * The paths the call reads or changes, absolute.
   */
  locations: Array<ToolLocation>,
  /**
   * What would happen, in a few words (`Run cargo test`, `Edit src/main.rs`).
   */
  title: string,
  /**
   * Why the person is asked: the rule or preset, the command's risk, the sandbox.
   */
  reason: string,
  summary: string,
  /**
   * The choices, in order; the answer names one (`{ "optionId": ... }`).
   */
  options: Array<PermissionOption>,
  /**
   * For `bash`: the whole command that would run.
   */
  command?: string,
  /**
   * For `write`, `edit` and `apply_patch`: the change as a unified diff, before it is
   * made.
   */
  diff?: string,
  /**
   * For a call that leaves plan mode: the plan, whole, in markdown.
   */
  plan?: string,
  /**
   * For `write`, `edit` and `apply_patch`: each file's text now and after.
   */
  changes?: Array<FileDiff>,
};

/**
 * `command/list` params: an empty object.
 */
export type CommandListParams = Record<symbol, never>;

export type CommandListResult = { commands: Array<CommandInfo> };

/**
 * One slash command a person can type as `/name args`.
 */
export type CommandInfo = {
  /**
   * Typed after the `/`.
   */
  name: string,
  description: string,
  /**
   * What the arguments are, for a person (`<file> [focus]`).
   */
  argumentHint?: string,
  /**
   * The model the command's task uses instead of the conversation's.
   */
  model?: string,
  source: CommandSource,
  /**
   * The file a custom command comes from.
   */
  path?: string,
  /**
   * A custom command's prompt as its file gives it, without the frontmatter (before
   * `$ARGUMENTS` and `$1`... are replaced), for a preview.
   */
  body?: string,
};

/**
 * Where a command or a skill is defined.
 */
export type CommandSource = "builtin" | "workspace" | "user";

/**
 * `skill/list` params: an empty object.
 */
export type SkillListParams = Record<symbol, never>;

export type SkillListResult = { skills: Array<SkillInfo> };

/**
 * One skill: a folder with a `SKILL.md`, which the model loads with the `skill` tool.
 */
export type SkillInfo = {
  name: string,
  description: string,
  /**
   * The skill's `SKILL.md`.
   */
  path: string,
  source: CommandSource,
};

/**
 * `workspace/completePaths` params.
 */
export type CompletePathsParams = {
  /**
   * What the person typed after `@` (without the `@`), possibly quoted (`"my fi`). A
   * `dir/` prefix naming a workspace folder narrows to that folder; empty lists the top
   * of the workspace.
   */
  query: string,
  /**
   * At most this many matches (default 50, at most 1000).
   */
  limit?: number,
};

export type CompletePathsResult = {
  /**
   * Best first.
   */
  matches: Array<PathMatch>,
};

/**
 * One workspace path offered for an `@` reference.
 */
export type PathMatch = {
  /**
   * Relative to the workspace, `/`-separated; a directory ends with `/`.
   */
  path: string,
  kind: PathKind,
  /**
   * The positions in `path` that matched the query, counted in Unicode scalar values
   * (code points, as `Array.from(path)` counts them), ascending, for highlighting.
   */
  indices: Array<number>,
};

/**
 * What a completed path names.
 */
export type PathKind = "file" | "dir";

/**
 * The client's answer to `permission/request`.
 */
export type PermissionResult = PermissionDecision;

/**
 * Client-to-server requests: each method's params and result.
 */
export type ClientRequests = {
  /**
   * Opens a conversation (the root, when it is the session's first and nothing was
   * sent yet); returns its id.
   */
  "conversation/create": { params: CreateParams, result: CreateResult },
  /**
   * Queues input for a conversation; returns the task's id at once, progress comes
   * as `conversation/event` notifications.
   */
  "conversation/send": { params: SendParams, result: SendResult },
  /**
   * Steers input into the conversation's running task: its model reads it at the
   * next checkpoint (after the current tool calls) without the task ending
   * (`input_receipt` `steered`); queued as `conversation/send` would be when no task
   * runs there or the task ends first. Answers the input's id at once.
   */
  "conversation/steer": { params: SendParams, result: SteerResult },
  /**
   * Withdraws input no model has read yet (queued, or waiting to be steered): its
   * `input_receipt` says `dropped`.
   */
  "conversation/withdraw": { params: WithdrawParams, result: WithdrawResult },
  /**
   * The session's conversations.
   */
  "conversation/list": { params: ListParams, result: ListResult },
  /**
   * A conversation's history, as people read it.
   */
  "conversation/history": { params: HistoryParams, result: HistoryResult },
  /**
   * Removes a conversation (not the root).
   */
  "conversation/destroy": { params: TargetParams, result: DestroyResult },
  /**
   * Stops the conversation's running task (`turn_aborted`).
   */
  "conversation/interrupt": { params: TargetParams, result: InterruptResult },
  /**
   * Switches a conversation's mode (`mode_changed` follows when it changed); the
   * next model call has that mode's tools and system prompt.
   */
  "conversation/setMode": { params: SetModeParams, result: SetModeResult },
  /**
   * Changes a conversation's context (seed 003's `SetConversationContext`): its base
   * and user instructions, MCP allowlist and tool preferences, or builds its MCP
   * view again. The history keeps its order; a running task keeps the context it
   * started with, and the conversation's next task has the new one.
   */
  "conversation/setContext": { params: SetContextParams, result: SetContextResult },
  /**
   * Compacts a conversation's history now: queues a task that summarises its older
   * part (`compacted`, then `token_count`); returns the task's id.
   */
  "conversation/compact": { params: TargetParams, result: CompactResult },
  /**
   * The messages compactions replaced, one segment per compaction, oldest first.
   */
  "conversation/archive": { params: TargetParams, result: ArchiveResult },
  /**
   * Runs a slash command in a conversation (`/help`, `/model`, `/mode`, `/compact`,
   * ..., or a custom command): its text for people, and the task it started, if any.
   * An unknown command is an error and never reaches the model.
   */
  "conversation/command": { params: CommandParams, result: CommandResult },
  /**
   * Stops the session's running task, whatever conversation it is on, and drops the
   * continuations its handoffs queued (their calls get a result saying so).
   */
  "session/interrupt": { params: SessionInterruptParams, result: InterruptResult },
  /**
   * The sessions saved in the workspace (`.coder/sessions/`), newest first.
   */
  "session/list": { params: SessionListParams, result: SessionListResult },
  /**
   * Takes up a saved session: its conversations, histories, todos and modes replace
   * this session's, which stays on disk and can be taken up later. Only while no
   * task runs or waits (else `data.kind` `busy`); an unknown id is `-32602` with
   * `data.kind` `not_found`.
   */
  "session/resume": { params: SessionResumeParams, result: SessionResumeResult },
  /**
   * The points of a conversation, oldest first: each input a person sent that its
   * history still holds (a compaction or a clear takes the earlier ones away), named
   * by its place among the conversation's inputs, with its first line.
   */
  "conversation/points": { params: TargetParams, result: PointsResult },
  /**
   * Takes a conversation back to before one of its points: the files the engine's
   * turns changed since are put back (those changed since by anything else are kept
   * and named) and the history is cut before that input; with `dryRun`, only says
   * what it would do. Only while no task runs or waits (else `data.kind` `busy`).
   */
  "conversation/rewind": { params: RewindParams, result: RewindResult },
  /**
   * Starts a new session from a point: a new saved session (its own id and file)
   * holds this one's conversations, that one cut before the point, and the
   * connection goes on in it as after `session/resume`. The session it came from
   * stays on disk as it was, byte for byte; no file of the workspace is touched.
   */
  "session/fork": { params: ForkParams, result: ForkResult },
  /**
   * Picks the event stream up again from a `seq`: the events since, from the
   * engine's bounded buffer, or a snapshot of the session when they are no longer
   * kept. Live `conversation/event` notifications go on; a `fromSeq` past the next
   * event is `-32602`.
   */
  "session/subscribe": { params: SubscribeParams, result: SubscribeResult },
  /**
   * The rules files the system prompt holds now (user level, `.coder/rules/`, then
   * `AGENTS.md`/`CLAUDE.md` from the workspace root down to the start directory).
   */
  "rule/list": { params: RuleListParams, result: RuleListResult },
  /**
   * The permission rules a person recorded with "always" for this project (in their
   * own state; every door applies them).
   */
  "permissions/list": { params: PermissionsListParams, result: PermissionsListResult },
  /**
   * Removes one recorded permission rule by id.
   */
  "permissions/remove": { params: PermissionsRemoveParams, result: PermissionsRemoveResult },
  /**
   * The slash commands a person can type: the built-in ones, then the custom ones
   * (`.coder/commands/<name>.md`), for completion.
   */
  "command/list": { params: CommandListParams, result: CommandListResult },
  /**
   * The skills (`.coder/skills/<dir>/SKILL.md`) the model is told about.
   */
  "skill/list": { params: SkillListParams, result: SkillListResult },
  /**
   * Workspace paths matching what a person typed after `@`, best first, for a
   * completion menu.
   */
  "workspace/completePaths": { params: CompletePathsParams, result: CompletePathsResult },
};

/**
 * Server-to-client requests: each method's params and the client's answer.
 */
export type ServerRequests = {
  /**
   * Asks a person to approve a tool call.
   */
  "permission/request": { params: PermissionParams, result: PermissionResult },
};

/**
 * Server-to-client notifications: each method's params.
 */
export type ServerNotifications = {
  /**
   * Carries one engine event, in `seq` order.
   */
  "conversation/event": { params: EventParams },
};

// options.rs

/**
 * `Engine.create(options)`. Everything but `workingDir` is optional; what is left out
 * comes from the workspace's `.coder/config.json`, the user's config and the environment,
 * as for `coder exec`.
 */
export type EngineOptions = {
  workingDir: string,
  model?: ModelOptions,
  mode?: Mode,
  preset?: Preset,
  /**
   * Approve what the policy would ask about (dangerous commands still ask).
   */
  autoApprove?: boolean,
  /**
   * Tools not offered to the model (see `BUILTIN_TOOLS` and `CONVERSATION_TOOLS`).
   */
  disabledTools?: Array<string>,
  /**
   * Added to the config files' servers (replacing one of the same name).
   */
  mcpServers?: { [key in string]: McpServerOptions },
  /**
   * Keep `.coder/sessions/<id>.json` (default true).
   */
  saveSessions?: boolean,
  /**
   * Confine commands with the OS sandbox (default true).
   */
  sandbox?: boolean,
  /**
   * Model calls per task before the task stops.
   */
  maxSteps?: number,
  /**
   * The person trusts `workingDir`: its own `.coder/config.json` and `.mcp.json` apply
   * whole (MCP servers, provider endpoint, looser modes). `false`: they may only narrow,
   * even when the user-level config lists the folder in `trustedFolders`; left out, that
   * list decides. What an untrusted folder asked for and did not get is a `warning`
   * event.
   */
  trustWorkspace?: boolean,
  /**
   * Start even when no model is configured anywhere: a task asked for then fails with
   * `no_provider` until `setModel` gives the session one (default false: `create`
   * fails, naming what to set).
   */
  modelLater?: boolean,
};

/**
 * A model and the provider serving it.
 */
export type ModelOptions = {
  /**
   * `openai`, `anthropic`, or the name of another service at `baseUrl`, which is then
   * required (see [`ProviderName`]).
   */
  provider: ProviderName,
  model: string,
  /**
   * `http://` or `https://`; for OpenAI up to and including `/v1`.
   */
  baseUrl?: string,
  /**
   * Sent only to `baseUrl` or, without one, to the provider's default endpoint.
   */
  apiKey?: string,
  contextWindow?: number,
  maxOutputTokens?: number,
};

/**
 * One MCP server, as in `.coder/config.json`'s `mcpServers` (which also takes the
 * timeouts in snake_case). Stdio servers have a `command`; streamable HTTP servers a
 * `url`.
 */
export type McpServerOptions = {
  command?: string,
  args?: Array<string>,
  env?: { [key in string]: string },
  cwd?: string,
  url?: string,
  headers?: { [key in string]: string },
  /**
   * Default true.
   */
  enabled?: boolean,
  /**
   * Seconds, from 0 to a day.
   */
  startupTimeoutSec?: number,
  /**
   * Seconds, from 0 to a day.
   */
  toolTimeoutSec?: number,
};

// tools.rs

/**
 * The built-in tools besides the conversation tools, sorted.
 */
export const BUILTIN_TOOLS = [
  "apply_patch",
  "ask_user",
  "bash",
  "edit",
  "exit_plan_mode",
  "glob",
  "grep",
  "read",
  "skill",
  "todo_write",
  "write",
] as const;

/**
 * The conversation tools (work in other conversations of the session), in their fixed
 * order.
 */
export const CONVERSATION_TOOLS = [
  "conv_create",
  "conv_send",
  "conv_list",
  "conv_history",
  "conv_destroy",
] as const;

/**
 * The name of one of coder's own tools.
 */
export type ToolName =
  | "apply_patch"
  | "ask_user"
  | "bash"
  | "edit"
  | "exit_plan_mode"
  | "glob"
  | "grep"
  | "read"
  | "skill"
  | "todo_write"
  | "write"
  | "conv_create"
  | "conv_send"
  | "conv_list"
  | "conv_history"
  | "conv_destroy";

// serde_json::Value (any JSON), as ts-rs declares it

export type JsonValue =
  | number
  | string
  | boolean
  | Array<JsonValue>
  | { [key in string]: JsonValue }
  | null;
