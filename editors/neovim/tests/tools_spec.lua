-- Tool calls: one compact line each, expanding to a command's live output (before the
-- command ends) or an edit's diff; the files a turn changed go to the quickfix list.
local H = require("helpers")

local dir = H.workspace("yolo")
local command = "for i in 1 2 3; do echo tick $i; sleep 1; done; touch ended"
H.write(dir .. "/notes.txt", "one\ntwo\nthree\n")
local url = H.mock(dir, {
  { kind = "stream", chunks = { { type = "tool_call", id = "c1", name = "bash", arguments = vim.json.encode({ command = command }) } } },
  { kind = "stream", chunks = { { type = "text", text = "It ticked." } } },
  { kind = "stream", chunks = { { type = "tool_call", id = "c2", name = "edit", arguments = vim.json.encode({
    path = "notes.txt", old_string = "two", new_string = "TWO" }) } } },
  { kind = "stream", chunks = { { type = "text", text = "Edited." } } },
  { kind = "stream", chunks = { { type = "tool_call", id = "c3", name = "edit", arguments = vim.json.encode({
    path = "draft.txt", old_string = "mine, unsaved", new_string = "mine, unsaved, and theirs" }) } } },
  { kind = "stream", chunks = { { type = "text", text = "Edited the draft." } } },
})
H.write(dir .. "/draft.txt", "first\nlast\n")
H.setup(dir, url)

--- The 1-based line of the chat holding `text`, or nil.
local function line_of(text)
  local lines = vim.api.nvim_buf_get_lines(require("coder.chat").buffer(), 0, -1, false)
  for i, line in ipairs(lines) do
    if line:find(text, 1, true) then
      return i
    end
  end
  return nil
end

local function press_on(line, keys)
  local buf = require("coder.chat").buffer()
  local win = vim.fn.bufwinid(buf)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { line, 0 })
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), "x", false)
end

H.test("a command's live output shows, expanded, before the command ends", function()
  vim.cmd("Coder run the ticker")
  H.see("▸ … Run `" .. command .. "`")
  H.eq(nil, line_of("tick 1"), "output shown while the call is folded")
  press_on(line_of("Run `for i"), "<CR>")
  H.see("▾ … Run `")
  H.see("  │ tick 1", 5000)
  H.eq(0, vim.fn.filereadable(dir .. "/ended"), "the command had already ended")
  H.wait_done(1)
  H.see("It ticked.")
  H.see("  │ tick 3")
  H.truthy(line_of("▾ ✓ "), "the finished call is not marked done:\n" .. H.transcript())
  -- za folds it back to its line.
  press_on(line_of("▾ ✓ "), "za")
  H.see("▸ ✓ ")
  H.eq(nil, line_of("tick 1"), "output shown after folding")
end)

H.test("an edit's line expands to its diff, and the file goes to the quickfix list", function()
  vim.cmd("Coder edit the notes")
  H.wait_done(2)
  H.see("Edited.")
  local line = H.truthy(line_of("notes.txt"), "no line for the edit:\n" .. H.transcript())
  press_on(line, "za")
  H.see("  │ -two")
  H.see("  │ +TWO")
  H.eq("one\nTWO\nthree\n", H.read(dir .. "/notes.txt"), "the file")
  local qf = vim.fn.getqflist({ title = 1, items = 1 })
  H.eq("coder: files the turn touched", qf.title, "the quickfix title")
  H.eq(dir .. "/notes.txt", vim.api.nvim_buf_get_name(qf.items[1].bufnr), "the quickfix entry")
end)

H.test("an edit to an open buffer lands in it, over its unsaved changes, and not on disk", function()
  vim.cmd("edit " .. dir .. "/draft.txt")
  local buf = vim.api.nvim_get_current_buf()
  -- A change not saved: the engine reads the buffer, not the file.
  vim.api.nvim_buf_set_lines(buf, 1, 1, false, { "mine, unsaved" })
  vim.cmd("Coder edit the draft")
  H.wait_done(3)
  H.see("Edited the draft.")
  H.eq({ "first", "mine, unsaved, and theirs", "last" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "the buffer")
  H.eq("first\nlast\n", H.read(dir .. "/draft.txt"), "the file on disk")
  -- The change is in the buffer's undo history.
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("silent undo")
  end)
  H.eq({ "first", "mine, unsaved", "last" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "the buffer after undo")
end)

H.run("tools_spec")
