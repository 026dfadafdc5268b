-- Run by a stock lua5.4 with LUA_CPATH pointing at the build tree.
local hl = require "hbdlab"
assert(hl.pretty.format({ 1, 2 }) == "{ 1, 2 }")
print("ok")
