-- The embedded Lua library is precompiled at build time (cmake/lua_chunks.c): every chunk loads
-- in this interpreter's liblua as a binary chunk (lua_load checks the Lua version, the bytecode
-- format and the number sizes it was dumped with), the chunks were dumped by the same release,
-- and they keep their debug information (errors name the file and line).
local T = require "testlib"
local hl = require "hbdlab"
local core = require "hbdlab.core"

T.test("every embedded chunk loads as bytecode in this Lua", function()
  local release, files = core.embedded_chunks()
  T.ok(#files >= 10, "the library's files are embedded: " .. #files)
  for _, f in ipairs(files) do
    T.ok(f.loads, f.name .. " loads as a precompiled chunk: " .. tostring(f.error))
  end
  -- _VERSION is "Lua 5.4"; the chunks' release "Lua 5.4.x" of the same lua.h as the bindings
  T.eq(release:sub(1, #_VERSION + 1), _VERSION .. ".", "chunks dumped by this Lua version: " .. release)
end)

T.test("a precompiled module keeps its line information", function()
  local info = debug.getinfo(require("hbdlab.sweep").sweep, "S")
  T.eq(info.source, "@hbdlab/sweep.lua", "source name")
  T.ok(info.linedefined > 1, "line defined: " .. info.linedefined)
  local ok, err = pcall(hl.sweep, 42)
  T.ok(not ok and err:find("hl.sweep expects a table", 1, true), err)
end)

T.test("modules loaded on first use behave as loaded ones", function()
  -- hl.help, hl.params, hl.serve... are loaded on their first call through a wrapper
  T.ok(type(hl.serve) == "function" and type(hl.help) == "function", "wrappers are functions")
  local ok, err = pcall(function() hl.serve { rate = 1 } end)
  T.ok(not ok and tostring(err):find("field 'model'", 1, true), tostring(err))
  T.ok(package.loaded["hbdlab.serve"] ~= nil, "loaded by the first call")
  T.ok(require("hbdlab.help").text("serve"):find("hl.serve", 1, true), "help of a wrapped function")
end)

T.done()
