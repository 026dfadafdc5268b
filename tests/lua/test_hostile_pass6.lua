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

T.done()
