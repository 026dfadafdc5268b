-- hl.simulate reuses the plan it read from a job table when the next call brings a table with
-- the same keys and values (in the same order) and the same model and cluster objects
-- (lua/bind/l_sim.c, "fingerprint"). Each test changes the job in one way between two calls and
-- compares the second result with that of core.simulate on a fresh deep copy of the job, a call
-- that never reuses a plan (no objects given beside the table). A cache that missed the change
-- would return the first job's numbers, which differ from the reference in the fields compared.
local T = require "testlib"
local hl = require "hbdlab"
local core = require "hbdlab.core"

local function deep_copy(t)
  local o = {}
  for k, v in pairs(t) do o[k] = type(v) == "table" and getmetatable(v) == nil and deep_copy(v) or v end
  return o
end

-- The reference result: the job read in full (core.simulate without objects beside the table).
local function reference(job)
  local t = deep_copy(job)
  if type(t.model) == "string" and t.model:match("%.json$") then t.model = hl.model(t.model) end -- read again
  if type(t.cluster) == "table" then t.cluster = hl.cluster(t.cluster) end -- a table of fields
  return (core.simulate(t))
end

-- Every top-level and group field of a equals b's (numbers, strings, booleans), and each is there.
local function same(a, b, label)
  local n = 0
  for k, v in pairs(core.result_view_plain(a)) do
    if type(v) == "table" and k ~= "candidates" then
      for k2, v2 in pairs(v) do
        if type(v2) ~= "table" then T.eq(b[k][k2], v2, label .. ": " .. k .. "." .. k2); n = n + 1 end
      end
    elseif type(v) ~= "table" then
      T.eq(b[k], v, label .. ": " .. k)
      n = n + 1
    end
  end
  T.ok(n > 60, label .. ": fields compared")
end

local model = hl.model("llama-3.1-8b")
local cluster = hl.cluster("hgx-h100")
local function base()
  return { model = model, cluster = cluster, precision = "bf16", batch = 8, input = 2048, output = 64,
           parallel = { tp = 4, dp = 2 } }
end

-- Calls hl.simulate(job) twice (the second would reuse the plan), then change(job), then once
-- more: that result must be the reference of the changed job and differ from the first in `field`.
local function check(label, change, field)
  local job = base()
  local r1 = hl.simulate(job)
  same(hl.simulate(job), r1, label .. ", unchanged")
  change(job)
  local r2 = hl.simulate(job)
  same(r2, reference(job), label)
  local g, leaf = field:match("^(%w+)%.(.+)$")
  local a, b = g and r1[g][leaf] or r1[field], g and r2[g][leaf] or r2[field]
  T.ok(a ~= b, label .. ": " .. field .. " moved (" .. tostring(a) .. " -> " .. tostring(b) .. ")")
  same(hl.simulate(job), r2, label .. ", again") -- and the changed plan is kept in turn
end

T.test("a number field changed between calls", function()
  check("input 2048 -> 4096", function(job) job.input = 4096 end, "ttft_s")
  check("batch 8 -> 16.0 (a float)", function(job) job.batch = 16.0 end, "batch")
end)

T.test("a member of the parallel group changed, added or removed", function()
  check("parallel.tp 4 -> 2, dp 2 -> 4", function(job) job.parallel.tp, job.parallel.dp = 2, 4 end, "parallel.tp")
  check("parallel.pp added, dp removed", function(job) job.parallel.pp, job.parallel.dp = 2, nil end, "parallel.pp")
  check("parallel.dp removed, tp 8", function(job) job.parallel.tp, job.parallel.dp = 8, nil end, "parallel.dp")
  check("parallel table replaced", function(job) job.parallel = { tp = 8 } end, "parallel.tp")
end)

T.test("a string field changed, a field added or removed", function()
  check("precision bf16 -> fp8", function(job) job.precision = "fp8" end, "precision")
  check("overlap added", function(job) job.overlap = 1 end, "prefill.time_s")
  check("output removed (the default)", function(job) job.output = nil end, "total_s")
  check("batch = \"max\"", function(job) job.batch = "max" end, "batch")
end)

T.test("the field lua_next gives last removed (the walk must end where the plan's did)", function()
  local moves = { input = "ttft_s", output = "total_s", batch = "batch", overlap = "prefill.time_s",
                  precision = "precision" }
  local fields = base()
  fields.precision, fields.overlap, fields.parallel = "fp8", 1, { tp = 8 } -- batch 1 (the default) on dp 1
  local names = {}
  for k in pairs(fields) do names[#names + 1] = k end
  table.sort(names)
  for try = 0, 200 do -- tables of the same fields laid out otherwise, until one ends with a removable field
    local job, last = {}, nil
    for i = 1, try do job["pad" .. i] = true end -- grows the hash part (the pads are removed below)
    for i = 1, #names do
      local k = names[(i + try) % #names + 1]
      job[k] = type(fields[k]) == "table" and deep_copy(fields[k]) or fields[k]
    end
    for i = 1, try do job["pad" .. i] = nil end
    for k in next, job do last = k end
    if moves[last] then
      local field = moves[last]
      local r1 = hl.simulate(job)
      hl.simulate(job)
      job[last] = nil
      local r2 = hl.simulate(job)
      same(r2, reference(job), last .. " removed")
      local g, leaf = field:match("^(%w+)%.(.+)$")
      T.ok((g and r1[g][leaf] or r1[field]) ~= (g and r2[g][leaf] or r2[field]), last .. " removed: " .. field .. " moved")
      return
    end
  end
  error("no insertion order put a removable field last")
end)

T.test("an error after a call that succeeded is still raised", function()
  local job = base()
  hl.simulate(job)
  hl.simulate(job)
  job.batch = -1
  local want = select(2, pcall(core.simulate, deep_copy(job)))
  T.ok(type(want) == "string" and want:find("batch", 1, true), "the reference raises on batch: " .. tostring(want))
  T.raises(function() hl.simulate(job) end, want)
  job.batch = 8
  job.parallel.tp = "four"
  T.raises(function() hl.simulate(job) end, "tp")
  job.parallel.tp = 4
  job.inptu = 4096
  T.raises(function() hl.simulate(job) end, "unknown field 'inptu'")
  job.inptu = nil
  same(hl.simulate(job), reference(job), "the job mended")
end)

T.test("a model object's :with copy, another cluster object", function()
  check("model:with{layers = 16}", function(job) job.model = model:with { layers = 16 } end, "ttft_s")
  check("cluster of 16 GPUs", function(job)
    job.cluster = hl.cluster { gpu = "H100-SXM", gpus = 16, hbd = 8 }
    job.parallel.dp = 4
  end, "parallel.gpus")
  check("a cluster of another GPU", function(job) job.cluster = hl.cluster { gpu = "B200", gpus = 8, hbd = 8 } end,
    "ttft_s")
end)

T.test("two job tables in turn, and a copy of the same fields", function()
  local a, b = base(), base()
  b.input = 8192
  local ra, rb = reference(a), reference(b)
  for _ = 1, 3 do
    same(hl.simulate(a), ra, "table a")
    same(hl.simulate(b), rb, "table b")
  end
  same(hl.simulate(deep_copy(a)), ra, "a copy of a")
end)

-- The lazy breakdown re-runs the job a view keeps; views of calls that reuse a plan share one
-- kept job, which must stay that of their call after the table changes and the plan moves on.
local function breakdown(r)
  local rows = {}
  for _, phase in ipairs { "prefill", "decode" } do
    for _, it in ipairs(r[phase].breakdown) do rows[#rows + 1] = string.format("%s %s %.17g", phase, it.name, it.time_s) end
  end
  return table.concat(rows, "\n")
end

T.test("the breakdown of views that share a kept job, after the job changed", function()
  local job = base()
  local r1, r2 = hl.simulate(job), hl.simulate(job)
  local want1 = breakdown(reference(job))
  job.input, job.parallel.tp, job.parallel.dp = 8192, 8, 1
  local r3 = hl.simulate(job)
  local r4 = hl.simulate(job)
  local want3 = breakdown(reference(job))
  T.ok(want1 ~= want3, "the two jobs' breakdowns differ")
  T.eq(breakdown(r4), want3, "the changed job, its second call")
  T.eq(breakdown(r1), want1, "the first job, first call (read after the change)")
  T.eq(breakdown(r2), want1, "the first job, second call")
  T.eq(breakdown(r3), want3, "the changed job, first call")
end)

T.test("preset names: two pairs in turn, one name changed, a table of fields", function()
  local a = { model = "llama-3.1-8b", cluster = "hgx-h100", batch = 8, input = 2048, output = 64, parallel = { tp = 8 } }
  local b = T.merged(a, { model = "llama-3.1-70b" })
  local c = T.merged(a, { cluster = "hgx-b200" })
  local d = T.merged(a, { cluster = { gpu = "H100-SXM", gpus = 8, hbd = 8, scaleout_gbps = 100 } })
  local want = { reference(a), reference(b), reference(c), reference(d) }
  T.ok(want[1].ttft_s ~= want[2].ttft_s and want[1].ttft_s ~= want[3].ttft_s, "the pairs differ")
  for _ = 1, 3 do
    for i, job in ipairs { a, b, c, d } do same(hl.simulate(job), want[i], "job " .. i) end
  end
  T.ok(rawequal(core.result_view_kept(hl.simulate(a)) and select(2, core.result_view_kept(hl.simulate(a))),
    hl.model("llama-3.1-8b")), "the name's object is the preset cache's")
end)

T.test("a model file rewritten between calls", function()
  local path = os.tmpname() .. ".json"
  local function write(layers)
    local f = assert(io.open(path, "w"))
    f:write(string.format('{"hidden": 4096, "layers": %d, "heads": 32, "kv_heads": 8, "ffn": 14336, "vocab": 128256}',
      layers))
    f:close()
  end
  write(32)
  for _, cl in ipairs { cluster, "hgx-h100" } do -- beside an object, and beside a preset name
    write(32)
    local job = base()
    job.model, job.cluster = path, cl
    local r1 = hl.simulate(job)
    same(hl.simulate(job), r1, "the same file")
    write(16)
    local r2 = hl.simulate(job)
    same(r2, reference(job), "the file rewritten")
    T.ok(r2.ttft_s < r1.ttft_s, "half the layers take less time")
  end
  os.remove(path)
end)

T.done()
