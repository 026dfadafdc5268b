-- hl.simulate results are views over the C result (lua/bind/l_result_view.c): they must read,
-- print, iterate and serialise exactly like a plain table of the same fields. Each job's view
-- is compared with a plain copy made by `plain_copy` below (every field pairs() gives, groups
-- copied into tables of their own), for dense and MoE jobs, a searched mapping (candidates),
-- limits missed, an unpriced GPU (nil fields) and jobs with and without warnings.
local T = require "testlib"
local hl = require "hbdlab"
local core = require "hbdlab.core"
local warn = require "hbdlab.warn"
local sim = require "hbdlab.simulate"

-- A plain table holding every field of r: groups copied into plain tables (the phase tables'
-- lazy breakdown is not a field until read, as in the table hl.simulate returned before).
local function plain_copy(r)
  local t = {}
  for k, v in pairs(r) do
    if type(v) == "table" and (k == "candidates" or getmetatable(v) == nil or getmetatable(v).__index) then
      local c = {}
      for k2, v2 in pairs(v) do c[k2] = v2 end
      v = c
    end
    t[k] = v
  end
  return t
end

-- The keys a result shows at its top level and in its groups, from the core's result table
-- (not from the view): "a.b" is b in group a; a field whose value is unknown (nil) is absent.
local function expected_keys(r)
  local top, groups = { ttft_ms = true, tpot_ms = true }, {}
  for _, f in ipairs(core.result_fields()) do
    if not f.alias_of then
      local g, leaf = f.name:match("^([^.]+)%.(.+)$")
      if g then
        groups[g] = groups[g] or {}
        if r[g][leaf] ~= nil then groups[g][leaf] = true end
        top[g] = true
      elseif r[f.name] ~= nil then
        top[f.name] = true
      end
    end
  end
  return top, groups
end

local function count(t) local n = 0 for _ in pairs(t) do n = n + 1 end return n end

local jobs = {
  dense = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, batch = 4, input = 2048 },
  moe = { model = hl.model("qwen1.5-110b"):with { experts = 16, topk = 2, max_position = 65536 },
          cluster = hl.cluster { gpu = "B200", gpus = 128, hbd = 64 }, precision = "fp8", batch = 16,
          input = 32768, output = 1024, parallel = { tp = 8, ep = 16 } },
  auto = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = "auto", batch = 8 },
  limits = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 1 }, batch = 64, max_ttft_s = 1e-6 },
  unpriced = { model = "llama-3.1-8b", cluster = { gpu = "TPU-v5p", gpus = 8, hbd = 8 }, parallel = { tp = 8 } },
  long = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, input = 200000, output = 16 },
  unmapped = { model = "llama-3.1-8b", cluster = "hgx-h100", batch = 8 },
}

for name, job in pairs(jobs) do
  T.test("a view reads, prints, iterates and serialises like a plain table: " .. name, function()
    warn.seen = {}
    local r = hl.simulate(job)
    local p = plain_copy(r)
    T.eq(type(r), "table", "type")
    T.eq(#r, 0, "#r")
    T.eq(getmetatable(r), sim.result_mt, "the result metatable")
    -- keys: what the core's result table lists, no more, no less
    local top, groups = expected_keys(r)
    local extra = (r.candidates and 1 or 0) + (rawget(r, "meets_limits") ~= nil and 1 or 0) +
      (r.objective and 1 or 0)
    T.eq(count(p), count(top) + extra, "top-level keys")
    for k in pairs(top) do T.ok(p[k] ~= nil, "key " .. k) end
    for g, keys in pairs(groups) do
      T.eq(count(p[g]), count(keys), "keys of group " .. g)
      for k in pairs(keys) do T.eq(p[g][k], r[g][k], g .. "." .. k) end
    end
    -- values: indexing and pairs agree, groups are one table each
    for k, v in pairs(r) do
      T.ok(r[k] == v, "r." .. k .. " equals what pairs gave")
      T.eq(math.type(r[k]), math.type(p[k]), "number subtype of " .. k)
    end
    T.ok(r.prefill == r.prefill and r.memory == r.memory, "a group is built once")
    T.eq(r.ttft_ms, r.ttft_s * 1e3, "friendly alias")
    T.eq(r.no_such_field, nil, "unknown key")
    -- printing and serialising
    T.eq(tostring(r), sim.result_mt.__tostring(p), "tostring")
    T.eq(core.json_encode(r), core.json_encode(p), "json_encode")
    T.eq(core.json_encode({ r, r }, true), core.json_encode({ p, p }, true), "json_encode in a list")
    local cols = {}
    for k, v in pairs(p) do if type(v) ~= "table" then cols[#cols + 1] = k end end
    table.sort(cols)
    T.eq(hl.rows.to_csv({ r }, cols), hl.rows.to_csv({ p }, cols), "CSV")
    T.eq(hl.rows.format({ r }, { "ttft_s", "tpot_s", "bound" }), hl.rows.format({ p }, { "ttft_s", "tpot_s", "bound" }),
      "hl.rows.format")
    T.eq(core.json_encode(core.result_view_plain(r)), core.json_encode(p), "core.result_view_plain")
    -- the lazy breakdown, as before
    T.ok(#r.prefill.breakdown > 0 and #r.decode.events > 0, "breakdown and events built on access")
    T.ok(r:trace() ~= nil, "r:trace()")
  end)
end

T.test("fields set on a view are its own, as in a plain table", function()
  local r = hl.simulate(jobs.dense)
  local ttft = r.ttft_s
  r.label = "mine"
  r.ttft_s = 42
  T.eq(r.label, "mine", "a new field")
  T.eq(r.ttft_s, 42, "a field overridden")
  local p = plain_copy(r)
  T.eq(p.label, "mine", "pairs sees the new field")
  T.eq(p.ttft_s, 42, "and the override")
  T.ok(core.json_encode(r):find('"label":"mine"', 1, true) ~= nil, "json_encode sees it")
  T.ok(ttft ~= 42, "the C value was another")
end)

T.test("warnings: decided by the core's flags, printed once, as before", function()
  warn.seen = {}
  hl.simulate(jobs.dense)
  T.ok(next(warn.seen) == nil, "a plain job warns nothing")
  -- (a length already checked for this model object is not checked again: jobs.long ran above)
  local longer = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, input = 150000, output = 16 }
  hl.simulate(longer)
  local n = count(warn.seen)
  T.eq(n, 1, "a prompt beyond the context warns once")
  local msg = next(warn.seen)
  T.ok(msg:find("beyond llama-3.1-8b's context limit", 1, true) ~= nil, msg)
  warn.seen = {}
  hl.simulate(longer)
  T.eq(count(warn.seen), 0, "and not again (decided once per model object and length)")
  warn.seen = {}
  hl.simulate(jobs.unmapped)
  T.ok((next(warn.seen) or ""):find("'parallel' is not given for a 8-GPU cluster", 1, true) ~= nil, "no mapping")
  warn.seen = {}
  hl.simulate(jobs.limits)
  T.ok((next(warn.seen) or ""):find("misses the limits", 1, true) ~= nil, "limits missed")
  warn.seen = {}
  hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, spec_accept = 0.7 }
  T.ok((next(warn.seen) or ""):find("spec_accept has no effect", 1, true) ~= nil, "speculative field alone")
  -- a failing job without a mapping says so (it may fail for want of one); a misspelt field fails
  -- for that alone, and the error is the whole story
  warn.seen = {}
  T.raises(function() hl.simulate { model = "llama-3.1-405b", cluster = "hgx-h100", batch = 8 } end, "does not fit HBM")
  T.ok((next(warn.seen) or ""):find("'parallel' is not given", 1, true) ~= nil, "a failure with no mapping names it")
  warn.seen = {}
  T.raises(function() hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", batch = 8, outptu = 128 } end,
    "unknown field 'outptu'")
  T.eq(count(warn.seen), 0, "an unknown field: no mapping warning before the error")
  -- a refused value is the whole story too (the warning was decided by matching "unknown field"
  -- in the message, so this one warned)
  T.raises(function() hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", batch = -8 } end, "'batch'")
  T.eq(count(warn.seen), 0, "a refused value: no mapping warning before the error")
  T.raises(function() hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", overlap = { bogus = 1 } } end,
    "unknown field 'bogus'")
  T.eq(count(warn.seen), 0, "an unknown group member: none either")
end)

T.test("the lazy breakdown re-runs the job as it was run (objects kept or copied, expert_freq kept)", function()
  local skew = {}
  for i = 1, 16 do skew[i] = (i == 1 and 0.4 or 0.04) end -- 0.4 + 15 * 0.04 = 1
  local base = { model = hl.model("qwen1.5-110b"):with { experts = 16, topk = 2 },
                 cluster = hl.cluster { gpu = "B200", gpus = 16, hbd = 8 }, precision = "fp8", batch = 64,
                 input = 4096, output = 64, parallel = { tp = 1, ep = 16 } }
  local skewed = {}
  for k, v in pairs(base) do skewed[k] = v end
  skewed.expert_freq = skew
  local a = hl.simulate(skewed)           -- the view keeps the model and cluster objects
  local b = core.simulate(skewed)         -- no objects given: the view copies them
  local u = hl.simulate(base)
  local enc = core.json_encode
  T.eq(enc(a.prefill.breakdown), enc(b.prefill.breakdown), "prefill breakdown, objects kept or copied")
  T.eq(enc(a.decode.events), enc(b.decode.events), "decode events")
  T.ok(enc(a.prefill.breakdown) ~= enc(u.prefill.breakdown), "the routing shares reach the re-run")
  T.eq(a.prefill.time_s, b.prefill.time_s, "the same job")
end)

T.test("hl.walkthrough's job of a view: the fields with the objects", function()
  local r = hl.simulate(jobs.dense)
  local job = sim.job_of[r]
  T.eq(getmetatable(job.model), getmetatable(hl.model("llama-3.1-8b")), "model object")
  T.eq(job.batch, 4, "the fields")
  local r2 = hl.simulate(jobs.moe)
  T.ok(sim.job_of[r2] == jobs.moe, "objects given: the table itself")
  T.eq(sim.job_of[{}], nil, "not a view")
end)

T.done()
