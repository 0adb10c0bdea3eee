-- Completion sources for nvim-cmp and blink.cmp, over the same engine answers as the
-- omnifunc (`coder.complete`). Each item replaces the `/command` or `@path` being typed.

local complete = require("coder.complete")

local M = {}

--- LSP completion items for `line` with the cursor at byte `col` (0-based) on 0-based
--- line `row`; `done(items)`, or `done(nil)` when nothing is being completed there.
function M.items(line, row, col, done)
  local kind, start, word = complete.context(line, col)
  if not kind then
    return done(nil)
  end
  complete.candidates(kind, word, function(candidates)
    local items = {}
    for _, candidate in ipairs(candidates) do
      table.insert(items, {
        label = candidate.abbr or candidate.word,
        filterText = candidate.word,
        detail = candidate.menu,
        -- 17 is File, 19 Folder, 14 Keyword in LSP's CompletionItemKind.
        kind = kind == "command" and 14 or (candidate.kind == "d" and 19 or 17),
        textEdit = {
          newText = candidate.word,
          range = {
            start = { line = row, character = start },
            ["end"] = { line = row, character = col },
          },
        },
      })
    end
    done(items)
  end)
end

--- The nvim-cmp source: `require("cmp").register_source("coder", require("coder.sources").cmp())`
--- (done by `setup()` when nvim-cmp is installed).
function M.cmp()
  local source = {}
  function source:is_available()
    return vim.bo.filetype == "coder"
  end
  function source:get_trigger_characters()
    return { "/", "@" }
  end
  function source:get_keyword_pattern()
    return [[\%([/@]\S*\)]]
  end
  function source:complete(params, callback)
    local cursor = params.context.cursor
    M.items(params.context.cursor_before_line, cursor.row - 1, cursor.col - 1, function(items)
      callback(items and { items = items, isIncomplete = true } or nil)
    end)
  end
  return source
end

--- The blink.cmp source, as a provider's `module = "coder.sources"` (blink calls `new`).
M.blink = {}
M.blink.__index = M.blink

function M.new()
  return setmetatable({}, M.blink)
end

function M.blink:enabled()
  return vim.bo.filetype == "coder"
end

function M.blink:get_trigger_characters()
  return { "/", "@" }
end

function M.blink:get_completions(ctx, callback)
  M.items(ctx.line, ctx.cursor[1] - 1, ctx.cursor[2], function(items)
    callback({ items = items or {}, is_incomplete_forward = true, is_incomplete_backward = true })
  end)
end

return M
