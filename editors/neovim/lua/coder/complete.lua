-- `/` and `@` completion in the chat input, from the engine: `command/list` for slash
-- commands, `workspace/completePaths` for `@` paths. The omnifunc answers at once and
-- fills the menu when the engine's answer arrives, so typing never waits.

local client = require("coder.client")
local protocol = require("coder.protocol")

local M = {}

--- What is being completed in `line` before byte `col` (0-based): `"command"` or
--- `"path"`, the 0-based byte where the word starts, and the word without its sigil.
---@return string|nil, integer|nil, string|nil
function M.context(line, col)
  local before = line:sub(1, col)
  local slash = before:match("^%s*/(%S*)$")
  if slash then
    local start = #before - #slash - 1
    return "command", start, slash
  end
  local at = before:match("@(%S*)$")
  if at then
    return "path", #before - #at - 1, at
  end
  return nil
end

--- Calls `done(items)` with completion items (`:h complete-items`) for `kind` and `word`.
function M.candidates(kind, word, done)
  if kind == "command" then
    client.request(protocol.methods.command_list, vim.empty_dict(), function(err, result)
      local items = {}
      for _, command in ipairs((not err and result and result.commands) or {}) do
        if vim.startswith(command.name, word) then
          table.insert(items, {
            word = "/" .. command.name,
            abbr = "/" .. command.name .. (type(command.argumentHint) == "string" and (" " .. command.argumentHint) or ""),
            menu = type(command.description) == "string" and command.description or nil,
          })
        end
      end
      done(items)
    end)
  else
    client.request(protocol.methods.complete_paths, { query = word }, function(err, result)
      local items = {}
      for _, match in ipairs((not err and result and result.matches) or {}) do
        table.insert(items, { word = "@" .. match.path, kind = match.kind == "dir" and "d" or "f" })
      end
      done(items)
    end)
  end
end

--- The omnifunc (`:h complete-functions`).
function M.omnifunc(findstart, _)
  if findstart ~= 1 then
    return {}
  end
  local line = vim.api.nvim_get_current_line()
  local col = vim.api.nvim_win_get_cursor(0)[2]
  local kind, start, word = M.context(line, col)
  if not kind then
    return -3
  end
  M.candidates(kind, word, function(items)
    if vim.api.nvim_get_mode().mode:sub(1, 1) == "i" then
      vim.fn.complete(start + 1, items)
    end
  end)
  -- Leave completion mode quietly; the menu opens when the answer arrives.
  return -2
end

return M
