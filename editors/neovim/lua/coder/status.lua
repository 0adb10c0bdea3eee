-- What the statusline shows: the engine's state, the conversation's mode and how full its
-- context is, as the events last said.

local M = {}

local current = { state = "idle", mode = nil, tokens = nil, window = nil }

--- The tasks running now, by task id: their conversation. `state_changed` says when the
--- session as a whole goes idle, which can come a moment after a task's end.
local running = {}

local ends = { task_complete = true, turn_aborted = true, task_dropped = true }

--- Follows the events that change what the statusline shows.
function M.on_event(event)
  if event.type == "task_started" and event.taskId then
    running[event.taskId] = event.conversationId or true
  elseif ends[event.type] and event.taskId then
    running[event.taskId] = nil
  elseif event.type == "client_exited" then
    running = {}
  end
  local before = vim.deepcopy(current)
  if event.type == "state_changed" then
    current.state = event.state
  elseif event.type == "mode_changed" then
    current.mode = event.mode
  elseif event.type == "token_count" then
    current.tokens = event.contextTokens
    current.window = event.contextWindow
  elseif event.type == "client_exited" then
    current.state = "stopped"
  end
  -- Redraw only for a change: a streamed answer's deltas must not redraw per delta.
  if not vim.deep_equal(before, current) then
    vim.schedule(function()
      vim.cmd("redrawstatus")
    end)
  end
end

--- Sets the mode (as `conversation/setMode` or `/mode` reported it).
function M.set_mode(mode)
  if current.mode ~= mode then
    current.mode = mode
    vim.schedule(function()
      vim.cmd("redrawstatus")
    end)
  end
end

--- The engine's state: `idle`, `running`, `waiting_for_permission` or `stopped`.
function M.state()
  return current.state
end

--- Whether a task of `conversation` runs (or waits for a person); any conversation's when
--- nil.
function M.busy(conversation)
  for _, owner in pairs(running) do
    if conversation == nil or owner == conversation then
      return true
    end
  end
  return false
end

--- The statusline component: `coder: running · plan · ctx 12%`. Empty before the plugin
--- started the engine.
---@return string
function M.statusline()
  if not require("coder.client").get() then
    return ""
  end
  local words = { current.state == "waiting_for_permission" and "waiting" or current.state }
  if current.mode then
    table.insert(words, current.mode)
  end
  if current.tokens and current.window and current.window > 0 then
    table.insert(words, ("ctx %d%%"):format(math.floor(current.tokens * 100 / current.window + 0.5)))
  end
  return "coder: " .. table.concat(words, " · ")
end

--- Forgets the state (a new client).
function M.reset()
  current = { state = "idle", mode = nil, tokens = nil, window = nil }
  running = {}
end

return M
