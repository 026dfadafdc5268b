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

T.test("a bare start loads only the modules it needs; the others on first access", function()
  -- `hbdlab -e ''` is the startup bench row: plot, rows, sweep... are loaded when first touched
  local out = os.tmpname()
  local code = core.spawn { os.getenv("HBDLAB") or "hbdlab", "-e", [[
    local eager = {}
    for _, m in ipairs { "plot", "rows", "trace", "minitf", "pretty", "sweep", "walkthrough", "serve", "frontier" } do
      if package.loaded["hbdlab." .. m] then eager[#eager + 1] = m end
    end
    io.write(table.concat(eager, ","))]], stdout = out }
  local f = assert(io.open(out))
  local eager = f:read("a")
  f:close()
  os.remove(out)
  T.eq(code, 0, "child ran")
  T.eq(eager, "", "modules loaded at startup")
  -- on access: the module itself, once (this process has loaded some already: the same table)
  for _, m in ipairs { "plot", "rows", "trace", "minitf", "pretty" } do
    T.ok(hl[m] == require("hbdlab." .. m), "hl." .. m .. " is hbdlab." .. m)
    T.ok(rawget(hl, m) == hl[m], "hl." .. m .. " kept after the first access")
  end
  T.ok(type(hl.plot.line) == "function" and type(hl.rows.sort) == "function", "module functions")
  T.eq(hl.no_such_thing, nil, "an unknown name is nil")
end)

T.test("pairs(hl) lists the modules loaded on first use", function()
  local seen = {}
  for k in pairs(hl) do seen[k] = true end
  for _, k in ipairs { "plot", "rows", "trace", "minitf", "pretty", "sweep", "sweep_to_csv", "walkthrough", "simulate" } do
    T.ok(seen[k], "pairs(hl) has " .. k)
  end
end)

T.done()
