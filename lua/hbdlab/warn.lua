-- Warnings for silent defaults: printed once per distinct message to stderr as
-- "hbdlab: warning: ...". hl.warnings(false) silences them.
local objects = require "hbdlab.objects"

local M = { enabled = true, seen = {} }

function M.warn(msg)
  if not M.enabled or M.seen[msg] then return end
  local d = require("hbdlab.core").dist()
  if d.mpi and d.index > 0 then return end -- under mpirun every rank runs the script: rank 0 speaks
  M.seen[msg] = true
  io.stderr:write("hbdlab: warning: ", msg, "\n")
  if M.sink then M.sink(msg) end -- the notebook runner shows a cell's warnings in its report
end

local mapping_keys = { "parallel", "tp", "pp", "ep", "dp", "etp", "instance_gpus" }
local spec_keys = { "spec_accept", "spec_draft_layers", "spec_draft_model" }

-- Decided once per object: a model's context limit and name (read through the userdata index
-- once), and the prompt + output lengths already checked against it. Weak keys: an object
-- no one holds any more is forgotten.
local model_limits = setmetatable({}, { __mode = "k" })

local function context_check(m, total)
  local lim = model_limits[m]
  if not lim then
    lim = { max_position = m.max_position or 0, name = m.name, seen = {} }
    model_limits[m] = lim
  end
  if lim.max_position <= 0 or total <= lim.max_position or lim.seen[total] then return end
  lim.seen[total] = true -- formatted and printed (once) only now
  M.warn(string.format("input + output = %.0f tokens is beyond %s's context limit of %d tokens (max_position); " ..
    "it is simulated anyway", total, lim.name, lim.max_position))
end

--- A prompt + output of `total` tokens beyond `model`'s context limit (a preset name, table or
--- object): the same warning as hl.simulate's (hl.serve's longest request).
function M.check_context(model, total)
  if not M.enabled or type(total) ~= "number" then return end
  local m = model
  if type(m) ~= "userdata" then
    local ok
    ok, m = pcall(objects.coerce, "model", m)
    if not ok then return end
  end
  if type(m) == "userdata" then context_check(m, total) end
end

--- Checks the simulate fields t (and its result r when known) for silent defaults:
--- a prompt + output beyond the model's context limit, and no mapping on a multi-GPU cluster.
function M.check_job(t, r, mapping_only)
  if not M.enabled or type(t) ~= "table" then return end
  if mapping_only then return M.check_mapping(t, r) end
  local m = t.model
  if type(m) ~= "userdata" then
    local ok
    ok, m = pcall(objects.coerce, "model", m)
    if not ok then m = nil end
  end
  local input = r and r.input or t.input or 1024 -- the core's defaults
  local output = r and r.output or t.output or 128
  if type(m) == "userdata" and type(input) == "number" and type(output) == "number" then
    context_check(m, input + output)
  end
  for _, k in ipairs(spec_keys) do
    if t[k] ~= nil and (t.spec_tokens == nil or t.spec_tokens == 0) then
      M.warn(k .. " has no effect without spec_tokens >= 1 (speculative decoding is off)")
    end
  end
  M.check_mapping(t, r)
end

--- two_batch_overlap set where it overlaps nothing (core/src/sim.c tbo_on, docs/MODEL.md 6.5): it
--- hides the EP dispatch and combine of MoE layers, with one pipeline stage; a decode step splits its
--- sequences in two (SGLang's compute_split_seq_index: num_seqs // 2), so one sequence per rank runs
--- whole; speculative decode steps run without it. Which of these holds is core.simulate's to say
--- (lua/bind/l_sim.c, flags 32 ep = 1, 64 pp > 1, 128 speculation, 256 one sequence per rank); this
--- words them. r: the result.
function M.check_tbo(r, flags)
  if not M.enabled then return end
  local p = r.parallel
  if flags & 32 ~= 0 then
    M.warn("two_batch_overlap has no effect with ep = 1: it overlaps the expert-parallel dispatch and combine of " ..
      "MoE layers (give parallel.ep > 1 on a MoE model)")
  end
  if flags & 64 ~= 0 then
    M.warn(string.format("two_batch_overlap has no effect with pp = %d: it is modelled for one pipeline stage", p.pp))
  end
  if flags & 128 ~= 0 then
    M.warn("two_batch_overlap: the speculative decode steps (spec_tokens) run without it; only prefill overlaps")
  end
  if flags & 256 ~= 0 then
    M.warn(string.format("two_batch_overlap: a decode step of %g sequence per rank has nothing to split " ..
      "(SGLang halves the sequences), so decode runs without it; only prefill overlaps", r.batch / p.dp))
  end
end

--- The unknown-price rule (core/src/cost.c): a GPU without a price (capex_usd) or a
--- power leaves the USD / J fields nil, never 0; say so once per GPU. gpu: the hl_gpu.
function M.check_cost(gpu, r)
  if not M.enabled or (type(r) ~= "table" and not require("hbdlab.core").is_sweep_row(r)) then return end
  if r.usd_per_mtok ~= nil then return end
  local name = gpu and gpu.name or "?"
  if r.usd_per_mtok == nil and r.joules_per_token == nil then
    M.warn(string.format("GPU '%s' has no price (capex_usd) and no power (power_w, tdp_w): the cost and energy " ..
      "fields (usd_per_mtok*, joules_per_token, power_w, r.cost.*) are nil (unknown), not 0; set them with " ..
      "hl.gpu{base = \"%s\", capex_usd = ..., power_w = ...} (docs/MODEL.md section 11)", name, name))
  elseif r.usd_per_mtok == nil then
    M.warn(string.format("GPU '%s' has no price (capex_usd): the USD fields (usd_per_mtok*, r.cost.*_usd) are nil " ..
      "(unknown), not 0; set it with hl.gpu{base = \"%s\", capex_usd = ...} (docs/MODEL.md section 11)", name, name))
  end
end

--- A fixed batch is not searched: max_ttft_s / max_tpot_s only steer batch = "max" and
--- parallel = "auto". A result that misses them says so (r.meets_limits = false, set by the core).
function M.check_limits(t, r)
  if not M.enabled or type(r) ~= "table" or r.meets_limits ~= false then return end
  M.warn(string.format("batch %g misses the limits (max_ttft_s %s, max_tpot_s %s): TTFT %.4g s, TPOT %.4g s; " ..
    "r.meets_limits = false. The limits choose the batch only with batch = \"max\" (or the mapping with " ..
    "parallel = \"auto\")", r.batch, tostring(t.max_ttft_s or 0), tostring(t.max_tpot_s or 0), r.ttft_s, r.tpot_s))
end

--- A sweep whose base has limits but no search: its rows are not checked against them.
function M.check_sweep_limits(base, axes)
  if not M.enabled or type(base) ~= "table" then return end
  if not (base.max_ttft_s or base.max_tpot_s) or base.batch == "max" or base.parallel == "auto" then return end
  for _, ax in ipairs(axes or {}) do
    if ax.name == "batch" or ax.name == "parallel" then return end -- a point may search
  end
  M.warn("hl.sweep: max_ttft_s / max_tpot_s are given with a fixed batch and mapping: they choose the batch only " ..
    "with batch = \"max\" (or the mapping with parallel = \"auto\"), so the rows are not checked against them")
end

function M.is_mapping_key(name)
  for _, k in ipairs(mapping_keys) do if k == name then return true end end
  return false
end

function M.check_mapping(t, r)
  for _, k in ipairs(mapping_keys) do if t[k] ~= nil then return end end
  local gpus = r and r.parallel.gpus
  if not gpus then
    local okc, c = pcall(objects.coerce, "cluster", t.cluster)
    gpus = okc and type(c) == "userdata" and c.gpus or 1
  end
  if gpus > 1 then
    local p = r and r.parallel
    M.warn(string.format("'parallel' is not given for a %d-GPU cluster: %s; give parallel = {tp = ..., ep = ...} or " ..
      "parallel = \"auto\" to choose", gpus,
      p and string.format("mapped as tp %d, pp %d, ep %d, dp %d (data parallel)", p.tp, p.pp, p.ep, p.dp)
        or "every GPU holds a whole copy of the model (tp = pp = ep = 1, data parallel)"))
  end
end

return M
