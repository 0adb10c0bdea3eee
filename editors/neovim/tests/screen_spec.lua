-- Screen tests: the plugin in a Neovim with a real screen, under tmux, at 80 and 200
-- columns, its chat checked as the text on the screen; and the streaming measurement: a
-- 20,000-delta answer, the longest time the main loop is busy while it streams.
local H = require("helpers")

local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
local socket = "coder-test-" .. vim.fn.getpid()

local function tmux(args)
  local cmd = { "tmux", "-L", socket }
  vim.list_extend(cmd, args)
  local result = vim.system(cmd, { text = true }):wait(10000)
  assert(result.code == 0, ("tmux %s failed: %s"):format(table.concat(args, " "), result.stderr))
  return result.stdout
end
H.cleanup(function()
  vim.system({ "tmux", "-L", socket, "kill-server" }):wait(5000)
end)

--- Runs screen_child.lua in Neovim under tmux at `columns` x `rows`; returns what it
--- measured and the screen's text once the task is done.
local function run_child(dir, url, prompt, columns, rows)
  local out = dir .. "/child-" .. columns .. ".json"
  local env = {
    "CODER_CHILD_OUT=" .. out,
    "CODER_CHILD_DIR=" .. dir,
    "CODER_CHILD_URL=" .. url,
    "CODER_CHILD_PROMPT=" .. prompt,
    "CODER_BIN=" .. os.getenv("CODER_BIN"),
  }
  local command = ("env %s %s -u %s -i NONE --cmd 'set noswapfile' -c 'luafile %s' %s"):format(
    table.concat(vim.tbl_map(vim.fn.shellescape, env), " "),
    vim.fn.shellescape(vim.v.progpath),
    vim.fn.shellescape(here .. "/minimal_init.lua"),
    vim.fn.shellescape(here .. "/screen_child.lua"),
    vim.fn.shellescape(dir .. "/notes.md")
  )
  local name = "w" .. columns
  tmux({ "new-session", "-d", "-s", name, "-x", tostring(columns), "-y", tostring(rows), command })
  H.wait(60000, function()
    return H.read(out) ~= nil
  end, "the Neovim under tmux to finish at " .. columns .. " columns")
  local screen = tmux({ "capture-pane", "-p", "-t", name })
  tmux({ "kill-session", "-t", name })
  return vim.json.decode(H.read(out)), screen
end

local sentence = "The quick brown fox jumps over the lazy dog and keeps running."

H.test("the chat on a screen of 80 and of 200 columns", function()
  for _, columns in ipairs({ 80, 200 }) do
    local dir = H.workspace("balanced")
    H.write(dir .. "/notes.md", "# Notes\n")
    local url = H.mock(dir, { { kind = "stream", chunks = { { type = "text", text = sentence } } } })
    local _, screen = run_child(dir, url, "say the sentence", columns, 30)
    local lines = vim.split(screen, "\n")
    -- The chat is what follows the window separator on each line.
    local right = vim.tbl_map(function(line)
      return vim.trim(line:match("│(.*)$") or "")
    end, lines)
    local text = table.concat(right, "\n")
    H.truthy(text:find("## You\n\nsay the sentence", 1, true), ("at %d columns:\n%s"):format(columns, screen))
    H.truthy(text:find("## Coder", 1, true), ("at %d columns:\n%s"):format(columns, screen))
    H.truthy(text:find("ask coder", 1, true), ("at %d columns:\n%s"):format(columns, screen))
    if columns == 200 then
      H.truthy(text:find(sentence, 1, true), "the sentence is not on one line:\n" .. screen)
    else
      -- Wrapped at word boundaries within the chat's 32 columns.
      H.truthy(not text:find(sentence, 1, true), "the sentence did not wrap:\n" .. screen)
      H.truthy(text:find("The quick brown fox jumps over", 1, true), screen)
      H.truthy(text:find("keeps running.", 1, true), screen)
    end
    -- The file's window is left as it was.
    H.truthy(screen:find("# Notes", 1, true), screen)
  end
end)

H.test("a 20,000-delta answer keeps the main loop under 16 ms at a time", function()
  local dir = H.workspace("balanced")
  H.write(dir .. "/notes.md", "# Notes\n")
  local chunks = {}
  for i = 1, 20000 do
    -- Words, with a line break now and then and a code block, as a real answer has.
    local piece = (i % 200 == 0) and "\n\n```lua\nlocal x = 1\n```\n\n" or ((i % 12 == 0) and "word\n" or "word ")
    table.insert(chunks, { type = "text", text = piece })
  end
  local url = H.mock(dir, { { kind = "stream", chunks = chunks } })
  local measured = run_child(dir, url, "stream a long answer", 200, 50)
  local busy = measured.busy
  table.sort(busy)
  local p99 = busy[math.max(1, math.ceil(#busy * 0.99))]
  io.stdout:write(("perf: %d bytes in %d events streamed in %.0f ms; the main loop was busy at most"
    .. " %.1f ms of processor time between two probes (99th percentile %.1f ms, %d probes; longest"
    .. " wall-clock gap %.1f ms); longest dispatch slice %.1f ms, longest write into the buffer"
    .. " %.1f ms\n"):format(measured.chars, measured.events, measured.stream_ms, busy[#busy], p99,
    #busy, measured.longest_wall_ms, measured.longest_slice_ms, measured.longest_flush_ms))
  H.truthy(measured.chars > 100000, "the answer did not arrive whole: " .. measured.chars)
  H.truthy(#busy > 100, "the probe hardly ran: " .. #busy)
  -- A redraw's budget is 16 ms: nearly every stretch of work stays within it. A rare longer
  -- one (the garbage collector, Treesitter taking the finished reply) is bounded apart.
  H.truthy(p99 < 16, ("the main loop was busy for %.1f ms at the 99th percentile"):format(p99))
  H.truthy(busy[#busy] < 50, ("the main loop was busy for %.1f ms"):format(busy[#busy]))
  H.truthy(measured.longest_slice_ms < 16, ("a dispatch slice took %.1f ms"):format(measured.longest_slice_ms))
  H.truthy(measured.longest_flush_ms < 16, ("a write took %.1f ms"):format(measured.longest_flush_ms))
end)

H.test("appending an answer takes time linear in its length", function()
  local chat = require("coder.chat")
  require("coder.client").set_conversation(nil)
  local function feed(count)
    chat.reset()
    local started = vim.uv.hrtime()
    for i = 1, count do
      chat.on_event({ type = "agent_message_delta", delta = (i % 12 == 0) and "word\n" or "word " })
      if i % 50 == 0 then
        chat.flush()
      end
    end
    chat.flush()
    return (vim.uv.hrtime() - started) / 1e6
  end
  chat.open()
  feed(2000)
  local small, large = feed(20000), feed(80000)
  io.stdout:write(("perf: 20,000 deltas appended in %.0f ms, 80,000 in %.0f ms\n"):format(small, large))
  -- Four times the deltas: about four times the time (quadratic would be sixteen).
  H.truthy(large < small * 7, ("80,000 deltas took %.0f ms, 20,000 took %.0f ms"):format(large, small))
  H.truthy(chat.text():find(("word "):rep(11) .. "word\n", 1, true), "the text is not whole")
end)

H.run("screen_spec")
