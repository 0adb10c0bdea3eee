-- The connection to `coder lsp`, through Neovim's own LSP client: starting it, the
-- requests the plugin sends, and the engine's events handed to whoever listens.

local config = require("coder.config")
local protocol = require("coder.protocol")

local M = {}

local methods = protocol.methods

--- Calls method `name` of an LSP client object, as Neovim 0.11 (`client:name()`) and 0.10
--- (`client.name()`) each expect.
local function call(client, name, ...)
  if vim.fn.has("nvim-0.11") == 1 then
    return client[name](client, ...)
  end
  return client[name](...)
end
M.call = call

--- The running client's id, the root conversation, the session, and the event listeners.
local state = {
  client_id = nil,
  conversation = nil,
  session = nil,
  root = nil,
  listeners = {},
  request_handlers = {},
  starting = nil,
}

--- The absolute path of the `coder` program, or nil and why not.
---@return string|nil, string|nil
function M.executable()
  local cmd = config.options.cmd
  local path = vim.fn.exepath(cmd)
  if path == "" then
    return nil, ("`%s` is neither an executable file nor a program in PATH"):format(cmd)
  end
  return path, nil
end

--- The workspace the engine opens.
---@return string
function M.root_dir()
  local root = config.options.root_dir
  if type(root) == "function" then
    root = root()
  end
  if type(root) == "string" and root ~= "" then
    return vim.fs.normalize(vim.fn.fnamemodify(root, ":p")):gsub("/$", "")
  end
  local cwd = vim.fn.getcwd()
  local git = vim.fs.find(".git", { path = cwd, upward = true })[1]
  if git then
    return vim.fs.dirname(git)
  end
  return cwd
end

--- Calls `fn(event)` for every engine event; returns a function that stops it.
---@param fn fun(event: table)
---@return fun()
function M.on_event(fn)
  state.listeners[fn] = true
  return function()
    state.listeners[fn] = nil
  end
end

--- Sets who answers a server request (`permission/request`, `workspace/applyEdit`). The
--- handler runs inside a coroutine and may yield until a person answers.
---@param method string
---@param fn fun(params: table, ctx: table): table|nil, table|nil
function M.on_request(method, fn)
  state.request_handlers[method] = fn
end

--- Runs `ask(callback)` (a `vim.ui` function) from inside a request handler's coroutine and
--- returns what the callback received, so a handler waits for a person without blocking
--- the editor.
function M.await(ask)
  local co, main = coroutine.running()
  if not co or main then
    error("coder: a request from the engine must be answered from its coroutine")
  end
  ask(function(...)
    local n, results = select("#", ...), { ... }
    -- The default `vim.ui.select` answers before it returns: resume only once yielded.
    vim.schedule(function()
      coroutine.resume(co, unpack(results, 1, n))
    end)
  end)
  return coroutine.yield()
end

local function emit(event)
  for fn in pairs(state.listeners) do
    local ok, err = pcall(fn, event)
    if not ok then
      vim.notify("coder: " .. tostring(err), vim.log.levels.ERROR)
    end
  end
end

--- The running LSP client, or nil.
function M.get()
  if not state.client_id then
    return nil
  end
  local client = vim.lsp.get_client_by_id(state.client_id)
  if client and call(client, "is_stopped") then
    return nil
  end
  return client
end

--- The conversation the chat talks to (the session's root until another is chosen).
function M.conversation()
  return state.conversation
end

--- Chooses the conversation the chat talks to.
function M.set_conversation(id)
  state.conversation = id
end

--- The root conversation of the session.
function M.root()
  return state.root
end

--- The session's id, as `initialize` reported it.
function M.session()
  return state.session
end

--- Records the session the connection went on in (after `session/resume`).
function M.set_session(id)
  state.session = id
end


local function attach_buffer(client, buf)
  if not vim.api.nvim_buf_is_loaded(buf) or vim.bo[buf].buftype ~= "" then
    return
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == "" or not vim.startswith(vim.fs.normalize(name), client.root_dir .. "/") then
    return
  end
  if not vim.lsp.buf_is_attached(buf, client.id) then
    vim.lsp.buf_attach_client(buf, client.id)
  end
end

local group = vim.api.nvim_create_augroup("coder.client", { clear = true })

--- Asks for the session's conversations and keeps the root's id; then calls `done`.
local function find_root(client, done)
  call(client, "request", methods.list, vim.empty_dict(), function(err, result)
    if err or not result then
      vim.notify("coder: conversation/list failed: " .. vim.inspect(err), vim.log.levels.ERROR)
      return done(nil)
    end
    for _, conversation in ipairs(result.conversations) do
      if conversation.isRoot then
        state.root = conversation.id
        state.conversation = state.conversation or conversation.id
      end
    end
    done(client)
  end)
end

--- Starts `coder lsp` (unless it runs) and calls `done(client)` once it is ready, or
--- `done(nil)` when it cannot start. `opts.session` resumes a saved session at start.
---@param done fun(client: table|nil)
---@param opts table|nil
function M.ensure(done, opts)
  local running = M.get()
  if running and running.initialized and state.root then
    return done(running)
  end
  if state.starting then
    table.insert(state.starting, done)
    return
  end
  local path, why = M.executable()
  if not path then
    return done(nil, why)
  end
  state.starting = { done }
  -- The program must answer `--version`; a program that does not is named at once rather
  -- than failing later as a dead connection.
  if state.checked ~= path then
    state.checked = path
    vim.system({ path, "--version" }, { text = true }, function(result)
      if result.code ~= 0 or not (result.stdout or ""):match("^coder") then
        vim.schedule(function()
          vim.notify(("coder: `%s --version` did not answer as coder does (exit %d); see :checkhealth coder")
            :format(path, result.code), vim.log.levels.WARN)
        end)
      end
    end)
  end
  local function finish(client)
    local waiting = state.starting or {}
    state.starting = nil
    for _, fn in ipairs(waiting) do
      fn(client)
    end
  end
  local init = vim.deepcopy(config.options.engine)
  if opts and opts.session then
    init.sessionId = opts.session
  end
  if vim.tbl_isempty(init) then
    init = vim.empty_dict()
  end
  local cmd = { path, "lsp", "--stdio" }
  vim.list_extend(cmd, config.options.args)
  local root = M.root_dir()
  local lsp_config = {
    name = "coder",
    cmd = require("coder.transport").command(cmd, { cwd = root, env = config.options.env }),
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = init,
    handlers = {
      [methods.event] = function(_, params)
        if params and params.event then
          emit(params.event)
        end
      end,
    },
    on_init = function(client, result)
      local coder = result.capabilities.experimental and result.capabilities.experimental.coder
      state.session = coder and coder.sessionId or nil
      vim.schedule(function()
        find_root(client, finish)
      end)
    end,
    on_exit = function(code, signal, client_id)
      vim.schedule(function()
        if state.client_id == client_id then
          state.client_id = nil
          state.root = nil
          state.conversation = nil
          emit({ type = "client_exited", code = code, signal = signal })
        end
        if state.starting then
          finish(nil)
        end
      end)
    end,
  }
  for method, fn in pairs(state.request_handlers) do
    lsp_config.handlers[method] = function(err, params, ctx)
      if err then
        return nil, err
      end
      return fn(params, ctx)
    end
  end
  local id
  if vim.fn.has("nvim-0.11") == 1 then
    id = vim.lsp.start(lsp_config, { attach = false, reuse_client = function()
      return false
    end })
  else
    id = vim.lsp.start_client(lsp_config)
  end
  if not id then
    finish(nil)
    return
  end
  state.client_id = id
  state.root = nil
  state.conversation = nil
  local client = vim.lsp.get_client_by_id(id)
  if client then
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      attach_buffer(client, buf)
    end
  end
  vim.api.nvim_clear_autocmds({ group = group })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    callback = function(args)
      local current = M.get()
      if current then
        attach_buffer(current, args.buf)
      end
    end,
  })
end

--- Stops the client (the engine saves the session) and forgets its state.
function M.stop()
  local client = M.get()
  state.client_id = nil
  state.root = nil
  state.conversation = nil
  state.session = nil
  if client then
    call(client, "stop")
  end
end

--- Sends a request once the client runs; `callback(err, result)`.
---@param method string
---@param params table
---@param callback fun(err: table|nil, result: any)|nil
function M.request(method, params, callback)
  callback = callback or function(err)
    if err then
      vim.notify(("coder: %s: %s"):format(method, err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
  end
  M.ensure(function(client)
    if not client then
      return callback({ message = "coder is not running" }, nil)
    end
    call(client, "request", method, params, function(err, result)
      callback(err, result)
    end)
  end)
end

return M
