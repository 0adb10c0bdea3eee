-- Approvals: the engine's options through `vim.ui.select` (stubbed here as a person would
-- answer), the diff shown first, a rejection's reason reaching the model.
local H = require("helpers")

local dir = H.workspace("balanced")
local url = H.mock(dir, {
  { kind = "stream", chunks = { { type = "tool_call", id = "c1", name = "write", arguments = vim.json.encode({
    path = "a.txt", content = "alpha\n" }) } } },
  { kind = "stream", chunks = { { type = "text", text = "I will not write it." } } },
  { kind = "stream", chunks = { { type = "tool_call", id = "c2", name = "write", arguments = vim.json.encode({
    path = "b.txt", content = "beta\n" }) } } },
  { kind = "stream", chunks = { { type = "text", text = "Written." } } },
  { kind = "stream", chunks = { { type = "tool_call", id = "c3", name = "write", arguments = vim.json.encode({
    path = "c.txt", content = "gamma\n" }) } } },
  { kind = "stream", chunks = { { type = "text", text = "Not written in plan mode." } } },
})
H.setup(dir, url)

local asked = {}
local answer_kind, reason
vim.ui.select = function(items, opts, on_choice)
  table.insert(asked, { items = vim.deepcopy(items), opts = opts })
  for _, item in ipairs(items) do
    if opts.kind == "coder.permission" and item.kind == answer_kind then
      return on_choice(item)
    end
  end
  on_choice(nil)
end
vim.ui.input = function(_, on_confirm)
  on_confirm(reason)
end

H.test("a rejection with a reason: the model reads the reason, nothing is written", function()
  answer_kind, reason = "reject_once", "call it alpha.md instead"
  vim.cmd("Coder write a")
  H.wait_done(1)
  H.eq(1, #asked, "prompts shown")
  H.eq("coder.permission", asked[1].opts.kind, "the prompt's kind")
  -- The options are the engine's, in its order.
  local kinds = vim.tbl_map(function(o)
    return o.kind
  end, asked[1].items)
  H.truthy(vim.tbl_contains(kinds, "allow_once") and vim.tbl_contains(kinds, "reject_once"), vim.inspect(kinds))
  -- The diff was shown before the answer.
  H.see("## Approval: ")
  H.see("+alpha")
  H.see("Answered: ")
  H.eq(nil, H.read(dir .. "/a.txt"), "a.txt")
  -- The model's next request carries the reason in the call's result.
  local requests = H.requests(url)
  local second = vim.json.encode(requests[2])
  H.truthy(second:find("call it alpha.md instead", 1, true), "the reason did not reach the model: " .. second)
  H.see("I will not write it.")
end)

H.test("allowing once writes the file", function()
  answer_kind, reason = "allow_once", nil
  vim.cmd("Coder write b")
  H.wait_done(2)
  H.eq("beta\n", H.read(dir .. "/b.txt"), "b.txt")
  H.see("Written.")
end)

H.test("a choice made after the engine withdrew its request is shown as too late", function()
  local pending
  vim.ui.select = function(items, opts, on_choice)
    pending = function()
      on_choice(items[1])
    end
  end
  vim.cmd("Coder write c")
  H.wait(10000, function()
    return pending ~= nil
  end, "the prompt")
  -- Another mode decides the call again: the engine withdraws the request (plan mode
  -- writes nothing, so the call fails there).
  vim.cmd("CoderMode plan")
  H.wait_done(3)
  H.see("The request was withdrawn")
  H.eq(nil, H.read(dir .. "/c.txt"), "c.txt")
  pending()
  H.see("Too late: the request was withdrawn before the choice, and the engine drops it.")
end)

H.run("approvals_spec")
