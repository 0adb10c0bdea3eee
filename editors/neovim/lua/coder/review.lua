-- Edits the engine makes to open buffers (`workspace/applyEdit`): applied as they come, or,
-- in review mode, shown hunk by hunk, each accepted or rejected before anything changes.

local chat = require("coder.chat")
local config = require("coder.config")

local M = {}

local await = require("coder.client").await

--- The text edits of a workspace edit, by buffer: `{ {buf, version, edits} }`.
local function by_buffer(edit)
  local out = {}
  local function add(uri, version, edits)
    local buf = vim.uri_to_bufnr(uri)
    vim.fn.bufload(buf)
    table.insert(out, { buf = buf, version = version, edits = edits })
  end
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.kind then
      return nil, "file operations (" .. change.kind .. ") are not reviewed"
    end
    add(change.textDocument.uri, change.textDocument.version, change.edits)
  end
  for uri, edits in pairs(edit.changes or {}) do
    add(uri, nil, edits)
  end
  return out
end

--- The lines buffer `buf` would hold with `edits` applied.
local function apply_to_copy(buf, edits, encoding)
  local copy = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(copy, 0, -1, false, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
  vim.lsp.util.apply_text_edits(edits, copy, encoding)
  local lines = vim.api.nvim_buf_get_lines(copy, 0, -1, false)
  vim.api.nvim_buf_delete(copy, { force = true })
  return lines
end

--- The hunks between `old` and `new` lines: `{old_start, old_count, new_start, new_count}`.
local function hunks(old, new)
  local a = table.concat(old, "\n") .. "\n"
  local b = table.concat(new, "\n") .. "\n"
  return vim.diff(a, b, { result_type = "indices", algorithm = "histogram" })
end

--- A hunk as unified diff lines.
local function hunk_lines(old, new, h)
  local lines = { ("@@ -%d,%d +%d,%d @@"):format(h[1], h[2], h[3], h[4]) }
  for i = h[1], h[1] + h[2] - 1 do
    table.insert(lines, "-" .. old[i])
  end
  for i = h[3], h[3] + h[4] - 1 do
    table.insert(lines, "+" .. new[i])
  end
  return lines
end

--- Reviews one buffer's edits: returns how many hunks were accepted and offered.
local function review_buffer(item, encoding)
  local buf = item.buf
  local old = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local new = apply_to_copy(buf, item.edits, encoding)
  local list = hunks(old, new)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ":~:.")
  local accepted = {}
  for i, h in ipairs(list) do
    local lines = { ("## Review: %s, hunk %d of %d"):format(name, i, #list), "```diff" }
    vim.list_extend(lines, hunk_lines(old, new, h))
    vim.list_extend(lines, { "```", "" })
    chat.notice(lines, "CoderApproval")
    local choice = await(function(done)
      vim.ui.select({ "accept", "reject" }, {
        prompt = ("%s, hunk %d of %d: "):format(name, i, #list),
        kind = "coder.hunk",
        format_item = function(item_name)
          return item_name == "accept" and "Accept this hunk" or "Reject this hunk"
        end,
      }, done)
    end)
    accepted[i] = choice == "accept"
  end
  -- Apply the accepted hunks from the last to the first, so earlier line numbers hold.
  local count = 0
  for i = #list, 1, -1 do
    if accepted[i] then
      local h = list[i]
      local first = h[2] == 0 and h[1] or h[1] - 1
      local replacement = {}
      for j = h[3], h[3] + h[4] - 1 do
        table.insert(replacement, new[j])
      end
      vim.api.nvim_buf_set_lines(buf, first, first + h[2], false, replacement)
      count = count + 1
    end
  end
  chat.notice(("Applied %d of %d hunks to %s."):format(count, #list, name), "CoderNotice")
  return count, #list
end

--- The `workspace/applyEdit` handler.
function M.handle(params, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  local encoding = client and client.offset_encoding or "utf-16"
  if config.options.edits ~= "review" then
    local ok, err = pcall(vim.lsp.util.apply_workspace_edit, params.edit, encoding)
    return { applied = ok, failureReason = (not ok) and tostring(err) or nil }
  end
  local items, why = by_buffer(params.edit)
  if not items then
    return { applied = false, failureReason = why }
  end
  for _, item in ipairs(items) do
    local version = vim.lsp.util.buf_versions[item.buf]
    if item.version and version and version > item.version then
      return { applied = false, failureReason = "the buffer changed since the edit was made" }
    end
  end
  local accepted = 0
  for _, item in ipairs(items) do
    accepted = accepted + review_buffer(item, encoding)
  end
  if accepted == 0 then
    return { applied = false, failureReason = "the person rejected every hunk of the edit" }
  end
  return { applied = true }
end

return M
