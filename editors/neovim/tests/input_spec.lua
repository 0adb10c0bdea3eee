-- The input's helpers: `/` and `@` completion from the engine, the visual selection with
-- `:'<,'>Coder`, the cursor line's diagnostic with `:CoderDiagnostic`.
local H = require("helpers")

local dir = H.workspace("balanced")
H.write(dir .. "/src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n")
local url = H.mock(dir, {
  { kind = "stream", chunks = { { type = "text", text = "It prints hi." } } },
  { kind = "stream", chunks = { { type = "text", text = "Add a semicolon." } } },
  { kind = "stream", chunks = { { type = "text", text = "Fresh start." } } },
})
H.setup(dir, url)

local function candidates(kind, word)
  local got
  require("coder.complete").candidates(kind, word, function(items)
    got = items
  end)
  H.wait(10000, function()
    return got ~= nil
  end, "completion items")
  return vim.tbl_map(function(item)
    return item.word
  end, got)
end

H.test("/ completes the engine's commands and @ its paths", function()
  local complete = require("coder.complete")
  H.eq({ "command", 0, "he" }, { complete.context("/he", 3) }, "the context of /he")
  H.eq({ "path", 8, "src/m" }, { complete.context("look at @src/m", 14) }, "the context of @src/m")
  H.eq(nil, complete.context("plain words", 11), "the context of plain words")
  H.truthy(vim.tbl_contains(candidates("command", "he"), "/help"), "no /help")
  H.truthy(vim.tbl_contains(candidates("path", "src/ma"), "@src/main.rs"), "no @src/main.rs")
  vim.cmd("Coder")
  H.eq("v:lua.require'coder.complete'.omnifunc", vim.bo.omnifunc, "the chat's omnifunc")
end)

H.test("the nvim-cmp and blink.cmp sources give the same items as text edits", function()
  local sources = require("coder.sources")
  vim.cmd("Coder")
  H.eq("coder", vim.bo.filetype, "the chat's filetype")
  local from_cmp
  local cmp = sources.cmp()
  H.truthy(cmp:is_available(), "the cmp source is not available in the chat")
  cmp:complete({ context = { cursor_before_line = "look at @src/ma", cursor = { row = 3, col = 16 } } }, function(result)
    from_cmp = result
  end)
  H.wait(10000, function()
    return from_cmp ~= nil
  end, "the cmp source's answer")
  local item = from_cmp.items[1]
  H.eq("@src/main.rs", item.textEdit.newText, "the cmp item")
  H.eq({ start = { line = 2, character = 8 }, ["end"] = { line = 2, character = 15 } }, item.textEdit.range, "the range")
  local from_blink
  local blink = sources.new()
  H.truthy(blink:enabled(), "the blink source is not enabled in the chat")
  blink:get_completions({ line = "/he", cursor = { 1, 3 } }, function(result)
    from_blink = result
  end)
  H.wait(10000, function()
    return from_blink ~= nil
  end, "the blink source's answer")
  local words = vim.tbl_map(function(i)
    return i.textEdit.newText
  end, from_blink.items)
  H.truthy(vim.tbl_contains(words, "/help"), vim.inspect(words))
  vim.cmd("wincmd p")
end)

H.test(":'<,'>Coder sends the selected lines with the prompt", function()
  vim.cmd("edit " .. dir .. "/src/main.rs")
  vim.cmd("2,2Coder what does this print?")
  H.wait_done(1)
  H.see("It prints hi.")
  local request = vim.json.encode(H.requests(url)[1])
  H.truthy(request:find("what does this print?", 1, true), request)
  H.truthy(request:find("From src/main.rs, lines 2-2", 1, true), request)
  H.truthy(request:find('println!(\\"hi\\");', 1, true), request)
end)

H.test(":CoderDiagnostic sends the cursor line's diagnostic", function()
  vim.cmd("edit " .. dir .. "/src/main.rs")
  local buf = vim.api.nvim_get_current_buf()
  local ns = vim.api.nvim_create_namespace("test.diagnostic")
  vim.diagnostic.set(ns, buf, { { lnum = 1, col = 4, message = "expected `;`", severity = vim.diagnostic.severity.ERROR } })
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.cmd("CoderDiagnostic")
  H.wait_done(2)
  local request = vim.json.encode(H.requests(url)[2])
  H.truthy(request:find("src/main.rs:2:5: ERROR: expected `;`", 1, true), request)
end)

H.test("/new moves the chat to a new conversation; :CoderConversations goes back", function()
  local client = require("coder.client")
  local root = client.conversation()
  vim.cmd("Coder /new")
  H.wait(10000, function()
    return client.conversation() ~= root
  end, "the chat to move to the new conversation")
  H.eq(nil, H.transcript():find("It prints hi.", 1, true), "the old conversation is still shown")
  vim.cmd("Coder hello again")
  H.wait_done(3)
  H.see("Fresh start.")
  local request = vim.json.encode(H.requests(url)[3])
  H.eq(nil, request:find("what does this print?", 1, true), "the new conversation carries the old one's history")
  vim.ui.select = function(items, opts, on_choice)
    H.eq("coder.conversation", opts.kind, "the prompt's kind")
    for _, item in ipairs(items) do
      if item.isRoot then
        return on_choice(item)
      end
    end
  end
  vim.cmd("CoderConversations")
  H.see("It prints hi.")
  H.eq(root, client.conversation(), "the chat's conversation")
end)

H.run("input_spec")
