local T = require "testlib"
local hl = require "hbdlab"

T.test("module is the preloaded global", function()
  T.eq(hl, _G.hl, "require returns the same table as the global")
  T.ok(type(hl.version) == "string" and hl.version:match("^%d+%.%d+%.%d+$"), "version string")
end)

T.test("pretty prints nested tables with sorted keys", function()
  local s = hl.pretty.format({ b = 2, a = { 1, 2, 3 }, c = "x" })
  T.eq(s, '{ a = { 1, 2, 3 }, b = 2, c = "x" }', "format")
end)

T.test("pretty cuts deep nesting and cycles", function()
  local t = { a = { b = { c = { d = { e = 1 } } } } }
  T.ok(hl.pretty.format(t):find("{...}", 1, true), "depth cut")
  local c = {}; c.self = c
  T.ok(hl.pretty.format(c):find("<cycle>", 1, true), "cycle marked")
end)

T.done()
