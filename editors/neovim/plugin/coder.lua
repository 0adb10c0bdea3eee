-- coder for Neovim: the commands, `<Plug>` mappings and highlight groups. Nothing starts
-- until a command is used; `require("coder").setup(opts)` sets options.

if vim.g.loaded_coder then
  return
end
vim.g.loaded_coder = true

if vim.fn.has("nvim-0.10") ~= 1 then
  vim.notify("coder needs Neovim 0.10 or later", vim.log.levels.ERROR)
  return
end

local function coder()
  return require("coder")
end

vim.api.nvim_create_user_command("Coder", function(args)
  if args.range > 0 then
    coder().send_range(args.args, args.line1, args.line2)
  else
    coder().open(args.args)
  end
end, { nargs = "*", range = true, desc = "Open the coder chat, sending the prompt (and the range) when given" })

vim.api.nvim_create_user_command("CoderStop", function()
  coder().stop()
end, { desc = "Stop coder's running task" })

vim.api.nvim_create_user_command("CoderMode", function(args)
  coder().mode(args.args)
end, {
  nargs = "?",
  complete = function()
    return require("coder.protocol").modes
  end,
  desc = "Switch the conversation's mode",
})

vim.api.nvim_create_user_command("CoderModel", function(args)
  coder().model(args.args)
end, { nargs = "?", desc = "Switch the model, or show the current one" })

vim.api.nvim_create_user_command("CoderSessions", function()
  coder().sessions()
end, { desc = "Start a new session or resume a saved one" })

vim.api.nvim_create_user_command("CoderConversations", function()
  coder().conversations()
end, { desc = "Choose which conversation of the session the chat shows" })

vim.api.nvim_create_user_command("CoderDiagnostic", function(args)
  coder().diagnostic(args.args)
end, { nargs = "*", desc = "Send the diagnostics of the cursor's line" })

vim.keymap.set("n", "<Plug>(CoderChat)", function()
  coder().open()
end, { desc = "Open the coder chat" })
vim.keymap.set("x", "<Plug>(CoderSelection)", ":Coder<CR>", { desc = "Send the selection to coder", silent = true })
vim.keymap.set("n", "<Plug>(CoderStop)", function()
  coder().stop()
end, { desc = "Stop coder's running task" })
vim.keymap.set("n", "<Plug>(CoderDiagnostic)", function()
  coder().diagnostic("")
end, { desc = "Send the diagnostics of the cursor's line" })

local links = {
  CoderUser = "Title",
  CoderAssistant = "Title",
  CoderThinking = "Comment",
  CoderTool = "Function",
  CoderToolFailed = "DiagnosticError",
  CoderApproval = "DiagnosticWarn",
  CoderNotice = "Comment",
  CoderWarning = "DiagnosticWarn",
  CoderError = "DiagnosticError",
  CoderSeparator = "WinSeparator",
}
for group, target in pairs(links) do
  vim.api.nvim_set_hl(0, group, { link = target, default = true })
end
