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
  -- a JSON array (not JSON lines) was read as a CSV header: "must name arrival_s, input and output"
  local arr = file("arr.jsonl", '[{"arrival_s": 0, "input": 100, "output": 10}]\n')
  T.raises(function() hl.serve(traced(arr)) end, "arr.jsonl line 1: a JSON array; a trace is JSON lines")
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

T.test("hl.roofline names the field of a bad name, shape or type, never its own line", function()
  -- luaL_checkoption / luaL_argerror said "hbdlab/objects.lua:225: bad argument #-1 to 'op_time'"
  local function no_internal(e) T.ok(not e:find("hbdlab/", 1, true) and not e:find("bad argument", 1, true), e) end
  local gemm = { gpu = "h100-sxm", m = 64, n = 4096, k = 4096 }
  no_internal(T.raises(function() hl.roofline(T.merged(gemm, { precision = "fp7" })) end,
    "hl.roofline: field 'precision': precision 'fp7' is not one of"))
  no_internal(T.raises(function() hl.roofline(T.merged(gemm, { precision = {} })) end,
    "field 'precision': expected a name, got table"))
  no_internal(T.raises(function() hl.roofline(T.merged(gemm, { framework = "vlm" })) end,
    "field 'framework': \"vlm\" is not one of ideal, trtllm"))
  no_internal(T.raises(function() hl.roofline(T.merged(gemm, { kind = 0 / 0 })) end, "field 'kind': expected a name, got number"))
  no_internal(T.raises(function() hl.roofline(T.merged(gemm, { gpu = 5 })) end, "field 'gpu': expected a gpu object"))
  -- NaN was "-nan"; inf passed the "> 0" check and failed as "flops and bytes must be finite" naming no field
  T.raises(function() hl.roofline(T.merged(gemm, { m = 0 / 0 })) end, "field 'm' must be a finite number > 0 (got nan)")
  T.raises(function() hl.roofline(T.merged(gemm, { k = math.huge })) end, "field 'k' must be a finite number > 0 (got inf)")
  local attn = { gpu = "h100-sxm", kind = "attention", batch = 8, context = 2048, heads = 32 }
  for _, f in ipairs { "kv_heads", "head_dim", "kv_bytes", "window", "q" } do
    T.raises(function() hl.roofline(T.merged(attn, { [f] = -math.huge })) end, "field '" .. f .. "' must be a finite number")
  end
  T.raises(function() hl.roofline(T.merged(attn, { window = 0 / 0 })) end, "field 'window' must be a finite number >= 0 (got nan)")
  T.raises(function() hl.roofline { gpu = "h100-sxm", kind = "moe", tokens = 8, experts = 8, topk = 2, hidden = 64,
    inter = 64, ep = 0 / 0 } end, "field 'ep' must be a finite number >= 1 (got nan)")
  -- a field of another form had no effect, silently: rows or flops beside m, n, k; weight_bytes on attention
  T.raises(function() hl.roofline(T.merged(gemm, { rows = 5 })) end,
    "hl.roofline: field 'rows' has no effect on a GEMM given by m, n, k (its fields: m, n, k, act_bytes")
  T.raises(function() hl.roofline(T.merged(gemm, { flops = 1e9 })) end, "field 'flops' has no effect on a GEMM")
  T.raises(function() hl.roofline(T.merged(attn, { weight_bytes = 1 })) end,
    "field 'weight_bytes' has no effect on attention given by batch")
  T.raises(function() hl.roofline { gpu = "h100-sxm", flops = 1e9, bytes = 1e6, heads = 8 } end,
    "field 'heads' has no effect on an operator given by flops and bytes")
  -- what worked still works
  T.ok(hl.roofline(gemm).time_s > 0 and hl.roofline(attn).time_s > 0, "good shapes run")
end)

T.test("hl.collective, hl.calibrate: the field named, no address, no -nan", function()
  local e = T.raises(function() hl.collective { op = "allreduce", bytes = 1e6, ranks = 8, cluster = 5 } end,
    "hl.collective field 'cluster': expected a cluster object")
  T.ok(not e:find("hbdlab/", 1, true), e)
  -- a number placement was checked as 'ranks_per_hbd'
  T.raises(function() hl.collective { op = "allreduce", bytes = 1e6, ranks = 8, cluster = "hgx-h100", placement = 0 / 0 } end,
    "hl.collective field 'placement': nan is not a whole number of ranks per HBD")
  T.ok(hl.collective { op = "allreduce", bytes = 1e6, ranks = 8, cluster = { gpu = "h100-sxm", gpus = 8 } }.time_s > 0,
    "a cluster as a table of fields")
  local cal = { cases = { { name = "a", measured = 0.01, config = { model = "llama-3.1-8b", cluster = "hgx-h100",
    parallel = { tp = 8 }, batch = 8, input = 256, output = 16 }, metric = "tpot_s" } }, params = { "eff_gemm" },
    bounds = { eff_gemm = { 0.1, 1 } } }
  T.raises(function() hl.calibrate(T.merged(cal, { start = 0 / 0 })) end, "field 'start' must be a table {name = value} (got nan (a number))")
  e = T.raises(function() hl.calibrate(T.merged(cal, { bounds = print })) end, "(got a function)")
  T.ok(not e:find("0x", 1, true), e)
  -- hl.kv_capacity listed every rule and all seven values, naming no field
  local kv = { hbm_bytes = 80e9, kv_token_bytes = 131072, context = 4096 }
  T.raises(function() hl.kv_capacity(T.merged(kv, { weights_bytes = 0 / 0 })) end,
    "kv capacity field 'weights_bytes': nan is not allowed (a finite number >= 0)")
  T.raises(function() hl.kv_capacity(T.merged(kv, { mem_util = 2 })) end,
    "kv capacity field 'mem_util': 2 is not allowed (a fraction in (0, 1])")
  T.raises(function() hl.kv_capacity(T.merged(kv, { context = math.huge })) end, "kv capacity field 'context': inf")
end)

T.test("hl.serve_capacity, hl.serve_pd_ratio, hl.frontier refuse bad fields up front", function()
  local cap = T.merged(serve, { slo = { ttft_s = 1, tpot_s = 0.05 }, max_requests = 1000, min_duration = 1 })
  cap.rate = nil
  -- requests = "x" failed inside the search: "attempt to compare string with number"; -inf was ignored
  for _, v in ipairs { "x", {}, -math.huge, 0.5 } do
    local e = T.raises(function() hl.serve_capacity(T.merged(cap, { requests = v })) end,
      "hl.serve_capacity field 'requests': ")
    T.ok(not e:find("attempt to", 1, true) and not e:find("0x", 1, true), e)
  end
  T.raises(function() hl.serve_capacity(T.merged(cap, { mode = 0 / 0 })) end, "field 'mode': nan is not one of")
  T.raises(function() hl.serve_capacity(T.merged(cap, { target = {} })) end, "field 'target': a table is not a fraction")
  -- an __index in prefill / decode ran (here: raised) instead of being refused
  local pd = T.merged(cap, { gpus = 8, prefill = setmetatable({}, { __index = function() error("ran") end }),
    decode = { parallel = { tp = 2 } } })
  pd.parallel = nil
  T.raises(function() hl.serve_pd_ratio(pd) end, "hl.serve_pd_ratio field 'prefill': the fields table has a metatable")
  -- an unknown framework or an out-of-range length ran the whole search, every configuration
  -- failing, and ended "no configuration ... could be evaluated"
  local fr = { model = "llama-3.1-8b", systems = { "hgx-h100" }, simulate = 0, progress = false, max_tp = 8 }
  T.raises(function() hl.frontier(T.merged(fr, { framework = "trt" })) end,
    "hl.frontier: field 'framework': \"trt\" is not one of ideal, trtllm")
  T.raises(function() hl.frontier(T.merged(fr, { input = -1 })) end, "field 'input': -1 is not a whole number of tokens")
  T.raises(function() hl.frontier(T.merged(fr, { modes = { 0 / 0 } })) end, "field 'modes'[1]: nan is not one of agg")
  T.raises(function() hl.frontier(T.merged(fr, { slo = setmetatable({}, { __index = function() error("ran") end }) })) end,
    "hl.frontier field 'slo': the fields table has a metatable")
end)

T.test("hbdlab's own Lua keeps its require, debug and library tables when a script replaces them", function()
  -- require = f raised from every hl.simulate (the library called the script's require);
  -- string.format = f and table.concat = f reached hl.rows.format
  local job = T.merged(sweep.base, { batch = 4 })
  local want = hl.simulate(job).tpot_s
  local rows = hl.sweep(sweep)
  local text = hl.rows.format(rows)
  local saved = { require = require, debug = debug, format = string.format, concat = table.concat, sort = table.sort,
    floor = math.floor }
  local bad = function() error("the script's replacement ran") end
  require, debug = bad, nil -- luacheck: ignore
  string.format, table.concat, table.sort, math.floor = bad, bad, bad, bad -- luacheck: ignore 122
  local ok1, r1 = pcall(hl.simulate, job)
  local ok2, r2 = pcall(hl.rows.format, rows)
  local ok3, r3 = pcall(hl.serve, T.merged(serve, { bogus = 1 })) -- the error path uses debug.getinfo
  require, debug = saved.require, saved.debug -- luacheck: ignore
  string.format, table.concat, table.sort, math.floor = saved.format, saved.concat, saved.sort, saved.floor -- luacheck: ignore 122
  T.ok(ok1 and r1.tpot_s == want, tostring(r1))
  T.ok(ok2 and r2 == text, tostring(r2))
  T.ok(not ok3 and r3:find("unknown field 'bogus'", 1, true), tostring(r3))
end)

T.test("hl.sweep and hl.serve_sweep: base and axes of the wrong type named, never hbdlab's own line", function()
  local function clean(e) T.ok(not e:find("hbdlab/", 1, true) and not e:find("attempt to", 1, true), e) return e end
  -- base = 5: "hbdlab/sweep.lua:293: bad argument #1 to 'sweep' (table expected, got number)"
  clean(T.raises(function() hl.sweep(T.merged(sweep, { base = 5 })) end,
    "sweep field 'base': expected a table of hl.simulate fields, got number"))
  clean(T.raises(function() hl.sweep_to_csv(T.merged(sweep, { base = "x", out = dir .. "/b.csv" })) end,
    "sweep field 'base': expected a table"))
  -- axes = {1, 2, 3}: "hbdlab/sweep.lua:13: attempt to index a number value (local 'a')"
  clean(T.raises(function() hl.sweep(T.merged(sweep, { axes = { 1, 2, 3 } })) end, "sweep: axes[1] must be {name, values}"))
  -- an axes table with __index ran one point with no axis
  T.raises(function() hl.sweep(T.merged(sweep, { axes = setmetatable({}, { __index = { batch = { 1 } } }) })) end,
    "sweep field 'axes': the fields table has a metatable")
  local e = T.raises(function() hl.serve_sweep { base = serve, axes = { rate = { 1 } }, zip = {} } end,
    "hl.serve_sweep: field 'zip': expected true or false, got table a table")
  T.ok(not e:find("0x", 1, true), e)
  -- a point's message without the position hl_error gave it (pcall called hl.serve_sweep: no outer one)
  local ok, m = pcall(hl.serve_sweep, { base = { requests = 5 }, axes = { rate = { 1 } } })
  T.ok(not ok and m:find("^hl.serve_sweep point 1 %(rate = 1%): simulate field 'model'"), m)
end)

T.done()
