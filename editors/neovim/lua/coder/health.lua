-- `:checkhealth coder`: the program, its version, the provider configuration (never a
-- key), the workspace and its trust, and Neovim's version.

local client = require("coder.client")
local config = require("coder.config")

local M = {}

local health = vim.health

--- Reads a JSON file; nil when it is missing or does not parse (and why).
local function read_json(path)
  local file = io.open(path, "r")
  if not file then
    return nil, nil
  end
  local text = file:read("*a")
  file:close()
  local ok, value = pcall(vim.json.decode, text, { luanil = { object = true, array = true } })
  if not ok or type(value) ~= "table" then
    return nil, "does not parse"
  end
  return value, nil
end

local function user_config_path()
  local base = os.getenv("XDG_CONFIG_HOME")
  if not base or base == "" then
    base = vim.fs.joinpath(os.getenv("HOME") or "~", ".config")
  end
  return vim.fs.joinpath(base, "coder", "config.json")
end

--- The provider settings of one source, keys replaced by whether they are set.
local function describe(source, settings)
  local parts = {}
  for _, key in ipairs({ "provider", "model", "baseUrl" }) do
    if type(settings[key]) == "string" then
      table.insert(parts, ("%s=%s"):format(key, settings[key]))
    end
  end
  if settings.apiKey ~= nil then
    table.insert(parts, "apiKey set")
  end
  if #parts > 0 then
    health.info(("%s: %s"):format(source, table.concat(parts, ", ")))
    return true
  end
  return false
end

function M.check()
  health.start("coder: Neovim")
  local version = vim.version()
  local shown = ("%d.%d.%d"):format(version.major, version.minor, version.patch)
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. shown)
  else
    health.error("Neovim " .. shown .. ": the plugin needs 0.10 or later")
  end

  health.start("coder: program")
  local path, why = client.executable()
  if not path then
    health.error(why, { "Install coder, or set `cmd` in setup() to its path." })
  else
    health.ok("found: " .. path)
    local ok, result = pcall(function()
      return vim.system({ path, "--version" }, { text = true }):wait(5000)
    end)
    if ok and result.code == 0 then
      health.ok("version: " .. vim.trim(result.stdout))
    else
      health.error("`" .. path .. " --version` failed: " .. vim.trim((ok and result.stderr) or tostring(result)))
    end
  end

  health.start("coder: provider")
  local root = client.root_dir()
  local any = describe("setup({ engine })", config.options.engine)
  for _, name in ipairs({ "OPENAI_API_KEY", "ANTHROPIC_API_KEY" }) do
    if os.getenv(name) and os.getenv(name) ~= "" then
      health.info(name .. " is set")
      any = true
    end
  end
  if os.getenv("OPENAI_BASE_URL") and os.getenv("OPENAI_BASE_URL") ~= "" then
    health.info("OPENAI_BASE_URL=" .. os.getenv("OPENAI_BASE_URL"))
  end
  local user_path = user_config_path()
  local user, user_err = read_json(user_path)
  if user_err then
    health.error(user_path .. " " .. user_err)
  elseif user then
    any = describe(user_path, user) or any
  end
  local workspace_path = vim.fs.joinpath(root, ".coder", "config.json")
  local workspace, workspace_err = read_json(workspace_path)
  if workspace_err then
    health.error(workspace_path .. " " .. workspace_err)
  elseif workspace then
    any = describe(workspace_path, workspace) or any
  end
  if any then
    health.ok("a provider is configured (the engine checks it when the chat starts)")
  else
    health.warn("no provider found", {
      "Set OPENAI_API_KEY or ANTHROPIC_API_KEY, `provider` in coder's config.json, or `engine` in setup().",
    })
  end

  health.start("coder: workspace")
  health.info("workspace: " .. root)
  local trust = config.options.engine.trustWorkspace
  if trust == true then
    health.info("trusted by setup({ engine = { trustWorkspace = true } })")
  elseif trust == false then
    health.info("not trusted (setup({ engine = { trustWorkspace = false } })): its config may only narrow")
  else
    local listed = false
    for _, folder in ipairs((user and user.trustedFolders) or {}) do
      if type(folder) == "string" and vim.fs.normalize(folder) == root then
        listed = true
      end
    end
    health.info(listed and ("trusted: listed in trustedFolders of " .. user_path)
      or ("not listed in trustedFolders of " .. user_path .. ": its config may only narrow"))
  end
  local running = client.get()
  if running then
    health.ok(("running: session %s"):format(client.session() or "?"))
  else
    health.info("not running (it starts with the first :Coder)")
  end
end

return M
