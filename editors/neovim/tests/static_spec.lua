-- What can be checked without running the engine: the protocol names the plugin uses exist
-- in the generated schema, and no module reads or writes a global it should not.
local H = require("helpers")

local plugin = vim.fs.dirname(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)))
local repo = vim.fs.dirname(vim.fs.dirname(plugin))

H.test("every method and event the plugin uses is in docs/protocol.schema.json", function()
  local schema = vim.json.decode(H.read(repo .. "/docs/protocol.schema.json"))
  local protocol = require("coder.protocol")
  local known = {}
  for _, entry in ipairs(schema["x-methods"]) do
    known[entry.method] = entry.direction
  end
  for name, method in pairs(protocol.methods) do
    H.truthy(known[method], ("method %s (%s) is not in the schema"):format(method, name))
  end
  H.eq("serverToClient", known[protocol.methods.permission_request], "permission/request's direction")
  local types = {}
  for _, variant in ipairs(schema["$defs"].Event.oneOf or schema["$defs"].Event.anyOf) do
    local kind = variant.properties and variant.properties.type
    if kind then
      for _, value in ipairs(kind.enum or { kind.const }) do
        types[value] = true
      end
    end
  end
  H.truthy(next(types), "no event types found in the schema")
  for _, kind in ipairs(protocol.events) do
    H.truthy(types[kind], ("event %s is not in the schema"):format(kind))
  end
  local modes = {}
  for _, value in ipairs(schema["$defs"].Mode.enum or {}) do
    modes[value] = true
  end
  for _, variant in ipairs(schema["$defs"].Mode.oneOf or {}) do
    modes[variant.const or (variant.enum or {})[1] or ""] = true
  end
  for _, mode in ipairs(protocol.modes) do
    H.truthy(modes[mode], ("mode %s is not in the schema"):format(mode))
  end
end)

-- The globals a module may read: Neovim's and Lua's own.
local allowed = {}
for name in ([[vim require pairs ipairs next type tostring tonumber select error assert pcall xpcall
  setmetatable getmetatable rawget rawset rawequal unpack table string math io os debug coroutine
  print]]):gmatch("%S+") do
  allowed[name] = true
end

H.test("no module sets a global or reads one Neovim and Lua do not define", function()
  local bc = require("jit.bc")
  local files = vim.fs.find(function(name)
    return name:match("%.lua$") ~= nil
  end, { path = plugin .. "/lua", type = "file", limit = math.huge })
  vim.list_extend(files, { plugin .. "/plugin/coder.lua" })
  H.truthy(#files >= 10, "found only " .. #files .. " files")
  local bad = {}
  for _, file in ipairs(files) do
    local chunk = assert(loadfile(file))
    local out = {}
    bc.dump(chunk, {
      write = function(_, s)
        table.insert(out, s)
      end,
      flush = function() end,
    }, true)
    for line in table.concat(out):gmatch("[^\n]+") do
      local op, name = line:match("(G[GS]ET)%s.-\"([^\"]+)\"")
      if op == "GSET" or (op == "GGET" and not allowed[name]) then
        table.insert(bad, ("%s: %s %s"):format(vim.fs.basename(file), op, name))
      end
    end
  end
  H.eq({}, bad, "globals")
end)

H.test(":h coder names every command, option, mapping and highlight group", function()
  local doc = H.read(plugin .. "/doc/coder.txt")
  for name, command in pairs(vim.api.nvim_get_commands({})) do
    if name:match("^Coder") then
      H.truthy(doc:find("*:" .. name .. "*", 1, true), "no help tag for :" .. name .. " (" .. command.definition .. ")")
    end
  end
  local function options(defaults, prefix)
    for key, value in pairs(defaults) do
      if key ~= "mappings" and type(value) == "table" and not vim.islist(value) and next(value) then
        options(value, prefix .. key .. ".")
      elseif key ~= "mappings" then
        H.truthy(doc:find("\n" .. prefix .. key .. " ", 1, true), "option " .. prefix .. key .. " is not documented")
      end
    end
  end
  options(require("coder.config").defaults, "")
  for key, lhs in pairs(require("coder.config").defaults.mappings) do
    H.truthy(doc:find("`" .. key .. "` (\"" .. lhs .. "\")", 1, true), "mapping " .. key .. " is not documented")
  end
  for _, map in ipairs(vim.api.nvim_get_keymap("n")) do
    if map.lhs:match("^<Plug>%(Coder") then
      H.truthy(doc:find("*" .. map.lhs .. "*", 1, true), map.lhs .. " is not documented")
    end
  end
  local groups = 0
  for name in pairs(vim.api.nvim_get_hl(0, {})) do
    if name:match("^Coder") then
      groups = groups + 1
      H.truthy(doc:find("\n" .. name .. " ", 1, true), "highlight group " .. name .. " is not documented")
    end
  end
  H.truthy(groups >= 10, "only " .. groups .. " highlight groups")
end)

H.test("without the program, :Coder says so in the chat and :checkhealth names it", function()
  require("coder").setup({ cmd = "/nonexistent/coder" })
  vim.cmd("Coder hello")
  H.see("coder did not start: `/nonexistent/coder` is neither an executable file nor a program in PATH; see :checkhealth coder")
  vim.cmd("checkhealth coder")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  H.truthy(text:find("`/nonexistent/coder` is neither an executable file nor a program in PATH", 1, true), text)
  vim.cmd("bwipeout")
end)

H.run("static_spec")
