-- Issue 22 item 10 and the attack leftovers: text with a NUL byte crossing into C, booleans
-- that are not booleans, lists with holes or named keys, and inputs of hl.frontier and
-- hl.walkthrough that were accepted or answered with an unhelpful message. Each case was
-- accepted (or misreported) before the fix; each must now be refused naming its field.
local T = require "testlib"
local hl = require "hbdlab"

local dir = os.getenv("HBDLAB_BUILD_DIR") or "/tmp"
local job = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 } }
local function with(t, extra) return T.merged(t, extra) end
local serve_base = with(job, { rate = 2, requests = 20 })

-- Runs every case; each must raise an error holding all the expected pieces. Failures are
-- collected, so that one run names every case that regressed.
local function all_refused(cases)
  local bad = {}
  for _, c in ipairs(cases) do
    local ok, err = pcall(c[2])
    err = tostring(err)
    if ok then
      bad[#bad + 1] = c[1] .. ": accepted"
    else
      for i = 3, #c do
        if not err:find(c[i], 1, true) then bad[#bad + 1] = c[1] .. ": message lacks '" .. c[i] .. "': " .. err end
      end
    end
  end
  T.ok(#bad == 0, #bad .. " of " .. #cases .. " cases:\n  " .. table.concat(bad, "\n  "))
end

T.test("text with a NUL byte is refused wherever it crosses into C, naming the field", function()
  local N = "NUL byte"
  -- every one of these read its text up to the NUL: "llama-3.1-8b\0junk" ran llama-3.1-8b
  all_refused {
    { "simulate model", function() hl.simulate(with(job, { model = "llama-3.1-8b\0junk" })) end, "model", N, "byte 13" },
    { "simulate cluster", function() hl.simulate(with(job, { cluster = "hgx-h100\0x" })) end, "cluster", N },
    { "simulate field name", function() hl.simulate(with(job, { ["batch\0x"] = 2 })) end, "field name", N },
    { "simulate precision", function() hl.simulate(with(job, { precision = "fp8\0" })) end, "'precision'", N },
    { "simulate parallel = auto", function() hl.simulate(with(job, { parallel = "auto\0x" })) end, "'parallel'", N },
    { "simulate batch = max", function() hl.simulate(with(job, { batch = "max\0x" })) end, "'batch'", N },
    { "parallel group key", function() hl.simulate(with(job, { parallel = { ["tp\0"] = 8 } })) end, N },
    { "hl.gpu name", function() hl.gpu("H100-SXM\0") end, "gpu preset name", N },
    { "hl.model base", function() hl.model { base = "llama-3.1-8b\0", layers = 2 } end, "model field 'base'", N },
    { "hl.cluster gpu", function() hl.cluster { gpu = "H100-SXM\0", gpus = 8, hbd = 8 } end, "cluster field 'gpu'", N },
    { "object field name", function() hl.gpu("H100-SXM"):with { ["eff_gemm\0"] = 0.5 } end, N },
    { "model json file name", function() hl.model("x\0.json") end, N },
    { "serve arrival", function() hl.serve(with(serve_base, { arrival = "poisson\0" })) end, "'arrival'", N },
    { "serve field name", function() hl.serve(with(serve_base, { ["warmup\0"] = 1 })) end, "field name", N },
    { "serve input group key", function() hl.serve(with(serve_base, { input = { ["mean\0"] = 100 } })) end, N },
    { "sweep axis value", function()
      hl.sweep { base = job, axes = { model = { "llama-3.1-8b\0z" } }, progress = false } end, N },
    { "sweep axis name", function() hl.sweep { base = job, axes = { ["batch\0"] = { 1 } }, progress = false } end, N },
    { "sweep_to_csv out", function()
      hl.sweep_to_csv { base = job, axes = { batch = { 1 } }, out = dir .. "/nul\0.csv", progress = false } end, N },
    { "sweep_to_csv column", function()
      hl.sweep_to_csv { base = job, axes = { batch = { 1 } }, out = dir .. "/nul_col.csv", columns = { "ttft_s\0" },
                        progress = false } end, N },
    { "rows.read_csv path", function() hl.rows.read_csv(dir .. "/x.csv\0") end, N },
    { "walkthrough path", function() hl.walkthrough(job, dir .. "/w\0.html") end, N },
    { "roofline kind", function() hl.roofline { gpu = "H100-SXM", kind = "gemm\0x", m = 8, n = 8, k = 8 } end, N },
    { "check_fields key", function()
      hl.calibrate { cases = { { ["measured\0x"] = 1, predict = function() return 1 end } }, params = { "a" },
                     bounds = { a = { 0, 1 } } } end, N },
    { "read_file path", function() hl.core.read_file("/etc/hostname\0x") end, N },
    { "spawn argument", function() hl.core.spawn { "true\0x" } end, N },
    -- found by the attack pass on the cluster fields: the file name was cut ("/tmp/x: cannot open")
    { "expert_freq file", function()
      hl.simulate { model = "mixtral-8x7b", cluster = "hgx-h100", parallel = { tp = 8 }, expert_freq = "/tmp/x\0y" } end,
      "field 'expert_freq'", N },
  }
  -- the text is shown escaped in the message (no raw control byte reaches the terminal)
  local ok, err = pcall(hl.simulate, with(job, { model = "llama\0\27[31m" }))
  T.ok(not ok and err:find("\"llama\\0\\27[31m\"", 1, true) ~= nil, "shown escaped: " .. tostring(err))
  -- and the same text without the NUL still works
  T.ok(hl.simulate(job).ttft_s > 0, "simulate runs")
  T.ok(hl.model("llama-3.1-8b").layers == 32, "a model by name")
  T.eq(hl.model("llama-3.1-8b")["layers\0x"], nil, "a field read by a name with a NUL is no field")
end)

T.test("booleans must be booleans ('yes' and 0 were read as true)", function()
  all_refused {
    { "sweep progress", function() hl.sweep { base = job, axes = { batch = { 1 } }, progress = "yes" } end,
      "field 'progress': expected true or false, got string yes" },
    { "sweep zip", function() hl.sweep { base = job, axes = { batch = { 1 } }, zip = 1, progress = false } end, "'zip'" },
    { "sweep strict", function() hl.sweep { base = job, axes = { batch = { 1 } }, strict = "no", progress = false } end,
      "'strict'" },
    { "sweep_to_csv zip", function()
      hl.sweep_to_csv { base = job, axes = { batch = { 1 } }, out = dir .. "/b.csv", zip = "yes" } end, "'zip'" },
    { "sweep_to_csv progress", function()
      hl.sweep_to_csv { base = job, axes = { batch = { 1 } }, out = dir .. "/b.csv", progress = 0 } end, "'progress'" },
    { "function-form zip", function() hl.sweep({ axes = { x = { 1, 2 } }, zip = "yes" }, function() return {} end) end,
      "field 'zip': expected true or false" },
    { "serve_sweep zip", function() hl.serve_sweep { base = serve_base, axes = { rate = { 1, 2 } }, zip = "yes" } end,
      "hl.serve_sweep: field 'zip': expected true or false, got string yes" },
    { "frontier progress", function() hl.frontier { model = "llama-3.1-8b", systems = "hgx-h100", progress = "yes" } end,
      "hl.frontier: field 'progress': expected true or false" },
    { "minitf kv_cache", function() hl.minitf.run { model = hl.model(hl.minitf.default_model), kv_cache = "no" } end, "'kv_cache'" },
  }
end)

T.test("lists with holes or named keys are refused (ipairs stopped at the hole: {1, nil, 3} ran 1 point)", function()
  all_refused {
    { "sweep axis", function() hl.sweep { base = job, axes = { batch = { 1, nil, 3 } }, progress = false } end,
      "sweep axis 'batch': a hole in the list (value 2 is missing, value 3 is given)" },
    { "sweep axis named key", function() hl.sweep { base = job, axes = { batch = { 1, 2, x = 3 } }, progress = false } end,
      "sweep axis 'batch': expected a list {v1, v2, ...}, got a key \"x\"" },
    { "function-form axis", function() hl.sweep({ x = { 1, nil, 3 } }, function() return {} end) end,
      "sweep axis 'x': a hole" },
    { "sweep_to_csv axis", function()
      hl.sweep_to_csv { base = job, axes = { batch = { 1, nil, 2 } }, out = dir .. "/h.csv", progress = false } end,
      "a hole" },
    { "serve_sweep axis", function() hl.serve_sweep { base = serve_base, axes = { rate = { 1, nil, 3 } } } end,
      "hl.serve_sweep axis 'rate': a hole in the list" },
    { "frontier concurrency", function()
      hl.frontier { model = "llama-3.1-8b", systems = "hgx-h100", concurrency = { 1, nil, 4 } } end,
      "field 'concurrency': a hole in the list" },
    { "frontier systems", function() hl.frontier { model = "llama-3.1-8b", systems = { "hgx-h100", nil, "hgx-h100" } } end,
      "field 'systems': a hole in the list" },
  }
end)

T.test("function-form sweeps are held to the sweep memory budget before any point is built", function()
  -- 10^10 points: the point tables alone would need ~1.8 TB (it ran out of memory, or never ended)
  local v = {}
  for i = 1, 100 do v[i] = i end
  T.raises(function() hl.sweep({ a = v, b = v, c = v, d = v, e = v }, function() return {} end) end,
           "sweep: 1e+10 points need about", "over the sweep memory budget of 8 GB (HBDLAB_SWEEP_MEMORY_BYTES)",
           "hl.sweep_to_csv")
  T.eq(#hl.sweep({ a = { 1, 2 }, b = { 1, 2, 3 } }, function(p) return { s = p.a + p.b } end), 6, "a small one runs")
end)

T.test("hl.frontier: a keyed systems table, requests = 0 with simulations, internal positions", function()
  all_refused {
    -- {a = "hgx-h100"} was read as cluster fields: "systems[1]: hbdlab/objects.lua:49: cluster field 'gpu' ... nil"
    { "keyed systems", function() hl.frontier { model = "llama-3.1-8b", systems = { a = "hgx-h100" } } end,
      "hl.frontier field 'systems' (a list of systems", "unknown field 'a'" },
    { "requests 0", function() hl.frontier { model = "llama-3.1-8b", systems = "hgx-h100", requests = 0, simulate = 2 } end,
      "field 'requests': 0 is not allowed with simulate = 2" },
  }
  -- an unknown field named by the shared check carried hbdlab's own position
  local okslo, eslo = pcall(hl.frontier, { model = "llama-3.1-8b", systems = "hgx-h100", slo = { ttft = 1 } })
  T.ok(not okslo and eslo:find("^hl.frontier field 'slo': unknown field 'ttft' %(did you mean 'ttft_s'%?") ~= nil,
       "no internal position: " .. tostring(eslo))
  local okp, ep = pcall(hl.serve_sweep, { base = serve_base, axes = { rate = { { 1 } } } })
  T.ok(not okp and ep:find("(rate = a table)", 1, true) and not ep:find("0x", 1, true), "a table value named: " .. ep)
  local ok, err = pcall(hl.frontier, { model = "llama-3.1-8b", systems = { { gpu = "H100-SXM", gpus = 8, hbd = 3 } } })
  T.ok(not ok and err:find("systems[1]: ", 1, true) and not err:find("hbdlab/", 1, true), "no internal position: " .. err)
  -- a table of cluster fields is still one system
  local r = hl.frontier { model = "llama-3.1-8b", systems = { gpu = "H100-SXM", gpus = 8, hbd = 8 }, simulate = 0,
                          modes = "agg", precision = "bf16" }
  T.ok(#r.points > 0, "one system given as cluster fields")
  T.ok(hl.frontier { model = "llama-3.1-8b", systems = "hgx-h100", requests = 0, simulate = 0, modes = "agg",
                     precision = "bf16" } ~= nil, "requests = 0 with simulate = 0 is fine")
end)

T.test("hl.walkthrough of a serving result or configuration says what it takes", function()
  local sr = hl.serve(serve_base)
  all_refused {
    -- was "simulate field 'model': expected a model object or preset name, got nil"
    { "serve result", function() hl.walkthrough(sr) end, "explains one hl.simulate job", "a result of hl.serve" },
    -- was "simulate: unknown field 'rate' (allowed: ...)"
    { "serve config", function() hl.walkthrough(serve_base) end, "is a serving field (hl.serve)" },
    { "opts", function() hl.walkthrough(job, nil, { colour = 1 }) end, "hl.walkthrough opts: unknown field 'colour'" },
  }
  local ok, err = pcall(hl.walkthrough, job, nil, { colour = 1 })
  T.ok(not ok and not err:find("hbdlab/", 1, true) and err:find("^hl.walkthrough opts") ~= nil,
       "no internal file position: " .. tostring(err))
end)

T.test("control sequences in printed names and values are shown, not run", function()
  local ESC = "\27"
  local g = hl.gpu("H100-SXM"):with { name = "evil" .. ESC .. "[2J" .. ESC .. "]0;title\7" }
  local text = tostring(g)
  T.ok(not text:find("[%z\1-\8\11-\31\127]"), "no control byte in the gpu's text: " .. text:sub(1, 60))
  T.ok(text:find("evil\\27[2J\\27]0;title\\7", 1, true) ~= nil, "the name shown escaped: " .. text:sub(1, 60))
  local c = hl.cluster { gpu = g, gpus = 8, hbd = 8, name = "c" .. ESC .. "[31m" }
  T.ok(not tostring(c):find(ESC, 1, true), "cluster: " .. tostring(c):sub(1, 60))
  local m = hl.model("llama-3.1-8b"):with { name = "m" .. ESC .. "[5m" }
  T.ok(not tostring(m):find(ESC, 1, true), "model: " .. tostring(m):sub(1, 60))
  -- rows.print / rows.format: cells and column names
  local rows = { { name = "r" .. ESC .. "[2J", ["col" .. ESC] = 1 } }
  local t = hl.rows.format(rows, { "name", "col" .. ESC })
  T.ok(not t:find(ESC, 1, true) and t:find("r\\27[2J", 1, true), "rows.format: " .. t)
  -- the REPL's printer: a string result, and strings inside a table (%q already escaped those)
  local pretty = require "hbdlab.pretty"
  T.eq(pretty.terminal("a" .. ESC .. "[31mb\tc\nd\0e\127f\194\155g\155h\211\155i"),
       "a\\27[31mb\tc\nd\\0e\\127f\\194\\155g\\155h\211\155i",
       "C0 but tab and newline, DEL, C1 in UTF-8 and a lone 0x9B escaped; U+04DB (D3 9B) kept")
  T.eq(pretty.terminal("plain text, UTF-8: \226\128\148"), "plain text, UTF-8: \226\128\148", "plain text kept")
end)

-- core.check_list counts the keys first and tests each key only when there are more than the
-- list's length (sweep_to_csv's 2M-value axes): the refusals must still name the same key, and
-- its second result counts the booleans (to_core_axis reads it instead of scanning the values).
T.test("long lists: the key count decides, the messages name the key", function()
  local core = require "hbdlab.core"
  local long = {}
  for i = 1, 100000 do long[i] = i end
  T.eq(select("#", core.check_list(long, "l")), 2, "two results")
  T.eq(core.check_list(long, "l"), 100000, "the length")
  long.x = 1
  T.raises(function() core.check_list(long, "long axis") end, "long axis: expected a list {v1, v2, ...}, got a key \"x\"")
  long.x = nil
  long[100002] = 1 -- after a hole
  T.raises(function() core.check_list(long, "long axis") end,
    "long axis: a hole in the list (value 100001 is missing, value 100002 is given)")
  local reversed = {} -- integer keys in the hash part: still a list
  for i = 5000, 1, -1 do reversed[i] = i end
  T.eq(core.check_list(reversed, "r"), 5000, "a list built from its end")
  local _, bools = core.check_list({ true, 1, false, "x", true }, "b")
  T.eq(bools, 3, "booleans counted")
  local rows = hl.sweep { base = job, axes = { eplb = { true, false } }, progress = false }
  T.eq(#rows, 2, "a boolean axis still runs")
end)

T.done()
