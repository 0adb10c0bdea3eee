-- Headless Neovim (0.7 and later; CI runs 0.11.4) drives `coder lsp` with its built-in LSP
-- client and nothing else: it creates a conversation, sends a message and checks the
-- streamed reply. This covers Neovim's own transport and JSON encoding (an empty table sent
-- as `[]`), which the plugin in editors/neovim replaces with its own.
--
-- Run: CODER_BIN=... OPENAI_BASE_URL=... nvim --headless -u NONE -c "luafile lsp_test.lua"
-- Exits 0 on success; on failure prints the reason and exits 1.

local function finish(ok, message)
  if not ok then
    io.stderr:write("FAIL: " .. message .. "\n")
    vim.cmd("cquit 1")
  else
    io.stdout:write("PASS: " .. message .. "\n")
    vim.cmd("qall!")
  end
end

local deltas = {}
local done = false
local client_id = vim.lsp.start_client({
  name = "coder",
  cmd = { os.getenv("CODER_BIN"), "lsp", "--stdio" },
  cmd_cwd = os.getenv("CODER_WORKSPACE"),
  handlers = {
    ["conversation/event"] = function(_, params)
      local event = params.event
      if event.type == "agent_message_delta" then
        table.insert(deltas, event.delta)
      elseif event.type == "task_complete" then
        done = true
      end
    end,
  },
})
if not client_id then
  finish(false, "coder lsp did not start")
  return
end

local client
vim.wait(10000, function()
  client = vim.lsp.get_client_by_id(client_id)
  return client ~= nil and client.initialized
end, 20)
if not (client and client.initialized) then
  finish(false, "the client did not initialize")
  return
end

local coder = client.server_capabilities.experimental and client.server_capabilities.experimental.coder
if not coder or coder.protocolVersion ~= "0.1" then
  finish(false, "initialize did not advertise the coder protocol")
  return
end

local created = client.request_sync("conversation/create", {}, 10000)
if not created or created.err or not created.result then
  finish(false, "conversation/create failed: " .. vim.inspect(created))
  return
end
local conversation = created.result.conversationId
local sent = client.request_sync("conversation/send", { conversationId = conversation, text = "hi" }, 10000)
if not sent or sent.err then
  finish(false, "conversation/send failed: " .. vim.inspect(sent))
  return
end

vim.wait(20000, function() return done end, 20)
local text = table.concat(deltas)
if not done then
  finish(false, "no task_complete; got " .. text)
elseif text ~= "Hello from Neovim." then
  finish(false, "unexpected reply: " .. text)
else
  client.stop()
  finish(true, "streamed reply: " .. text)
end
