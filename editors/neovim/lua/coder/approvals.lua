-- Answers the engine's `permission/request` through `vim.ui.select`, offering exactly the
-- options the engine sent, with the command or the diff shown in the chat first.

local chat = require("coder.chat")
local await = require("coder.client").await

local M = {}

--- The requests the engine withdrew (a mode change decided the call again, the task was
--- interrupted): an answer chosen afterwards is not read by the engine.
local withdrawn = {}

--- Follows `permission_withdrawn`.
function M.on_event(event)
  if event.type == "permission_withdrawn" and event.requestId then
    withdrawn[event.requestId] = true
  end
end

--- The option a person who dismisses the prompt gets: the engine's plain rejection.
local function dismissed(options)
  for _, option in ipairs(options) do
    if option.kind == "reject_once" then
      return option
    end
  end
  return nil
end

--- The lines that show a request in the chat.
local function preview(params)
  local lines = { "## Approval: " .. (params.title or params.toolName) }
  if params.reason and params.reason ~= "" then
    table.insert(lines, params.reason)
  end
  local body = params.command or params.diff or params.plan
  if body then
    table.insert(lines, params.command and "```sh" or (params.diff and "```diff" or "```markdown"))
    vim.list_extend(lines, vim.split((body:gsub("\n$", "")), "\n", { plain = true }))
    table.insert(lines, "```")
  end
  table.insert(lines, "")
  return lines
end

--- The `permission/request` handler: `{optionId, message?}`.
function M.handle(params)
  chat.notice(preview(params), "CoderApproval")
  local options = params.options or {}
  local choice = await(function(done)
    vim.ui.select(options, {
      prompt = (params.title or params.toolName) .. ": ",
      kind = "coder.permission",
      format_item = function(option)
        if option.covers then
          return ("%s (%s)"):format(option.label, option.covers)
        end
        return option.label
      end,
    }, done)
  end)
  if choice == nil then
    choice = dismissed(options)
    if choice == nil then
      return { optionId = "" }
    end
    chat.notice("Dismissed: " .. choice.label, "CoderNotice")
    return { optionId = choice.optionId }
  end
  if withdrawn[params.requestId] then
    chat.notice("Too late: the request was withdrawn before the choice, and the engine drops it.", "CoderNotice")
    return { optionId = choice.optionId }
  end
  local answer = { optionId = choice.optionId }
  if choice.takesMessage then
    local message = await(function(done)
      vim.ui.input({ prompt = "A message for the model (optional): " }, done)
    end)
    if message and message ~= "" then
      answer.message = message
    end
  end
  chat.notice("Answered: " .. choice.label .. (answer.message and (": " .. answer.message) or ""), "CoderNotice")
  return answer
end

return M
