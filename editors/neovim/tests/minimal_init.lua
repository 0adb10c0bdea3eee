-- The init file of the test Neovim: the plugin from this checkout and nothing else.
local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
local root = vim.fs.dirname(here)
vim.opt.runtimepath:prepend(root)
package.path = here .. "/?.lua;" .. package.path
vim.o.swapfile = false
vim.o.shadafile = "NONE"
vim.cmd("runtime plugin/coder.lua")
