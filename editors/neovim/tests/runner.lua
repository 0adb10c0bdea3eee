-- Runs the spec file named by CODER_SPEC; a spec that fails to load fails the run instead
-- of leaving Neovim waiting.
local spec = vim.fn.fnamemodify(assert(os.getenv("CODER_SPEC"), "CODER_SPEC"), ":p")
local ok, err = xpcall(dofile, debug.traceback, spec)
if not ok then
  io.stdout:write(("FAIL %s: it did not load\n%s\n"):format(spec, err))
  io.stdout:flush()
  vim.cmd("cquit 1")
end
