-- Attack pass 6 (docs/RELIABILITY.md): fields tables built with Lua's metatables, and error
-- positions, attacked from outside. Each case here ran silently with other fields than the user's,
-- or showed hbdlab's own file position, before its fix.
local T = require "testlib"
local hl = require "hbdlab"

local job = { model = "llama-3.1-70b", cluster = "hgx-h100", parallel = { tp = 8 }, batch = 8, input = 1000,
              output = 100 }
local serve = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, rate = 5, requests = 20,
                input = 100, output = 10 }
local REFUSED = "the fields table has a metatable with __index; fields are read as stored in the table itself"

T.test("a fields table that inherits through __index is refused, never half read", function()
  -- setmetatable({model = "llama-3.1-8b", ...}, {__index = job}) ran the 8B with input 1024, output
  -- 128 and no parallel (the defaults): model and cluster were read through __index (t.model), the
  -- other fields with lua_next, which does not see them; hl.serve said "field 'model': ... got nil"
  local child = setmetatable({ model = "llama-3.1-8b", batch = 16 }, { __index = job })
  T.raises(function() hl.simulate(child) end, "simulate: " .. REFUSED)
  T.raises(function() hl.simulate(setmetatable({ batch = 16 }, { __index = job })) end, "simulate: " .. REFUSED)
  T.raises(function() hl.sweep { base = child, axes = { input = { 100, 200 } } } end, "sweep field 'base': " .. REFUSED)
  T.raises(function() hl.sweep_to_csv { base = child, axes = { input = { 100 } }, out = T.scratch() .. "/x.csv" } end,
    "sweep field 'base': " .. REFUSED)
  local s = setmetatable({ rate = 2 }, { __index = serve })
  T.raises(function() hl.serve(s) end, "serve: " .. REFUSED)
  T.raises(function() hl.serve_capacity(s) end, "serve: " .. REFUSED)
  T.raises(function() hl.serve_sweep { base = s, axes = { rate = { 1, 2 } } } end, "serve: " .. REFUSED)
  -- a group table too: parallel = setmetatable({}, {__index = {tp = 8}}) ran as tp 1
  T.raises(function() hl.simulate(T.merged(job, { parallel = setmetatable({}, { __index = { tp = 8 } }) })) end,
    "simulate field 'parallel': " .. REFUSED)
  T.raises(function() hl.serve(T.merged(serve, { slo = setmetatable({ ttft_ms = 100 }, { __index = { tpot_ms = 1 } }) }))
  end, "serve field 'slo': " .. REFUSED)
  -- __pairs too: lua_next does not call it
  T.raises(function() hl.simulate(setmetatable({}, { __pairs = function() return next, job, nil end })) end,
    "simulate: the fields table has a metatable with __pairs")
end)

T.test("a metatable set after a first call is refused on the cached path too", function()
  local t = T.merged(job, {})
  t.model, t.cluster = hl.model(t.model), hl.cluster(t.cluster)
  local tpot = hl.simulate(t).tpot_s -- read in full, then recognised by its fingerprint
  T.ok(hl.simulate(t).tpot_s == tpot, "the cached call")
  setmetatable(t, { __index = { batch = 64 } })
  T.raises(function() hl.simulate(t) end, "simulate: " .. REFUSED)
end)

T.test("a metatable without __index or __pairs changes nothing", function()
  local plain = hl.simulate(T.merged(job, {})).tpot_s
  local t = setmetatable(T.merged(job, {}), { __tostring = function() return "my job" end })
  T.ok(hl.simulate(t).tpot_s == plain, "a job with __tostring runs as the plain job")
end)

T.test("an error raised under pcall shows the caller's line, never hbdlab's own", function()
  -- a message the C bindings raised for hbdlab's Lua carried its position under pcall
  -- ("hbdlab/sweep.lua:272: field 'threads': ..."); uncaught, the host already placed it at the user's line
  local here = debug.getinfo(1, "S").short_src
  local function check(fn, text)
    local e = T.raises(fn, text)
    T.ok(not e:find("hbdlab/", 1, true), "no hbdlab position in: " .. e)
    T.ok(e:sub(1, #here + 1) == here .. ":", "placed in this file: " .. e)
  end
  local axes = { batch = { 1, 2 } }
  check(function() hl.sweep { base = job, axes = axes, threads = 1e9 } end, "field 'threads': ")
  check(function() hl.sweep { base = job, axes = axes, zip = 5 } end, "field 'zip': expected true or false")
  local out = T.scratch() .. "/x.csv"
  check(function() hl.sweep_to_csv { base = job, axes = axes, out = out, columns = { "nope" } } end,
    "'nope' is not a result field")
  check(function() hl.sweep_to_csv { base = job, axes = axes, out = out, columns = 5 } end,
    "hl.sweep_to_csv field 'columns': expected a list of result field names, got number")
  -- (a missing folder is made since attack pass 7: an existing folder as the output fails in C)
  check(function() hl.sweep_to_csv { base = job, axes = axes, out = T.scratch() } end,
    "sweep_to_csv: cannot write ")
end)

T.test("hl.serve takes model and cluster as tables of fields, as hl.simulate does", function()
  -- cluster = {gpu = "H100-SXM", gpus = 8, hbd = 8} ran in hl.simulate and hl.sweep; hl.serve and
  -- hl.serve_sweep said "simulate field 'cluster': expected a cluster object or preset name, got table"
  local fields = { gpu = "H100-SXM", gpus = 8, hbd = 8 }
  local by_object = hl.serve(T.merged(serve, { cluster = hl.cluster(fields), model = hl.model("llama-3.1-8b") }))
  local by_table = hl.serve(T.merged(serve, { cluster = fields, model = { base = "llama-3.1-8b" } }))
  T.ok(by_table.tpot_s.mean == by_object.tpot_s.mean, "the same run as with the objects")
  T.ok(by_table.ttft_s.p99 == by_object.ttft_s.p99, "the same run as with the objects (TTFT)")
  local rows = hl.serve_sweep { base = T.merged(serve, { cluster = fields }), axes = { rate = { 1, 2 } } }
  T.eq(#rows, 2, "serve_sweep rows")
  T.ok(rows[1].error == nil, "serve_sweep point runs: " .. tostring(rows[1].error))
  T.raises(function() hl.serve(T.merged(serve, { cluster = { gpu = "H100-SXM", gpus = 8, hbd = 3 } })) end,
    "cluster field 'hbd': 3 does not divide gpus = 8")
end)

T.test("a script's globals named like the standard library do not reach hbdlab's own Lua", function()
  -- `table = hl.sweep{...}; hl.rows.print(table)` failed "attempt to call a nil value (field 'sort')"
  -- and `type = "dense"` failed every hl.simulate: the library's chunks read the script's globals
  local saved = { table = table, type = type, pairs = pairs, ipairs = ipairs, string = string, select = select,
                  tostring = tostring, error = error, math = math, next = next }
  local rows = hl.sweep { base = job, axes = { batch = { 1, 2 } } }
  local want_text = hl.rows.format(rows)
  local want_tpot = hl.simulate(job).tpot_s
  local bad = T.merged(job, { batch = 0 })
  local ok, got = pcall(function()
    local G = _G
    G.table, G.type, G.pairs, G.ipairs, G.string, G.select, G.tostring, G.error, G.math, G.next =
      rows, "dense", 1, 2, "s", 3, 4, 5, 6, 7
    local text = hl.rows.format(rows)
    local tpot = hl.simulate(job).tpot_s
    local again = hl.sweep { base = job, axes = { batch = { 1, 2 } } }
    local served = hl.serve(serve)
    local failed = pcall(hl.simulate, bad)
    return { text, tpot, #again, served.requests, failed }
  end)
  for k, v in saved.pairs(saved) do _G[k] = v end
  T.ok(ok, "the calls ran: " .. tostring(got))
  T.eq(got[1], want_text, "hl.rows.format")
  T.ok(got[2] == want_tpot, "hl.simulate")
  T.eq(got[3], 2, "hl.sweep rows")
  T.eq(got[4], 20, "hl.serve requests")
  T.eq(got[5], false, "an error is still an error")
  -- a global the script sets for hbdlab to read is still seen (print, hl, and names hbdlab does not own)
  local out = {}
  local old_print = print
  _G.print = function(...) out[#out + 1] = saved.select("#", ...) end
  local ok2, e2 = pcall(function() return hl.rows.print(rows) end)
  _G.print = old_print
  T.ok(ok2, "rows.print ran: " .. tostring(e2))
  T.ok(#out > 0, "hl.rows.print printed through the script's print")
end)

T.done()
