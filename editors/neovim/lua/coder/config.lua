-- The plugin's options: the defaults, and `setup()`'s options merged over them.

local M = {}

--- The defaults. Every option is documented in `:h coder-options`.
M.defaults = {
  -- The `coder` program: a path or a name looked up in `PATH`.
  cmd = "coder",
  -- Extra arguments after `coder lsp --stdio`.
  args = {},
  -- The workspace: a function returning a directory, or nil for the git root above the
  -- current directory, else the current directory.
  root_dir = nil,
  -- Passed to the engine as `initializationOptions` (provider, model, baseUrl, apiKey,
  -- trustWorkspace). Anything left out comes from coder's own configuration.
  engine = {},
  -- Extra environment for the `coder` process.
  env = nil,
  chat = {
    -- "split" (a vertical split on the right), "hsplit", "float" or "tab".
    layout = "split",
    -- Width of a vertical split, in columns (a fraction below 1 is of the editor's width).
    width = 0.4,
    -- Height of a horizontal split, in lines (a fraction below 1 is of the editor's height).
    height = 0.4,
    -- Show a tool call's output (or diff) when it starts, instead of its one line only.
    expand_tools = false,
    -- Show the model's thinking unfolded.
    expand_thinking = false,
    -- How often streamed text is written into the buffer, in milliseconds.
    flush_ms = 30,
  },
  -- What input sent while a task runs does: "steer" (the running task reads it at its next
  -- step) or "queue" (it runs after the task).
  busy_input = "steer",
  -- Edits the engine makes to open buffers: "apply" them as they come, or "review" each
  -- one hunk by hunk before it is applied.
  edits = "apply",
  -- Mappings inside the chat buffer (set one to false to leave it out).
  mappings = {
    send = "<CR>",
    send_insert = "<C-s>",
    toggle = "za",
    stop = "<C-c>",
    close = "q",
  },
}

--- The options in force.
M.options = vim.deepcopy(M.defaults)

--- Merges `opts` over the defaults and keeps the result.
---@param opts table|nil
---@return table
function M.setup(opts)
  vim.validate({ opts = { opts, "table", true } })
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  local valid_layouts = { split = true, hsplit = true, float = true, tab = true }
  if not valid_layouts[M.options.chat.layout] then
    error("coder: chat.layout must be split, hsplit, float or tab, not " .. tostring(M.options.chat.layout))
  end
  if M.options.busy_input ~= "steer" and M.options.busy_input ~= "queue" then
    error("coder: busy_input must be steer or queue, not " .. tostring(M.options.busy_input))
  end
  if M.options.edits ~= "apply" and M.options.edits ~= "review" then
    error("coder: edits must be apply or review, not " .. tostring(M.options.edits))
  end
  return M.options
end

return M
