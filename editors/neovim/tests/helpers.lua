-- A small test runner for the plugin in headless Neovim, against a real `coder lsp` and the
-- scripted model (`coder-mock-model`). Each spec file runs in its own Neovim with its own
-- workspace and model; `H.run()` runs its tests in order and exits 0 when all pass.
--
-- Environment: CODER_BIN, CODER_MOCK_BIN (the two programs), CODER_TEST_TMP (where
-- workspaces go).

local H = {}

local tests = {}
local cleanups = {}

--- Registers a test.
function H.test(name, fn)
  local only = os.getenv("CODER_ONLY")
  if only and only ~= "" and not name:find(only, 1, true) then
    return
  end
  table.insert(tests, { name = name, fn = fn })
end

--- Runs `fn` when the spec ends, pass or fail.
function H.cleanup(fn)
  table.insert(cleanups, fn)
end

--- Waits until `cond()` is true, or fails the test saying `what`.
function H.wait(ms, cond, what)
  local ok = vim.wait(ms, cond, 10)
  if not ok then
    error(("timed out after %d ms waiting for %s"):format(ms, what), 2)
  end
end

function H.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error(("%s: expected %s, got %s"):format(what or "values differ", vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

function H.truthy(value, what)
  if not value then
    error(what or "expected a true value", 2)
  end
  return value
end

--- Writes `text` to `path`.
function H.write(path, text)
  vim.fn.mkdir(vim.fs.dirname(path), "p")
  local file = assert(io.open(path, "w"))
  file:write(text)
  file:close()
end

function H.read(path)
  local file = io.open(path, "r")
  if not file then
    return nil
  end
  local text = file:read("*a")
  file:close()
  return text
end

--- A fresh workspace whose user-level config (HOME is the workspace) sets the permission
--- `preset`; it is removed when the spec ends.
function H.workspace(preset)
  local base = os.getenv("CODER_TEST_TMP") or vim.fn.tempname()
  vim.fn.mkdir(base, "p")
  local dir = vim.fn.resolve((vim.fn.tempname():gsub("^.*/", base .. "/ws-")))
  vim.fn.mkdir(dir .. "/.coder", "p")
  H.write(dir .. "/.config/coder/config.json", vim.json.encode({ permissions = { preset = preset or "balanced" } }))
  H.cleanup(function()
    vim.fn.delete(dir, "rf")
  end)
  return dir
end

--- Starts the scripted model with `script` (a list of responses, server/testkit's format);
--- returns its base URL. It is stopped when the spec ends.
function H.mock(dir, script)
  local path = dir .. "/.mock-script.json"
  H.write(path, vim.json.encode(script))
  local url
  local proc = vim.system({ assert(os.getenv("CODER_MOCK_BIN"), "CODER_MOCK_BIN"), "--script", path }, {
    stdout = function(_, data)
      if data and not url then
        url = data:match("(http://[^\n]+)")
      end
    end,
  })
  H.cleanup(function()
    proc:kill(15)
    proc:wait(2000)
  end)
  H.wait(10000, function()
    return url ~= nil
  end, "the mock model's address")
  return url
end

--- The requests the model received, decoded.
function H.requests(url)
  local result = vim.system({ "curl", "-sf", url .. "/_mock/requests" }, { text = true }):wait(5000)
  assert(result.code == 0, "reading the mock's requests failed")
  return vim.json.decode(result.stdout)
end

--- Sets the plugin up against `dir` and the model at `url`; extra options merged in.
function H.setup(dir, url, opts)
  vim.cmd.cd(dir)
  require("coder").setup(vim.tbl_deep_extend("force", {
    cmd = assert(os.getenv("CODER_BIN"), "CODER_BIN"),
    root_dir = dir,
    env = { HOME = dir, OPENAI_BASE_URL = url .. "/v1", OPENAI_API_KEY = "k", XDG_CONFIG_HOME = dir .. "/.config" },
    chat = { flush_ms = 10 },
  }, opts or {}))
  H.cleanup(function()
    require("coder.client").stop()
    vim.wait(3000, function()
      return #vim.lsp.get_clients({ name = "coder" }) == 0
    end, 20)
  end)
end

--- The chat's transcript.
function H.transcript()
  return require("coder.chat").text()
end

--- Waits until the transcript contains `text` (plain).
function H.see(text, ms)
  H.wait(ms or 15000, function()
    return H.transcript():find(text, 1, true) ~= nil
  end, ("%q in the chat; it holds:\n%s"):format(text, H.transcript()))
end

--- Waits for `User CoderTaskDone` events to have come `count` times in all.
local done_count = 0
vim.api.nvim_create_autocmd("User", {
  pattern = "CoderTaskDone",
  callback = function()
    done_count = done_count + 1
  end,
})
function H.tasks_done()
  return done_count
end
function H.wait_done(count, ms)
  H.wait(ms or 20000, function()
    return done_count >= count
  end, ("%d finished tasks (got %d); the chat holds:\n%s"):format(count, done_count, H.transcript()))
end

--- Runs the registered tests and quits Neovim: 0 when all passed, else 1.
function H.run(spec)
  local failed = 0
  for _, t in ipairs(tests) do
    local ok, err = xpcall(t.fn, debug.traceback)
    if ok then
      io.stdout:write(("PASS %s: %s\n"):format(spec, t.name))
    else
      failed = failed + 1
      io.stdout:write(("FAIL %s: %s\n%s\n"):format(spec, t.name, err))
    end
  end
  for i = #cleanups, 1, -1 do
    pcall(cleanups[i])
  end
  io.stdout:flush()
  if failed > 0 then
    vim.cmd("cquit 1")
  else
    vim.cmd("qall!")
  end
end

return H
