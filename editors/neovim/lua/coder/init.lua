-- coder for Neovim: a chat with the coder engine over `coder lsp`, through Neovim's own
-- LSP client. This module is the public API; `plugin/coder.lua` maps commands onto it.

local config = require("coder.config")
local client = require("coder.client")
local chat = require("coder.chat")
local status = require("coder.status")
local protocol = require("coder.protocol")

local M = {}

local methods = protocol.methods
local hooked = false

--- Connects the modules to the client once: events to the chat, the server's requests to
--- their handlers.
local function hook()
  if hooked then
    return
  end
  hooked = true
  client.on_event(chat.on_event)
  client.on_event(function(event)
    require("coder.approvals").on_event(event)
  end)
  client.on_request(methods.permission_request, function(params)
    return require("coder.approvals").handle(params)
  end)
  client.on_request("workspace/applyEdit", function(params, ctx)
    return require("coder.review").handle(params, ctx)
  end)
end

--- Sets the options (merged over the defaults; `:h coder-options`).
---@param opts table|nil
function M.setup(opts)
  config.setup(opts)
  hook()
  -- nvim-cmp, when installed, gets the `coder` source (blink.cmp loads it by module name).
  local has_cmp, cmp = pcall(require, "cmp")
  if has_cmp and type(cmp.register_source) == "function" and not M.cmp_registered then
    M.cmp_registered = true
    cmp.register_source("coder", require("coder.sources").cmp())
  end
end

--- Asks the engine for the conversation's mode, so the statusline shows it from the start
--- and not only once it changes. The session's snapshot holds the mode only when its events
--- are no longer kept, so the plugin asks as a person does: a bare `/mode` answers
--- `mode: <name>` and changes nothing.
local function read_mode()
  local conversation = client.conversation()
  client.request(methods.command, { conversationId = conversation, command = "/mode" }, function(err, result)
    local mode = not err and type(result) == "table" and type(result.text) == "string"
      and result.text:match("^mode: ([%w-]+)")
    if mode and vim.tbl_contains(protocol.modes, mode) and client.conversation() == conversation then
      status.set_mode(mode)
    end
  end)
end

--- Starts the engine if it does not run, then calls `done(client)`.
function M.start(done, opts)
  hook()
  local fresh = client.get() == nil
  client.ensure(function(running, why)
    if running and fresh then
      status.reset()
      read_mode()
    end
    if not running then
      chat.notice(("coder did not start: %s; see :checkhealth coder"):format(why or "it exited"), "CoderError")
    end
    if done then
      done(running)
    end
  end, opts)
end

local function report(what)
  return function(err)
    if err then
      chat.notice(("%s failed: %s"):format(what, err.message or vim.inspect(err)), "CoderError")
    end
  end
end

--- Sends a person's input to the conversation. While a task of it runs, the input steers
--- it or waits behind it (the `busy_input` option); a `/command` always waits.
---@param text string
function M.send(text)
  hook()
  chat.open_buffer()
  chat.user(text)
  M.start(function(running)
    if not running then
      return
    end
    local params = { conversationId = client.conversation(), text = text }
    -- Steering hands the text to the running task's model as it is, and a `/command` is
    -- only run when sent: a command always goes by `conversation/send`, which queues it.
    local steer = config.options.busy_input == "steer" and status.busy(client.conversation())
      and not vim.startswith(vim.trim(text), "/")
    local method = steer and methods.steer or methods.send
    client.request(method, params, function(err, result)
      if err then
        return report("sending")(err)
      end
      -- A built-in command (`/help`, `/mode plan`) answers at once with its text.
      if result and type(result.text) == "string" and result.taskId == nil then
        chat.notice(result.text)
      end
      M.follow_command(result)
    end)
  end)
end

--- Opens the chat (sending `prompt` when given).
function M.open(prompt)
  chat.open()
  if prompt and prompt ~= "" then
    M.send(prompt)
  end
end

--- `:'<,'>Coder {prompt}`: the prompt with lines `line1` to `line2` of the current buffer.
function M.send_range(prompt, line1, line2)
  local buf = vim.api.nvim_get_current_buf()
  local lines = vim.api.nvim_buf_get_lines(buf, line1 - 1, line2, false)
  local name = vim.api.nvim_buf_get_name(buf)
  local path = name ~= "" and vim.fn.fnamemodify(name, ":.") or "[No Name]"
  local text = ("%s\n\nFrom %s, lines %d-%d:\n```%s\n%s\n```"):format(
    prompt ~= "" and prompt or "Look at this code.",
    path,
    line1,
    line2,
    vim.bo[buf].filetype,
    table.concat(lines, "\n")
  )
  M.open(text)
end

--- Sends the diagnostics of the cursor's line, with the line, asking for a fix.
function M.diagnostic(prompt)
  local buf = vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local found = vim.diagnostic.get(buf, { lnum = row - 1 })
  if #found == 0 then
    vim.notify("coder: no diagnostic on this line", vim.log.levels.WARN)
    return
  end
  local path = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ":.")
  local lines = { prompt ~= "" and prompt or "Fix this diagnostic.", "" }
  for _, d in ipairs(found) do
    table.insert(lines, ("%s:%d:%d: %s: %s"):format(path, d.lnum + 1, d.col + 1,
      vim.diagnostic.severity[d.severity] or "?", d.message))
  end
  table.insert(lines, "")
  table.insert(lines, "The line: " .. (vim.api.nvim_buf_get_lines(buf, row - 1, row, false)[1] or ""))
  M.open(table.concat(lines, "\n"))
end

--- Interrupts the running task.
function M.stop()
  if not client.get() or not client.conversation() then
    return
  end
  client.request(methods.interrupt, { conversationId = client.conversation() }, report("stopping"))
end

--- Switches the conversation's mode; asks which when `mode` is nil.
function M.mode(mode)
  local function set(choice)
    if not choice then
      return
    end
    M.start(function(running)
      if running then
        client.request(methods.set_mode, { conversationId = client.conversation(), mode = choice }, function(err)
          if err then
            return report("setting the mode")(err)
          end
          status.set_mode(choice)
        end)
      end
    end)
  end
  if mode and mode ~= "" then
    return set(mode)
  end
  vim.ui.select(protocol.modes, { prompt = "coder mode: ", kind = "coder.mode" }, set)
end

--- Runs one of the engine's slash commands and shows its answer.
function M.command(text)
  M.start(function(running)
    if not running then
      return
    end
    client.request(methods.command, { conversationId = client.conversation(), command = text }, function(err, result)
      if err then
        return report(text)(err)
      end
      chat.open_buffer()
      chat.notice(result.text or "")
      M.follow_command(result)
    end)
  end)
end

--- A command that names another conversation (`/new`) moves the chat to it.
function M.follow_command(result)
  if type(result) == "table" and type(result.conversationId) == "string"
    and result.conversationId ~= client.conversation() then
    client.set_conversation(result.conversationId)
    chat.reset()
    chat.notice(("Conversation %s (:CoderConversations goes back)."):format(result.conversationId:sub(1, 8)))
  end
end

--- Switches the model (`/model name`), or shows the current one.
function M.model(name)
  M.command(name and name ~= "" and ("/model " .. name) or "/model")
end

--- Shows the history of the chosen conversation.
local function show_history()
  client.request(methods.history, { conversationId = client.conversation() }, function(err, result)
    if err then
      return report("reading the history")(err)
    end
    chat.reset()
    chat.history(result.entries or {})
  end)
end

--- Asks for one of the conversation's points (the inputs a person sent it), then calls
--- `done(point)`.
local function choose_point(prompt, done)
  client.request(methods.points, { conversationId = client.conversation() }, function(err, result)
    if err then
      return report("listing the inputs")(err)
    end
    if #(result.points or {}) == 0 then
      chat.notice("The conversation has no input to go back to.", "CoderWarning")
      return
    end
    vim.ui.select(result.points, {
      prompt = prompt,
      kind = "coder.point",
      format_item = function(point)
        return ("%d. %s  (%d messages from it on)"):format(point.point, point.text, point.messages)
      end,
    }, function(choice)
      if choice then
        done(choice.point)
      end
    end)
  end)
end

--- Asks for one of the conversation's points, sends `method` for it, and shows the
--- conversation as it is then, with the engine's answer; `after(result)` runs first when
--- given. `what` names the action in an error.
local function go_back(prompt, method, what, after)
  choose_point(prompt, function(point)
    client.request(method, { conversationId = client.conversation(), point = point }, function(err, result)
      if err then
        return report(what)(err)
      end
      if after then
        after(result)
      end
      show_history()
      vim.schedule(function()
        chat.notice(result.text)
      end)
    end)
  end)
end

--- Forks the session before one of the conversation's inputs: the connection goes on in
--- the new session, the one it came from stays on disk as it was.
function M.fork()
  go_back("fork before: ", methods.session_fork, "forking", function(result)
    client.set_session(result.sessionId)
  end)
end

--- Takes the conversation (and the files its turns changed) back to before one of its
--- inputs.
function M.rewind()
  go_back("rewind to before: ", methods.rewind, "rewinding")
end

--- `:CoderSessions`: a new session, a fork or a rewind of this one, or one of the
--- workspace's saved sessions to resume.
function M.sessions()
  M.start(function(running)
    if not running then
      return
    end
    client.request(methods.session_list, vim.empty_dict(), function(err, result)
      if err then
        return report("listing the sessions")(err)
      end
      local items = { { new = true }, { fork = true }, { rewind = true } }
      for _, session in ipairs(result.sessions or {}) do
        if session.sessionId ~= client.session() then
          table.insert(items, session)
        end
      end
      vim.ui.select(items, {
        prompt = "coder session: ",
        kind = "coder.session",
        format_item = function(item)
          if item.new then
            return "New session"
          elseif item.fork then
            return "Fork this session before one of its inputs"
          elseif item.rewind then
            return "Rewind this conversation to before one of its inputs"
          end
          local title = type(item.title) == "string" and item.title or "(no title)"
          return ("%s  %s  (%d messages)"):format(item.savedAt or "", title, item.messages or 0)
        end,
      }, function(choice)
        if not choice then
          return
        end
        if choice.new then
          client.stop()
          chat.reset()
          M.start(function() end)
          return
        elseif choice.fork then
          return M.fork()
        elseif choice.rewind then
          return M.rewind()
        end
        client.request(methods.session_resume, { sessionId = choice.sessionId }, function(resume_err)
          if resume_err then
            return report("resuming")(resume_err)
          end
          -- The resumed session's conversations replace this one's: find its root again.
          client.request(methods.list, vim.empty_dict(), function(list_err, list)
            if list_err then
              return report("listing the conversations")(list_err)
            end
            for _, conversation in ipairs(list.conversations) do
              if conversation.isRoot then
                client.set_conversation(conversation.id)
              end
            end
            client.set_session(choice.sessionId)
            show_history()
          end)
        end)
      end)
    end)
  end)
end

--- `:CoderConversations`: chooses which of the session's conversations the chat shows.
function M.conversations()
  client.request(methods.list, vim.empty_dict(), function(err, result)
    if err then
      return report("listing the conversations")(err)
    end
    vim.ui.select(result.conversations, {
      prompt = "coder conversation: ",
      kind = "coder.conversation",
      format_item = function(c)
        return ("%s%s  (%d messages)"):format(c.id:sub(1, 8), c.isRoot and " root" or "", c.messageCount or 0)
      end,
    }, function(choice)
      if choice then
        client.set_conversation(choice.id)
        show_history()
      end
    end)
  end)
end

--- The statusline component (`coder: running · plan · ctx 12%`), for lualine or a plain
--- `statusline`.
function M.statusline()
  return status.statusline()
end

return M
