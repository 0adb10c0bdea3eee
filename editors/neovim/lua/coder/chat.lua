-- The chat buffer: the conversation as the engine's events tell it, and an input at the
-- bottom. The transcript is a list of blocks (the person's input, the model's text, its
-- thinking, a tool call, a notice), each owning a run of lines; the input follows a
-- separator line after the last block.

local config = require("coder.config")
local status = require("coder.status")

local M = {}

local ns = vim.api.nvim_create_namespace("coder.chat")

local SEPARATOR = "──── ❯ ask coder: <CR> in normal mode or <C-s> sends ────"

--- The chat's state: its buffer, its blocks, the blocks of tool calls by call id, and what
--- waits to be written.
local chat = {
  buf = nil,
  blocks = {},
  calls = {},
  dirty = {},
  text = nil,
  timer = nil,
  touched = {},
}

local function valid()
  return chat.buf ~= nil and vim.api.nvim_buf_is_valid(chat.buf)
end

--- Splits text into lines (a trailing newline gives a last empty line).
local function split(text)
  return vim.split(text, "\n", { plain = true })
end

--- Calls `fn(...)`, a write of the plugin's own into the chat buffer (the guard below lets
--- those through).
local writing = false
local function write(fn, ...)
  writing = true
  local ok, err = pcall(fn, ...)
  writing = false
  if not ok then
    error(err, 2)
  end
end

--- The first line of block `index`, 0-based.
local function start_of(index)
  local line = 0
  for i = 1, index - 1 do
    line = line + chat.blocks[i].nlines
  end
  return line
end

local function index_of(block)
  for i = #chat.blocks, 1, -1 do
    if chat.blocks[i] == block then
      return i
    end
  end
  return nil
end

--- The lines of the transcript before the separator.
local function transcript_lines()
  return start_of(#chat.blocks + 1)
end

local function highlight(block, first)
  if not block.hl then
    return
  end
  local line = vim.api.nvim_buf_get_lines(chat.buf, first, first + 1, false)[1] or ""
  vim.api.nvim_buf_set_extmark(chat.buf, ns, first, 0, { end_col = #line, hl_group = block.hl })
end

--- Writes block `block`'s lines in place of what it showed before.
local function render(block)
  local index = index_of(block)
  if not index or not valid() then
    return
  end
  local first = start_of(index)
  local lines = block.render(block)
  write(vim.api.nvim_buf_set_lines, chat.buf, first, first + block.nlines, false, lines)
  block.nlines = #lines
  highlight(block, first)
end

--- Adds a block at the end of the transcript and writes it.
local function add(block)
  M.open_buffer()
  local first = transcript_lines()
  table.insert(chat.blocks, block)
  local lines = block.render(block)
  block.nlines = #lines
  write(vim.api.nvim_buf_set_lines, chat.buf, first, first, false, lines)
  highlight(block, first)
  return block
end

--- Writes the text that waits into the streaming block, and the blocks changed since the
--- last flush.
--- How long writing into the buffer took, for the performance test: the longest flush, in
--- milliseconds of processor time, and how many flushes there were.
M.stats = { longest_flush_ms = 0, flushes = 0 }

local flush

function M.flush()
  local started = os.clock()
  flush()
  M.stats.flushes = M.stats.flushes + 1
  M.stats.longest_flush_ms = math.max(M.stats.longest_flush_ms, (os.clock() - started) * 1000)
end

flush = function()
  if chat.timer then
    chat.timer:stop()
    chat.timer:close()
    chat.timer = nil
  end
  if not valid() then
    return
  end
  local text = chat.text
  if text and #text.pending > 0 then
    local index = index_of(text)
    local pending = table.concat(text.pending)
    text.pending = {}
    if index == #chat.blocks then
      -- The streaming block is the last one: append at its end, in time proportional to
      -- what arrived, whatever the reply's length so far.
      local last = transcript_lines() - 1
      local pieces = split(pending)
      write(vim.api.nvim_buf_set_text, chat.buf, last, text.last_len, last, text.last_len, pieces)
      if #pieces > 1 then
        text.last_len = #pieces[#pieces]
      else
        text.last_len = text.last_len + #pending
      end
      text.nlines = text.nlines + #pieces - 1
    else
      render(text)
    end
  end
  for block in pairs(chat.dirty) do
    render(block)
  end
  chat.dirty = {}
  M.follow()
end

local function schedule_flush()
  if chat.timer then
    return
  end
  chat.timer = vim.uv.new_timer()
  chat.timer:start(config.options.chat.flush_ms, 0, vim.schedule_wrap(M.flush))
end

local function mark(block)
  chat.dirty[block] = true
  schedule_flush()
end

--- Keeps the chat windows whose cursor was at the input showing the end.
function M.follow()
  for _, win in ipairs(vim.fn.win_findbuf(chat.buf)) do
    local row = vim.api.nvim_win_get_cursor(win)[1]
    if row > transcript_lines() and win ~= vim.api.nvim_get_current_win() then
      vim.api.nvim_win_call(win, function()
        vim.cmd("normal! zb")
      end)
    end
  end
end

-- The kinds of block.

local function text_block(heading)
  local block = { kind = "text", chunks = {}, pending = {}, last_len = 0 }
  block.render = function(b)
    local lines = split(table.concat(b.chunks))
    b.last_len = #lines[#lines]
    return lines
  end
  block.heading = heading
  return block
end

local function lines_block(lines, hl, kind)
  return {
    kind = kind or "notice",
    lines = lines,
    hl = hl,
    render = function(b)
      return b.lines
    end,
  }
end

local function thinking_block()
  local block = { kind = "thinking", chunks = {}, expanded = config.options.chat.expand_thinking, hl = "CoderThinking" }
  block.render = function(b)
    local text = table.concat(b.chunks)
    local lines = split(text)
    if b.expanded then
      local out = { "▾ Thinking" }
      for _, line in ipairs(lines) do
        table.insert(out, "  " .. line)
      end
      return out
    end
    return { ("▸ Thinking (%d lines)"):format(#lines) }
  end
  return block
end

local function tool_block(event)
  local block = {
    kind = "tool",
    event = event,
    output = {},
    state = "running",
    expanded = config.options.chat.expand_tools,
    hl = "CoderTool",
  }
  block.render = function(b)
    local marks = { running = "…", completed = "✓", failed = "✗", waiting = "?" }
    local sign = b.expanded and "▾" or "▸"
    local head = ("%s %s %s"):format(sign, marks[b.state] or "", b.summary or b.event.title or b.event.toolName)
    if b.duration then
      head = head .. (" (%.1fs)"):format(b.duration / 1000)
    end
    local lines = { head }
    if b.expanded then
      local body
      if b.diff then
        body = split((b.diff:gsub("\n$", "")))
      elseif b.error then
        body = split(b.error)
      else
        body = split((table.concat(b.output):gsub("\n$", "")))
      end
      for _, line in ipairs(body) do
        table.insert(lines, "  │ " .. line)
      end
    end
    return lines
  end
  return block
end

--- Writes the whole transcript again from its blocks, keeping the input: after a person
--- changed the transcript, which only the plugin writes.
function M.repair()
  if not valid() then
    return
  end
  local lines = vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false)
  local input = { "" }
  for i = #lines, 1, -1 do
    if lines[i] == SEPARATOR then
      input = vim.list_slice(lines, i + 1)
      break
    end
  end
  local all = {}
  for _, block in ipairs(chat.blocks) do
    if block.pending then
      block.pending = {}
    end
    local rendered = block.render(block)
    block.nlines = #rendered
    vim.list_extend(all, rendered)
  end
  table.insert(all, SEPARATOR)
  vim.list_extend(all, #input > 0 and input or { "" })
  vim.api.nvim_buf_clear_namespace(chat.buf, ns, 0, -1)
  write(vim.api.nvim_buf_set_lines, chat.buf, 0, -1, false, all)
  local first = 0
  for _, block in ipairs(chat.blocks) do
    highlight(block, first)
    first = first + block.nlines
  end
  vim.api.nvim_buf_set_extmark(chat.buf, ns, first, 0, { end_col = #SEPARATOR, hl_group = "CoderSeparator" })
end

--- The chat buffer, made when first needed.
function M.open_buffer()
  if valid() then
    return chat.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  chat.buf = buf
  chat.blocks = {}
  chat.calls = {}
  chat.text = nil
  vim.api.nvim_buf_set_name(buf, "coder://chat")
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].undolevels = -1
  vim.bo[buf].filetype = "coder"
  vim.bo[buf].omnifunc = "v:lua.require'coder.complete'.omnifunc"
  write(vim.api.nvim_buf_set_lines, buf, 0, -1, false, { SEPARATOR, "" })
  -- The transcript is the plugin's to write; a change a person makes above the input is
  -- undone by writing the transcript again.
  local repairing = false
  vim.api.nvim_buf_attach(buf, false, {
    on_lines = function(_, _, _, first)
      if writing or repairing or buf ~= chat.buf then
        return
      end
      if first <= transcript_lines() then
        repairing = true
        vim.schedule(function()
          repairing = false
          M.repair()
        end)
      end
    end,
  })
  vim.api.nvim_buf_set_extmark(buf, ns, 0, 0, { end_col = #SEPARATOR, hl_group = "CoderSeparator" })
  pcall(vim.treesitter.language.register, "markdown", "coder")
  M.highlight_fully()
  local maps = config.options.mappings
  local function map(mode, lhs, rhs, desc)
    if lhs then
      vim.keymap.set(mode, lhs, rhs, { buffer = buf, desc = desc, nowait = true })
    end
  end
  map("n", maps.send, function()
    if vim.api.nvim_win_get_cursor(0)[1] > transcript_lines() + 1 then
      M.submit()
    else
      M.toggle_at_cursor()
    end
  end, "coder: send the input, or expand the tool call under the cursor")
  map("i", maps.send_insert, function()
    vim.cmd("stopinsert")
    M.submit()
  end, "coder: send the input")
  map("n", maps.toggle, M.toggle_at_cursor, "coder: expand or fold the block under the cursor")
  map({ "n", "i" }, maps.stop, function()
    require("coder").stop()
  end, "coder: stop the running task")
  map("n", maps.close, "<cmd>close<cr>", "coder: close the chat window")
  return buf
end

--- The chat buffer's number, or nil.
function M.buffer()
  return valid() and chat.buf or nil
end

--- Shows the chat in a window of the current tab (the one it has there, or a new one).
function M.open()
  local buf = M.open_buffer()
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      vim.api.nvim_set_current_win(win)
      return win
    end
  end
  local opts = config.options.chat
  local function size(value, total)
    return value < 1 and math.floor(total * value) or value
  end
  local win
  if opts.layout == "float" then
    local width = math.floor(vim.o.columns * 0.8)
    local height = math.floor(vim.o.lines * 0.8)
    win = vim.api.nvim_open_win(buf, true, {
      relative = "editor",
      width = width,
      height = height,
      row = math.floor((vim.o.lines - height) / 2),
      col = math.floor((vim.o.columns - width) / 2),
      border = "rounded",
      title = " coder ",
    })
  elseif opts.layout == "tab" then
    vim.cmd("tab sbuffer " .. buf)
    win = vim.api.nvim_get_current_win()
  elseif opts.layout == "hsplit" then
    vim.cmd(("botright %dsplit"):format(size(opts.height, vim.o.lines)))
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
  else
    vim.cmd(("botright %dvsplit"):format(size(opts.width, vim.o.columns)))
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
  end
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  vim.wo[win].signcolumn = "no"
  vim.wo[win].foldenable = false
  vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
  return win
end

--- The block holding 1-based buffer line `row`, or nil.
local function block_at(row)
  local line = 0
  for _, block in ipairs(chat.blocks) do
    if row > line and row <= line + block.nlines then
      return block
    end
    line = line + block.nlines
  end
  return nil
end

--- Expands or folds the tool call or the thinking under the cursor.
function M.toggle_at_cursor()
  M.flush()
  local block = block_at(vim.api.nvim_win_get_cursor(0)[1])
  if block and block.expanded ~= nil then
    block.expanded = not block.expanded
    render(block)
  end
end

--- Expands or folds the tool call `call_id`.
function M.toggle_call(call_id)
  local block = chat.calls[call_id]
  if block then
    M.flush()
    block.expanded = not block.expanded
    render(block)
  end
end

--- The text of the input (the lines after the separator), and clears it.
function M.take_input()
  if not valid() then
    return ""
  end
  local first = transcript_lines() + 1
  local lines = vim.api.nvim_buf_get_lines(chat.buf, first, -1, false)
  vim.api.nvim_buf_set_lines(chat.buf, first, -1, false, { "" })
  return vim.trim(table.concat(lines, "\n"))
end

--- Sends what the input holds.
function M.submit()
  local text = M.take_input()
  if text ~= "" then
    require("coder").send(text)
  end
end

--- Shows the person's input.
function M.user(text)
  add(lines_block({ "## You", "" }, "CoderUser", "heading"))
  local lines = split(text)
  table.insert(lines, "")
  add(lines_block(lines, nil, "user"))
  chat.text = nil
end

--- Shows a notice (a command's answer, a warning, an error).
---@param lines string[]|string
---@param hl string|nil
function M.notice(lines, hl)
  M.flush()
  if type(lines) == "string" then
    lines = split(lines)
  end
  local block = add(lines_block(lines, hl or "CoderNotice"))
  chat.text = nil
  return block
end

--- Treesitter parses the whole buffer again after each change: tens of milliseconds per
--- redraw once an answer is long, more than a redraw may take while it streams. So a reply
--- past `LIGHT_AFTER` bytes streams without highlighting (the regex `markdown` syntax costs
--- more still), and Treesitter comes back when it ends (`highlight_fully`).
local LIGHT_AFTER = 8192

local function highlight_lightly()
  if chat.treesitter then
    chat.treesitter = false
    vim.treesitter.stop(chat.buf)
  end
end

--- Highlights the chat with Treesitter's markdown parser when there is one.
function M.highlight_fully()
  if valid() and not chat.treesitter then
    chat.treesitter = pcall(vim.treesitter.start, chat.buf, "markdown")
  end
end

local function append_text(delta)
  local block = chat.text
  if not block or block.kind ~= "text" then
    M.flush()
    add(lines_block({ "## Coder", "" }, "CoderAssistant", "heading"))
    block = add(text_block())
    chat.text = block
  end
  table.insert(block.chunks, delta)
  table.insert(block.pending, delta)
  block.bytes = (block.bytes or 0) + #delta
  if block.bytes > LIGHT_AFTER then
    highlight_lightly()
  end
  schedule_flush()
end

local function append_thinking(delta)
  local block = chat.thinking
  if not block or chat.blocks[#chat.blocks] ~= block then
    M.flush()
    block = add(thinking_block())
    chat.thinking = block
    chat.text = nil
  end
  table.insert(block.chunks, delta)
  mark(block)
end

local quickfix_kinds = { edit = true, delete = true, move = true }

local function set_quickfix()
  local items = {}
  for path in pairs(chat.touched) do
    table.insert(items, { filename = path, lnum = 1, text = "changed by coder" })
  end
  table.sort(items, function(a, b)
    return a.filename < b.filename
  end)
  vim.fn.setqflist({}, " ", { title = "coder: files the turn touched", items = items })
end

--- Shows one engine event.
function M.on_event(event)
  status.on_event(event)
  local kind = event.type
  local ours = require("coder.client").conversation()
  if event.conversationId and ours and event.conversationId ~= ours then
    return
  end
  if kind == "agent_message_delta" then
    append_text(event.delta)
  elseif kind == "agent_reasoning_delta" then
    append_thinking(event.delta)
  elseif kind == "reply_complete" then
    M.flush()
    M.highlight_fully()
  elseif kind == "task_started" then
    chat.touched = {}
  elseif kind == "tool_call_started" then
    M.flush()
    local block = chat.calls[event.callId]
    if block then
      block.state = "running"
      block.event = event
      mark(block)
    else
      chat.calls[event.callId] = add(tool_block(event))
    end
    chat.text = nil
    if quickfix_kinds[event.kind] then
      for _, location in ipairs(event.locations or {}) do
        chat.touched[location.path] = true
      end
    end
  elseif kind == "tool_call_output_delta" then
    local block = chat.calls[event.callId]
    if block then
      table.insert(block.output, event.delta)
      if block.expanded then
        mark(block)
      end
    end
  elseif kind == "tool_call_completed" or kind == "tool_call_failed" then
    local block = chat.calls[event.callId]
    if not block then
      M.flush()
      block = add(tool_block({ title = event.toolName }))
      chat.calls[event.callId] = block
      chat.text = nil
    end
    block.state = kind == "tool_call_completed" and "completed" or "failed"
    block.hl = kind == "tool_call_completed" and "CoderTool" or "CoderToolFailed"
    block.summary = event.summary
    block.duration = event.durationMs
    block.diff = event.diff
    block.error = event.error
    mark(block)
  elseif kind == "permission_withdrawn" then
    M.notice("The request was withdrawn: " .. tostring(event.reason), "CoderNotice")
  elseif kind == "mode_changed" then
    M.notice(("Mode: %s (was %s)"):format(event.mode, event.previous or "?"), "CoderNotice")
  elseif kind == "warning" then
    M.notice("Warning: " .. event.message, "CoderWarning")
  elseif kind == "error" then
    M.notice("Error: " .. event.message, "CoderError")
  elseif kind == "turn_aborted" then
    if event.reason == "interrupted" then
      M.notice("Interrupted.", "CoderWarning")
    end
    M.task_done(event)
  elseif kind == "task_complete" then
    M.flush()
    if event.stepLimit then
      M.notice(("Stopped at the step limit (%d model calls)."):format(event.stepLimit), "CoderWarning")
    end
    M.task_done(event)
  elseif kind == "task_dropped" then
    M.notice("Dropped: " .. tostring(event.reason), "CoderWarning")
  elseif kind == "client_exited" then
    M.notice(("coder exited (code %s)."):format(tostring(event.code)), "CoderError")
  end
end

function M.task_done(event)
  M.flush()
  M.highlight_fully()
  chat.text = nil
  if next(chat.touched) then
    set_quickfix()
  end
  vim.api.nvim_exec_autocmds("User", {
    pattern = "CoderTaskDone",
    data = { taskId = event.taskId, type = event.type, reason = event.reason },
  })
end

--- Empties the transcript (a new or resumed session).
function M.reset()
  if not valid() then
    return
  end
  M.flush()
  local first = transcript_lines()
  write(vim.api.nvim_buf_set_lines, chat.buf, 0, first, false, {})
  chat.blocks = {}
  chat.calls = {}
  chat.text = nil
  chat.thinking = nil
end

--- Shows a conversation's history (`conversation/history` entries).
function M.history(entries)
  for _, entry in ipairs(entries) do
    if entry.role == "user" then
      M.user(entry.text or "")
    else
      add(lines_block({ "## Coder", "" }, "CoderAssistant", "heading"))
      local lines = split(entry.text or "")
      table.insert(lines, "")
      add(lines_block(lines, nil, "text"))
    end
  end
end

--- The transcript as text, for tests and for a person who copies it.
function M.text()
  M.flush()
  if not valid() then
    return ""
  end
  return table.concat(vim.api.nvim_buf_get_lines(chat.buf, 0, transcript_lines(), false), "\n")
end

return M
