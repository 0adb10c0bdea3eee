-- Runs inside a Neovim with a real screen (under tmux), started by screen_spec.lua: sets the
-- plugin up, sends one prompt, and when the task is done writes what it measured to
-- CODER_CHILD_OUT. While the answer streams, a probe re-armed every millisecond records
-- how much processor time the main loop spent between two of its runs (redraws included):
-- the time the editor could not have answered a key. Processor time, not wall time, so that
-- other programs on a shared machine do not count.
local out = assert(os.getenv("CODER_CHILD_OUT"))
local dir = assert(os.getenv("CODER_CHILD_DIR"))
require("coder").setup({
  cmd = os.getenv("CODER_BIN"),
  root_dir = dir,
  env = {
    HOME = dir,
    XDG_CONFIG_HOME = dir .. "/.config",
    OPENAI_BASE_URL = os.getenv("CODER_CHILD_URL") .. "/v1",
    OPENAI_API_KEY = "k",
  },
})
local streaming, started = false, nil
local last_cpu, last_wall
local busy, wall = {}, 0
local events = 0

local function probe()
  if not streaming then
    return
  end
  local cpu, now = os.clock(), vim.uv.hrtime()
  if last_cpu then
    table.insert(busy, (cpu - last_cpu) * 1000)
    wall = math.max(wall, (now - last_wall) / 1e6)
  end
  last_cpu, last_wall = cpu, now
  vim.defer_fn(probe, 1)
end

require("coder.client").on_event(function(event)
  events = events + 1
  if event.type == "agent_message_delta" and not streaming then
    streaming = true
    started = vim.uv.hrtime()
    probe()
  end
end)

vim.api.nvim_create_autocmd("User", {
  pattern = "CoderTaskDone",
  callback = function()
    streaming = false
    local elapsed = started and (vim.uv.hrtime() - started) / 1e6 or 0
    vim.cmd("redraw")
    vim.defer_fn(function()
      local file = assert(io.open(out, "w"))
      file:write(vim.json.encode({
        busy = busy,
        longest_wall_ms = wall,
        stream_ms = elapsed,
        chars = #require("coder.chat").text(),
        events = events,
        longest_flush_ms = require("coder.chat").stats.longest_flush_ms,
        longest_slice_ms = require("coder.transport").stats.longest_slice_ms,
      }))
      file:close()
    end, 200)
  end,
})
vim.cmd("Coder " .. os.getenv("CODER_CHILD_PROMPT"))
-- Keep the cursor in the file's window, as a person reading along would.
vim.cmd("wincmd p")
