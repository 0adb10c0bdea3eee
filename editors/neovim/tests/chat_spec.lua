-- The chat: a streamed answer lands in the chat buffer, and `:checkhealth coder` reports
-- what a person needs to know.
local H = require("helpers")

local dir = H.workspace("balanced")
local url = H.mock(dir, {
  { kind = "stream", delay_ms = 50, chunks = {
    { type = "text", text = "Hello " },
    { type = "text", text = "from **Neovim**.\n\n" },
    { type = "text", text = "```lua\nprint(1)\n```" },
  } },
  { kind = "stream", chunks = {
    { type = "thinking", text = "First I think.\nThen I think again." },
    { type = "text", text = "Thought through." },
  } },
})
H.setup(dir, url)

H.test("a streamed answer lands in the chat buffer as it streams", function()
  vim.cmd("Coder say hello")
  H.see("## You\n\nsay hello")
  -- The first piece shows before the reply has ended.
  H.see("Hello ")
  H.eq(0, H.tasks_done(), "tasks finished when the first piece showed")
  H.wait_done(1)
  H.see("## Coder\n\nHello from **Neovim**.\n\n```lua\nprint(1)\n```")
  local chat = require("coder.chat").buffer()
  H.eq("coder", vim.bo[chat].filetype, "the chat's filetype")
  -- The input stays the last lines, after the separator.
  local lines = vim.api.nvim_buf_get_lines(chat, 0, -1, false)
  H.truthy(lines[#lines - 1]:find("ask coder", 1, true), "the separator is not above the input: " .. vim.inspect(lines))
  H.eq("", lines[#lines], "the input line")
  H.wait(5000, function()
    return require("coder").statusline():find("^coder: idle") ~= nil
  end, "the statusline to say idle; it says " .. require("coder").statusline())
end)

H.test("the answer is highlighted with Treesitter, its code block as Lua", function()
  local chat = require("coder.chat").buffer()
  H.truthy(vim.treesitter.highlighter.active[chat], "no Treesitter highlighter on the chat")
  local parser = vim.treesitter.get_parser(chat)
  parser:parse(true)
  H.eq("markdown", parser:lang(), "the chat's language")
  H.truthy(parser:children().lua, "the code block is not parsed as Lua")
end)

H.test("the model's thinking shows folded, and za unfolds it", function()
  vim.cmd("Coder think first")
  H.wait_done(2)
  H.see("▸ Thinking (2 lines)\n## Coder\n\nThought through.")
  local chat = require("coder.chat").buffer()
  local lines = vim.api.nvim_buf_get_lines(chat, 0, -1, false)
  local row
  for i, line in ipairs(lines) do
    if line:find("Thinking", 1, true) then
      row = i
    end
  end
  vim.api.nvim_set_current_win(vim.fn.bufwinid(chat))
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  vim.api.nvim_feedkeys("za", "x", false)
  H.see("▾ Thinking\n  First I think.\n  Then I think again.")
end)

H.test("a change a person makes to the transcript is undone; the input is kept", function()
  local chat = require("coder.chat").buffer()
  local before = H.transcript()
  vim.api.nvim_set_current_win(vim.fn.bufwinid(chat))
  local count = vim.api.nvim_buf_line_count(chat)
  vim.api.nvim_buf_set_lines(chat, count - 1, count, false, { "half typed" })
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.api.nvim_feedkeys("ddjx", "x", false)
  H.wait(5000, function()
    return H.transcript() == before
  end, "the transcript to come back; it holds:\n" .. H.transcript())
  local lines = vim.api.nvim_buf_get_lines(chat, 0, -1, false)
  H.eq("half typed", lines[#lines], "the input")
  vim.api.nvim_buf_set_lines(chat, #lines - 1, #lines, false, { "" })
end)

H.test("the input at the bottom sends with <CR>", function()
  local chat = require("coder.chat").buffer()
  local count = vim.api.nvim_buf_line_count(chat)
  vim.api.nvim_buf_set_lines(chat, count - 1, count, false, { "/help" })
  vim.api.nvim_set_current_buf(chat)
  vim.api.nvim_win_set_cursor(0, { count, 0 })
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<CR>", true, false, true), "x", false)
  -- `/help` is answered by the engine without a model; its answer names commands.
  local ok = pcall(H.see, "/mode")
  if not ok then
    error("the whole buffer:\n" .. table.concat(vim.api.nvim_buf_get_lines(chat, 0, -1, false), "\n"))
  end
  local lines = vim.api.nvim_buf_get_lines(chat, 0, -1, false)
  H.eq("", lines[#lines], "the input was not cleared")
end)

H.test(":checkhealth coder reports the program, provider, workspace and Neovim", function()
  vim.cmd("checkhealth coder")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  H.truthy(text:find("found: " .. os.getenv("CODER_BIN"), 1, true), text)
  H.truthy(text:find("version: coder", 1, true), text)
  H.truthy(text:find("workspace: " .. dir, 1, true), text)
  H.truthy(text:find("Neovim 0.11", 1, true), text)
  H.truthy(text:find("OPENAI_API_KEY is set", 1, true) or text:find("provider", 1, true), text)
  vim.cmd("bwipeout")
end)

H.run("chat_spec")
