-- The names of the coder protocol this plugin uses (docs/protocol.md). They are checked
-- against the generated `docs/protocol.schema.json` by the test suite, so a renamed method
-- or event fails a test instead of silently doing nothing.

local M = {}

--- Methods, by the name the plugin uses for them.
M.methods = {
  send = "conversation/send",
  steer = "conversation/steer",
  list = "conversation/list",
  history = "conversation/history",
  interrupt = "conversation/interrupt",
  set_mode = "conversation/setMode",
  command = "conversation/command",
  session_list = "session/list",
  session_resume = "session/resume",
  session_fork = "session/fork",
  points = "conversation/points",
  rewind = "conversation/rewind",
  command_list = "command/list",
  complete_paths = "workspace/completePaths",
  permission_request = "permission/request",
  event = "conversation/event",
}

--- The event types the plugin shows; others are ignored.
M.events = {
  "state_changed",
  "task_started",
  "agent_reasoning_delta",
  "agent_message_delta",
  "reply_complete",
  "token_count",
  "tool_call_started",
  "tool_call_output_delta",
  "tool_call_completed",
  "tool_call_failed",
  "permission_requested",
  "permission_withdrawn",
  "mode_changed",
  "warning",
  "error",
  "task_complete",
  "turn_aborted",
  "task_dropped",
}

--- The modes `conversation/setMode` takes.
M.modes = { "plan", "default", "auto-edit", "yolo" }

return M
