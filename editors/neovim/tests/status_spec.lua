-- The statusline: it shows the conversation's mode as the engine holds it from the start,
-- not only once the mode changes.
local H = require("helpers")

local dir = H.workspace("balanced")
-- The configured mode is one the plugin cannot guess: the engine starts in it.
H.write(dir .. "/.config/coder/config.json", vim.json.encode({ permissions = { preset = "balanced" }, mode = "plan" }))
local url = H.mock(dir, {})
H.setup(dir, url)

H.test("the statusline shows the engine's mode as soon as the engine runs", function()
  local started = false
  require("coder").start(function(running)
    started = running
  end)
  H.wait(15000, function()
    return started
  end, "the engine to start")
  local shown
  local ok = vim.wait(5000, function()
    shown = require("coder").statusline()
    return shown == "coder: idle · plan"
  end, 10)
  H.truthy(ok, "the statusline does not show the mode; it says " .. vim.inspect(shown))
end)

H.run("status_spec")
