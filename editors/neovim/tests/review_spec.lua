-- Review mode: an edit to an open buffer is shown hunk by hunk; only the accepted hunks are
-- applied, to the buffer (the disk stays the person's to save).
local H = require("helpers")

local dir = H.workspace("yolo")
local before = "a\nb\nc\nd\ne\nf\ng\n"
H.write(dir .. "/app.txt", before)
H.write(dir .. "/other.txt", "keep\n")
local url = H.mock(dir, {
  { kind = "stream", chunks = { { type = "tool_call", id = "c1", name = "edit", arguments = vim.json.encode({
    path = "app.txt", old_string = "b\nc\nd\ne\nf", new_string = "B\nc\nd\ne\nF" }) } } },
  { kind = "stream", chunks = { { type = "text", text = "Edited." } } },
  { kind = "stream", chunks = { { type = "tool_call", id = "c2", name = "edit", arguments = vim.json.encode({
    path = "other.txt", old_string = "keep", new_string = "lose" }) } } },
  { kind = "stream", chunks = { { type = "text", text = "Tried." } } },
})
H.setup(dir, url, { edits = "review" })

local shown = {}
local answers
vim.ui.select = function(items, opts, on_choice)
  H.eq("coder.hunk", opts.kind, "the prompt's kind")
  table.insert(shown, opts.prompt)
  on_choice(table.remove(answers, 1))
end

H.test("an edit reviewed hunk by hunk ends with exactly the accepted hunks in the buffer", function()
  vim.cmd("edit " .. dir .. "/app.txt")
  local buf = vim.api.nvim_get_current_buf()
  answers = { "accept", "reject" }
  vim.cmd("Coder edit app.txt")
  H.wait_done(1)
  H.eq(2, #shown, "hunks offered")
  H.truthy(shown[1]:find("hunk 1 of 2", 1, true), shown[1])
  H.see("+B")
  H.see("+F")
  H.see("Applied 1 of 2 hunks")
  H.eq({ "a", "B", "c", "d", "e", "f", "g" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "the buffer")
  H.eq(true, vim.bo[buf].modified, "the buffer is modified")
  H.eq(before, H.read(dir .. "/app.txt"), "the file on disk")
end)

H.test("rejecting every hunk leaves the buffer as it was and the call fails", function()
  vim.cmd("edit " .. dir .. "/other.txt")
  local buf = vim.api.nvim_get_current_buf()
  shown = {}
  answers = { "reject" }
  vim.cmd("Coder edit other.txt")
  H.wait_done(2)
  H.eq(1, #shown, "hunks offered")
  H.eq({ "keep" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "the buffer")
  H.see("✗ ")
  local requests = H.requests(url)
  H.truthy(vim.json.encode(requests[#requests]):find("rejected every hunk", 1, true), "the model was not told")
end)

H.run("review_spec")
