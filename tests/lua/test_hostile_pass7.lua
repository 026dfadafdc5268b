-- Attack pass 7 (docs/RELIABILITY.md): messages, traces and output paths attacked from outside.
-- Each case here failed before its fix: a limit named under a field the user did not write, "-nan",
-- a position written twice, a trace column read past in silence, an output path misreported,
-- replaced or not created.
local T = require "testlib"
local hl = require "hbdlab"
local warn = require "hbdlab.warn"

local serve = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, rate = 5, requests = 20,
                input = 100, output = 10 }
local sweep = { base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, input = 100, output = 10 },
                axes = { batch = { 1, 2 } }, progress = false }
local dir, file = T.scratch()

-- the serve fields with a trace instead of a rate
local function traced(path)
  local o = T.merged(serve, { trace = path })
  o.rate, o.requests = nil, nil
  return o
end

-- the warnings a call gives (each message once per process otherwise)
local function warnings(fn)
  local got = {}
  warn.seen, warn.sink = {}, function(m) got[#got + 1] = m end
  local ok, e = pcall(fn)
  warn.sink = nil
  assert(ok, e)
  return table.concat(got, "\n")
end

T.test("an SLO in ms is checked and named in ms", function()
  -- slo = {ttft_ms = 1e308} was refused as "serve field 'slo.ttft_s': 1e+305 is out of range"
  T.raises(function() hl.serve(T.merged(serve, { slo = { ttft_ms = 1e308 } })) end,
    "serve field 'slo.ttft_ms': 1e+308 is out of range (allowed: 1e-06..1e+12 ms)")
  local e = T.raises(function() hl.serve(T.merged(serve, { slo = { tpot_ms = 0 / 0 } })) end,
    "serve field 'slo.tpot_ms': nan is out of range (not a finite number; allowed: 1e-06..1e+12 ms)")
  T.ok(not e:find("_s'", 1, true), e)
  T.raises(function() hl.serve(T.merged(serve, { slo = { ttft_ms = -1 } })) end, "'slo.ttft_ms': -1 is out of range")
  -- the bounds themselves are allowed: 1e-6 ms is the core's 1e-9 s, 1e12 ms its 1e9 s
  T.eq(hl.serve(T.merged(serve, { slo = { ttft_ms = 1e12, tpot_ms = 1e-6 } })).requests, 20, "the bounds run")
  local cap = T.merged(serve, { slo = { ttft_ms = 1e308 } })
  cap.rate = nil
  T.raises(function() hl.serve_capacity(cap) end,
    "'slo.ttft_ms': 1e+308")
end)

T.test("a NaN in a message is nan, never -nan", function()
  -- 0/0 has its sign bit set on x86: printf's %g wrote "-nan" (hl.roofline: "(got -nan, 1, 0)")
  local e = T.raises(function() hl.roofline { gpu = "h100-sxm", flops = 0 / 0, bytes = 1 } end, "got nan, 1")
  T.ok(not e:find("-nan", 1, true), e)
  e = T.raises(function() hl.collective { cluster = "hgx-h100", op = "allreduce", bytes = 0 / 0, ranks = 8 } end,
    "nan")
  T.ok(not e:find("-nan", 1, true), e)
  e = T.raises(function() hl.simulate(T.merged(sweep.base, { batch = 0 / 0 })) end, "nan")
  T.ok(not e:find("-nan", 1, true), e)
end)

T.test("an error of hl.serve names the user's line once", function()
  -- hl_error placed the message at the user's line and serve.lua's error(r, 2) placed it again:
  -- "x.lua:2: x.lua:2: serve: unknown field 'bogus'"
  local function line() return debug.getinfo(2, "l").currentline end
  local ok, e = pcall(function()
    local r = hl.serve(T.merged(serve, { bogus = 1 })) -- this line
    return r
  end)
  local at = "test_hostile_pass7.lua:" .. (line() - 3) .. ": "
  T.ok(not ok and e:find(at .. "serve: unknown field 'bogus'", 1, true), e)
  T.eq(select(2, e:gsub("test_hostile_pass7%.lua:%d+: ", "")), 1, "positions in " .. e)
  ok, e = pcall(function()
    local r = hl.serve_sweep { base = serve, axes = { bogus = { 1 } } }
    return r
  end)
  T.ok(not ok and select(2, e:gsub("test_hostile_pass7%.lua:%d+: ", "")) == 1, e)
end)

T.test("a trace's columns and keys that are not read are named in a warning", function()
  -- JSONL keys and CSV columns hbdlab does not know were skipped in silence: a misspelt
  -- 'sesion' ran every request as a conversation of its own
  local csv = file("extra.csv", "arrival_s,user,input,output,sesion\n0,7,100,10,1\n1,7,100,10,1\n")
  local w = warnings(function() hl.serve(traced(csv)) end)
  T.ok(w:find("'user', 'sesion' (did you mean 'session'?) are not read", 1, true), w)
  local jl = file("extra.jsonl", '{"arrival_s": 0, "input": 100, "output": 10, "sesion": 1, "model": "x"}\n' ..
    '{"arrival_s": 1, "input": 100, "output": 10, "sesion": 1, "prompt": "hi"}\n')
  w = warnings(function() hl.serve(traced(jl)) end)
  T.ok(w:find("'sesion' (did you mean 'session'?), 'model', 'prompt' are not read", 1, true), w)
  -- a trace whose every key is read warns nothing; the run equals the one without the extra keys
  local plain = file("plain.jsonl", '{"arrival_s": 0, "input": 100, "output": 10}\n' ..
    '{"arrival_s": 1, "input": 100, "output": 10}\n')
  local r
  w = warnings(function() r = hl.serve(traced(plain)) end)
  T.eq(w, "", "no warning")
  local r2 = hl.serve(traced(jl))
  T.eq(string.format("%a", r2.ttft_s.mean), string.format("%a", r.ttft_s.mean), "the extra keys change nothing")
  -- many unknown keys: the list is cut, never overflows
  local keys = {}
  for i = 1, 60 do keys[#keys + 1] = string.format('"k%02d_%s": 1', i, string.rep("x", 30)) end
  local wide = file("wide.jsonl", '{"arrival_s": 0, "input": 100, "output": 10, ' .. table.concat(keys, ", ") .. "}\n")
  w = warnings(function() hl.serve(traced(wide)) end)
  T.ok(w:find("'k01_", 1, true) and w:find(", ...", 1, true) and #w < 600, w)
end)

T.test("sweep_to_csv output paths: the cause named, nothing replaced, a missing folder made", function()
  local function to(out) return T.merged(sweep, { out = out }) end
  hl.rows.write({ { a = 1 } }, dir .. "/d/keep.csv")
  -- "dir/" said "Not a directory" (the temp file was made inside the folder and renamed onto it)
  T.raises(function() hl.sweep_to_csv(to(dir .. "/d/")) end, "d/: the name is a folder's")
  T.raises(function() hl.sweep_to_csv(to(dir .. "/d/.")) end, "d/.: the name is a folder's")
  T.raises(function() hl.sweep_to_csv(to(dir .. "/d")) end, "/d: it is a folder")
  T.raises(function() hl.sweep_to_csv(to("")) end, "cannot write : an empty file name")
  -- /proc/version said "No such file or directory": the temp file beside it cannot be made
  T.raises(function() hl.sweep_to_csv(to("/proc/version")) end,
    "cannot write /proc/version: its temporary file /proc/version.tmp-* cannot be made beside it")
  -- a missing folder is made, as hl.rows.write makes it
  local out = dir .. "/new/sub/x.csv"
  T.eq(hl.sweep_to_csv(to(out)), 2, "rows")
  local f = assert(io.open(out))
  T.ok(f:read("a"):find("^batch,"), "the CSV")
  f:close()
end)

T.done()
