-- Control: stop a task, steer a running one, switch the mode, start a new session and
-- resume a saved one.
local H = require("helpers")

local dir = H.workspace("yolo")
local slow = {}
for i = 1, 20 do
  table.insert(slow, { type = "text", text = ("piece%d "):format(i) })
end
local url = H.mock(dir, {
  { kind = "stream", delay_ms = 300, chunks = slow },
  { kind = "stream", chunks = { { type = "tool_call", id = "c1", name = "bash", arguments = vim.json.encode({ command = "sleep 2" }) } } },
  { kind = "stream", chunks = { { type = "text", text = "Steered." } } },
})
H.setup(dir, url)

local choose
vim.ui.select = function(items, opts, on_choice)
  on_choice(choose(items, opts))
end

H.test(":CoderStop ends the running task while it streams", function()
  vim.cmd("Coder tell a long story")
  H.see("piece1 ")
  local started = vim.uv.hrtime()
  vim.cmd("CoderStop")
  H.wait_done(1, 3000)
  H.truthy((vim.uv.hrtime() - started) / 1e6 < 3000, "stopping took too long")
  H.see("Interrupted.")
  H.eq(nil, H.transcript():find("piece20", 1, true), "the whole answer came")
end)

H.test("input sent while a task runs steers it: the model reads it at its next step", function()
  vim.cmd("Coder wait a bit")
  H.see("Run `sleep 2`")
  H.truthy(require("coder.status").busy(require("coder.client").conversation()), "the task is not running")
  vim.cmd("Coder and then say steered")
  H.wait_done(2)
  H.see("Steered.")
  local requests = H.requests(url)
  H.truthy(vim.json.encode(requests[#requests]):find("and then say steered", 1, true), "the steering did not reach the model")
  -- Steered, not queued: the task was not followed by another.
  H.eq(3, #requests, "requests to the model")
end)

H.test(":CoderMode switches the mode and the statusline shows it", function()
  vim.cmd("CoderMode plan")
  H.see("Mode: plan")
  H.wait(3000, function()
    return require("coder").statusline():find("plan", 1, true) ~= nil
  end, "plan in the statusline: " .. require("coder").statusline())
  vim.cmd("CoderMode default")
  H.see("Mode: default (was plan)")
end)

H.test(":CoderSessions starts a new session, then resumes the saved one", function()
  local client = require("coder.client")
  local first = H.truthy(client.session(), "no session id")
  choose = function(items, opts)
    H.eq("coder.session", opts.kind, "the prompt's kind")
    return items[1].new and items[1] or nil
  end
  vim.cmd("CoderSessions")
  H.wait(10000, function()
    return client.session() ~= nil and client.session() ~= first and client.root() ~= nil
  end, "a new session")
  H.eq(nil, H.transcript():find("tell a long story", 1, true), "the old transcript is still shown")
  local offered
  choose = function(items, opts)
    offered = items
    for _, item in ipairs(items) do
      if item.sessionId == first then
        return item
      end
    end
    return nil
  end
  vim.cmd("CoderSessions")
  H.see("## You\n\ntell a long story")
  H.see("## You\n\nwait a bit")
  H.see("Steered.")
  H.eq(first, client.session(), "the session now")
  H.truthy(offered and offered[1].new, "the first choice is not a new session")
end)

H.test(":CoderSessions rewinds the conversation to before an input, and forks the session", function()
  local client = require("coder.client")
  local resumed = client.session()
  choose = function(items, opts)
    if opts.kind == "coder.session" then
      for _, item in ipairs(items) do
        if item.rewind then
          return item
        end
      end
    end
    H.eq("coder.point", opts.kind, "the second prompt's kind")
    H.eq("wait a bit", items[2].text, "the second input")
    return items[2]
  end
  vim.cmd("CoderSessions")
  H.wait(10000, function()
    local text = H.transcript()
    return text:find("tell a long story", 1, true) ~= nil and text:find("wait a bit", 1, true) == nil
  end, "the history without the second input:\n" .. H.transcript())
  choose = function(items, opts)
    if opts.kind == "coder.session" then
      for _, item in ipairs(items) do
        if item.fork then
          return item
        end
      end
    end
    return items[1]
  end
  vim.cmd("CoderSessions")
  H.wait(10000, function()
    return client.session() ~= resumed
  end, "a forked session")
  H.wait(10000, function()
    local text = H.transcript()
    return text:find("tell a long story", 1, true) == nil and text:find("## You", 1, true) == nil
  end, "the forked session's history, cut before the first input:\n" .. H.transcript())
end)

H.run("control_spec")
