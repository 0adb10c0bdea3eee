-- The JSON-RPC transport under Neovim's LSP client (`vim.lsp.start`'s `cmd` as a
-- function). Neovim's own transport decodes and dispatches every message of a read at
-- once, so a streamed answer of thousands of deltas keeps the editor busy for hundreds of
-- milliseconds at a time. This one reads frames in time linear in their size and hands the
-- messages to the client in slices of a few milliseconds, letting the editor redraw and
-- take keys between slices. It speaks the same JSON-RPC; nothing of the protocol is decided
-- here.

local uv = vim.uv

local M = {}

--- How long one slice of dispatching may keep the main loop, in milliseconds.
M.slice_ms = 6

--- The longest slice so far, in milliseconds of processor time, for the performance test.
M.stats = { longest_slice_ms = 0 }

--- Starts `cmd` and returns the function `vim.lsp.start` takes as `cmd`.
---@param cmd string[]
---@param opts { cwd: string|nil, env: table|nil }
function M.command(cmd, opts)
  return function(dispatchers)
    return M.start(cmd, opts, dispatchers)
  end
end

local function environment(extra)
  local env = vim.fn.environ()
  for key, value in pairs(extra or {}) do
    env[key] = tostring(value)
  end
  local list = {}
  for key, value in pairs(env) do
    table.insert(list, key .. "=" .. value)
  end
  return list
end

--- Starts the process and returns the RPC object Neovim's LSP client drives.
function M.start(cmd, opts, dispatchers)
  local stdin, stdout, stderr = assert(uv.new_pipe()), assert(uv.new_pipe()), assert(uv.new_pipe())
  local closing = false
  local next_id = 0
  local callbacks = {}
  -- Frames read but not yet dispatched, and where the unread part of the input starts.
  local bodies, first, last = {}, 1, 0
  local pending = ""
  local timer = assert(uv.new_timer())
  local armed = false

  local function send(message)
    if closing or stdin:is_closing() then
      return false
    end
    local body = vim.json.encode(message)
    stdin:write(("Content-Length: %d\r\n\r\n%s"):format(#body, body))
    return true
  end

  local function respond(id, result, err)
    send({ jsonrpc = "2.0", id = id, result = err == nil and (result == nil and vim.NIL or result) or nil, error = err })
  end

  local function dispatch(message)
    if message.method and message.id ~= nil then
      -- A request from the server: its handler may wait for a person (a coroutine).
      coroutine.wrap(function()
        local ok, result, err = pcall(dispatchers.server_request, message.method, message.params)
        if not ok then
          respond(message.id, nil, { code = -32603, message = tostring(result) })
        else
          respond(message.id, result, err)
        end
      end)()
    elseif message.method then
      dispatchers.notification(message.method, message.params)
    elseif message.id ~= nil then
      local callback = callbacks[message.id]
      callbacks[message.id] = nil
      if callback then
        local err = message.error
        if err == vim.NIL then
          err = nil
        end
        callback(err, err == nil and message.result or nil)
      end
    end
  end

  local process
  local function arm()
    if not armed and not closing then
      armed = true
      timer:start(0, 0, function()
        vim.schedule(process)
      end)
    end
  end

  --- Decodes and dispatches queued messages for at most `slice_ms`; the rest waits for the
  --- next turn of the event loop.
  process = function()
    armed = false
    local started = os.clock()
    local deadline = uv.hrtime() + M.slice_ms * 1e6
    while first <= last do
      local body = bodies[first]
      bodies[first] = nil
      first = first + 1
      local ok, message = pcall(vim.json.decode, body, { luanil = { object = true } })
      if ok and type(message) == "table" then
        local handled, err = pcall(dispatch, message)
        if not handled then
          vim.notify("coder: " .. tostring(err), vim.log.levels.ERROR)
        end
      else
        dispatchers.on_error(1, "a message that is not JSON: " .. body:sub(1, 200))
      end
      if uv.hrtime() > deadline then
        break
      end
    end
    M.stats.longest_slice_ms = math.max(M.stats.longest_slice_ms, (os.clock() - started) * 1000)
    if first <= last then
      arm()
    else
      bodies, first, last = {}, 1, 0
    end
  end

  --- Splits what was read into frames, in one pass over it.
  local function on_read(err, chunk)
    if err or not chunk then
      return
    end
    local data = pending .. chunk
    local pos = 1
    while true do
      local header_end = data:find("\r\n\r\n", pos, true)
      if not header_end then
        break
      end
      local length = tonumber(data:sub(pos, header_end):match("[Cc]ontent%-[Ll]ength:%s*(%d+)"))
      if not length then
        -- Not a header block: skip past it, as a server's stray output is not ours to read.
        pos = header_end + 4
      else
        local body_start = header_end + 4
        if #data - body_start + 1 < length then
          break
        end
        last = last + 1
        bodies[last] = data:sub(body_start, body_start + length - 1)
        pos = body_start + length
      end
    end
    pending = data:sub(pos)
    arm()
  end

  local path = cmd[1]
  local handle, pid_or_err
  handle, pid_or_err = uv.spawn(path, {
    args = vim.list_slice(cmd, 2),
    stdio = { stdin, stdout, stderr },
    cwd = opts.cwd,
    env = environment(opts.env),
  }, function(code, signal)
    closing = true
    for _, pipe in ipairs({ stdin, stdout, stderr }) do
      if not pipe:is_closing() then
        pipe:close()
      end
    end
    if handle and not handle:is_closing() then
      handle:close()
    end
    vim.schedule(function()
      -- Messages read before the end still count.
      while first <= last do
        process()
      end
      if not timer:is_closing() then
        timer:close()
      end
      dispatchers.on_exit(code, signal)
    end)
  end)
  if not handle then
    for _, pipe in ipairs({ stdin, stdout, stderr }) do
      pipe:close()
    end
    timer:close()
    error(("coder: cannot start %s: %s"):format(path, tostring(pid_or_err)))
  end
  stdout:read_start(on_read)
  -- The engine logs to stderr; it is read so that it never blocks on a full pipe.
  stderr:read_start(function() end)

  local rpc = {}

  function rpc.request(method, params, callback, notify_reply_callback)
    next_id = next_id + 1
    local id = next_id
    if not send({ jsonrpc = "2.0", id = id, method = method, params = params }) then
      return false
    end
    callbacks[id] = function(err, result)
      if notify_reply_callback then
        notify_reply_callback(id)
      end
      callback(err, result)
    end
    return true, id
  end

  function rpc.notify(method, params)
    return send({ jsonrpc = "2.0", method = method, params = params })
  end

  function rpc.is_closing()
    return closing or handle:is_closing()
  end

  function rpc.terminate()
    if not handle:is_closing() then
      handle:kill(15)
    end
  end

  return rpc
end

return M
