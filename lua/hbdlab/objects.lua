-- GPUs, clusters and models from Lua: presets by name, custom ones from
-- tables (fields in SI units, or friendly aliases whose names carry the unit),
-- readable summaries when printed. Fills hl.gpu, hl.cluster, hl.model, ...
local core = require "hbdlab.core"

local M = {}

-- Friendly aliases (hbm_gb, scaleout_gbps, ...): name -> { SI field, factor to SI }, the
-- core's table (core/src/hw.c), which the Lua tables and JSON files of objects both accept;
-- kept here for the sweep's friendly axes.
M.aliases = { gpu = core.aliases("gpu"), cluster = core.aliases("cluster"), model = core.aliases("model") }

-- A name ending in .json is a file holding the object (the same fields as a preset).
local function from_file(kind, path)
  local ok, text = pcall(core.read_file, path) -- a regular text file within the input limit
  if not ok then error(string.format("%s file %s", kind, tostring(text)), 3) end
  return core.from_json(kind, text, path)
end

-- Objects of preset names, resolved once (objects are immutable, so one object serves every
-- call); emptied when $HBDLAB_PRESETS (where user presets come from) changes: core.presets_generation
-- tells, without a string per call. A preset file edited while the process runs is not read again.
local presets = { gpu = {}, cluster = {}, model = {} }
local presets_generation = core.presets_generation
local presets_gen = presets_generation()

-- Empties the cache when $HBDLAB_PRESETS changed since the last look.
local function fresh()
  local gen = presets_generation()
  if gen ~= presets_gen then
    presets_gen = gen
    presets = { gpu = {}, cluster = {}, model = {} }
  end
end

-- The object of preset name x of `kind` (ctor builds it on the first call), the cache fresh().
local function cached(kind, ctor, x)
  local hit = presets[kind][x]
  if hit then return hit end
  if x:match("%.json$") then return from_file(kind, x) end
  local obj = ctor(x)
  presets[kind][x] = obj
  return obj
end

-- The object of preset name x of `kind`.
local function named(kind, ctor, x)
  fresh()
  return cached(kind, ctor, x)
end

local function wrap(kind, ctor)
  return function(x)
    if type(x) == "string" then return named(kind, ctor, x) end
    if type(x) == "table" then
      -- a cluster's gpu may be a plain table of GPU fields too
      if kind == "cluster" and type(x.gpu) == "table" then
        local c = {}
        for k, v in pairs(x) do c[k] = v end
        c.gpu = M.gpu(x.gpu)
        x = c
      end
    end
    return ctor(x)
  end
end

--- An object of `kind` from an object, a preset name or a plain table of fields
--- (what hl.gpu / hl.cluster / hl.model accept); other values pass through.
function M.coerce(kind, x)
  if type(x) == "table" and getmetatable(x) == nil then return M[kind](x) end
  if type(x) == "string" then return M[kind](x) end
  return x
end

--- A shallow copy of simulate fields whose model / cluster plain tables or preset names became
--- objects (a name resolves once: the presets cache above).
function M.coerce_job(t, what)
  if type(t) ~= "table" then return t end
  core.check_plain_table(t, what or "job") -- the copy below would drop an __index's fields
  local tm, tc = type(t.model), type(t.cluster)
  local plain_model = (tm == "table" and getmetatable(t.model) == nil) or tm == "string"
  local plain_cluster = (tc == "table" and getmetatable(t.cluster) == nil) or tc == "string"
  if not plain_model and not plain_cluster then return t end
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  if plain_model then c.model = M.model(t.model) end
  if plain_cluster then c.cluster = M.cluster(t.cluster) end
  return c
end

M.gpu = wrap("gpu", core.gpu)
M.cluster = wrap("cluster", core.cluster)
-- The name of an imported Hugging Face model whose config has no _name_or_path: its folder
-- (".../Qwen2.5-7B/config.json" or the folder itself) or its file ("qwen2.5-72b.json"), so two
-- imports of one model_type ("qwen2") do not share a name in rows and legends. full: the
-- config file's path (from_hf below).
local function hf_name(full)
  local dir, file = full:match("^(.-)/?([^/]+)$")
  local nm = file == "config.json" and (dir or ""):match("([^/]+)$") or file:gsub("%.json$", "")
  if nm == nil or nm == "" or nm == "." or nm == ".." then return nil end
  return nm
end

--- hl.model.from_hf(path [, {name = "..."}]): a model from a Hugging Face config.json.
local function from_hf(path, opts)
  local m = core.model_from_hf(path)
  if opts ~= nil and type(opts) ~= "table" then error("hl.model.from_hf: options must be a table {name = ...}", 2) end
  if opts and opts.name ~= nil then return m:with { name = opts.name } end
  local full = path:match("%.json$") and path or (path:gsub("/+$", "") .. "/config.json")
  local ok, cfg = pcall(function() return core.json_decode(core.read_file(full), full) end)
  local given = ok and type(cfg) == "table" and cfg._name_or_path
  local nm = hf_name(full)
  if (type(given) ~= "string" or given == "") and nm then m = m:with { name = nm } end
  return m
end

local model_of = wrap("model", core.model)
M.model = setmetatable({ from_hf = from_hf }, {
  __call = function(_, x) return model_of(x) end,
})

--- The object a simulate field `model` / `cluster` (kind) names: a preset name, or a plain table of
--- fields; other values (objects, or what the core refuses, naming the field) pass through.
function M.resolved(kind, x)
  local tx = type(x)
  if tx == "string" then return named(kind, kind == "model" and core.model or core.cluster, x) end
  if tx == "table" and getmetatable(x) == nil then return M[kind](x) end
  return x
end

-- The last two preset names resolved_pair found in the cache, their objects, and the generation
-- then: the same two names at the same generation are the same objects (the cache keeps them
-- until it is emptied), with no look-up.
local pair_m, pair_c, pair_mo, pair_co, pair_gen

--- resolved("model", m), resolved("cluster", c), in that order, with one look at $HBDLAB_PRESETS
--- for the two (hl.simulate's fields).
function M.resolved_pair(m, c)
  if m == pair_m and c == pair_c and presets_generation() == pair_gen then return pair_mo, pair_co end
  local tm, tc = type(m), type(c)
  if tm == "string" or tc == "string" then fresh() end
  local mo, co = m, c
  if tm == "string" then mo = cached("model", core.model, m)
  elseif tm == "table" and getmetatable(m) == nil then mo = M.model(m) end
  if tc == "string" then co = cached("cluster", core.cluster, c)
  elseif tc == "table" and getmetatable(c) == nil then co = M.cluster(c) end
  if tm == "string" and tc == "string" and presets.model[m] == mo and presets.cluster[c] == co then
    pair_m, pair_c, pair_mo, pair_co, pair_gen = m, c, mo, co, presets_gen -- names of the cache (not files)
  end
  return mo, co
end


local function si(v, unit)
  local prefixes = { { 1e15, "P" }, { 1e12, "T" }, { 1e9, "G" }, { 1e6, "M" }, { 1e3, "k" } }
  for _, p in ipairs(prefixes) do
    if math.abs(v) >= p[1] then return string.format("%.4g %s%s", v / p[1], p[2], unit) end
  end
  return string.format("%.4g %s", v, unit)
end
M.si = si

local function flops_line(g)
  local parts = {}
  for _, p in ipairs { "fp32", "bf16", "fp16", "fp8", "fp4", "int8" } do
    local v = g[p .. "_flops"]
    parts[#parts + 1] = p .. " " .. (v > 0 and string.format("%.0f", v / 1e12) or "-")
  end
  return table.concat(parts, " / ") .. " TFLOP/s dense"
end

-- Object names come from users (tables, JSON, presets): printed, their control bytes are shown
local shown = function(s) return require("hbdlab.pretty").terminal(s) end

core.metatable("gpu").__tostring = function(g)
  return string.format("gpu %s: %s; HBM %s at %s; scale-up %s/dir, scale-out %s/dir%s",
    shown(g.name), flops_line(g), si(g.hbm_bytes, "B"), si(g.hbm_bw, "B/s"), si(g.scaleup_bw, "B/s"),
    si(g.scaleout_bw, "B/s"), g.in_switch_reduce and ", in-switch reduction" or "")
end

core.metatable("cluster").__tostring = function(c)
  return string.format("cluster %s: %d x %s in %d HBD(s) of %d (%s fabric); scale-up %s/dir, %.2g us/step; " ..
    "scale-out %s/dir, %.3g us/step",
    shown(c.name), c.gpus, shown(c.gpu.name), c.gpus // c.hbd, c.hbd, c.fabric, si(c.scaleup_bw, "B/s"),
    c.scaleup_latency * 1e6, si(c.scaleout_bw, "B/s"), c.scaleout_latency * 1e6)
end

core.metatable("model").__tostring = function(m)
  local p = m:params()
  local attn = m.attn == "mla" and string.format("MLA(kv_lora %d, rope %d)", m.kv_lora_rank, m.qk_rope_dim)
    or string.format("%s %d/%d heads x %d", m.kv_heads == m.heads and "MHA" or "GQA", m.heads, m.kv_heads, m.head_dim)
  local moe = m.experts > 0 and string.format(", MoE %d experts top-%d (ffn %d)%s", m.experts, m.topk,
    m.expert_ffn > 0 and m.expert_ffn or m.ffn, m.shared_experts > 0 and (" + " .. m.shared_experts .. " shared") or "")
    or string.format(", FFN %d", m.ffn)
  return string.format("model %s: %d layers, hidden %d, %s%s, vocab %d; %.4g B params (%.4g B active); " ..
    "KV %s/token at bf16", shown(m.name), m.layers, m.hidden, attn, moe, m.vocab, p.total / 1e9, p.active / 1e9,
    si(m:kv_bytes_per_token "bf16", "B"))
end

function M.gpus() return core.gpus() end
function M.models() return core.models() end
function M.clusters() return core.clusters() end

-- The fields each form of hl.roofline reads, beside roofline_common's (as l_op_time reads them).
local roofline_common = { gpu = true, name = true, kind = true, precision = true, framework = true }
local roofline_forms = {}
for form, names in pairs {
  moe = { "tokens", "experts", "topk", "hidden", "inter", "ep", "etp", "imbalance", "act_bytes", "weight_bytes" },
  gemm = { "m", "n", "k", "act_bytes", "weight_bytes", "kernels" },
  attention = { "batch", "q", "context", "heads", "kv_heads", "head_dim", "qk_dim", "v_dim", "kv_bytes", "kv_token_bytes",
                "window", "act_bytes" },
  op = { "flops", "bytes", "bytes_read", "bytes_written", "rows", "kernels" },
} do
  local set = { list = table.concat(names, ", ") }
  for _, n in ipairs(names) do set[n] = true end
  roofline_forms[form] = set
end

--- hl.roofline{ gpu = g, precision = "fp8", flops = F, bytes = B } or a GEMM:
--- hl.roofline{ gpu = g, m = 16, n = 8192, k = 8192, precision = "fp8", framework = "trtllm" },
--- attention { kind = "attention", batch, q, context, heads, kv_heads, head_dim, kv_bytes, window }
--- or one MoE layer's experts { kind = "moe", tokens, hidden, inter, topk, experts, ep, etp }.
--- The operators are built and timed as inside hl.simulate (docs/MODEL.md section 3).
--- Returns time_s, compute_s, memory_s, intensity (FLOP/B), ridge, bound.
function M.roofline(t)
  assert(type(t) == "table", "hl.roofline expects a table")
  core.check_fields(t, { "gpu", "name", "kind", "precision", "framework", "m", "n", "k", "weight_bytes", "act_bytes",
                         "flops", "bytes", "bytes_read", "bytes_written", "rows", "batch", "q", "context", "heads",
                         "kv_heads", "head_dim", "qk_dim", "v_dim", "kv_bytes", "kv_token_bytes", "window",
                         "tokens", "hidden", "inter", "topk", "experts", "ep", "etp", "imbalance", "kernels" }, "hl.roofline")
  -- each form reads its own fields (lua/bind/l_roofline.c): one given to another form had no effect,
  -- silently (rows or flops beside m, n, k; weight_bytes on attention)
  local form, what
  if t.kind == "moe" then form, what = roofline_forms.moe, "an MoE layer (kind = \"moe\")"
  elseif t.m ~= nil then form, what = roofline_forms.gemm, "a GEMM given by m, n, k"
  elseif t.kind == "attention" and t.batch ~= nil then form, what = roofline_forms.attention, "attention given by batch"
  else form, what = roofline_forms.op, "an operator given by flops and bytes" end
  for k in pairs(t) do
    if not roofline_common[k] and not form[k] then
      error(string.format("hl.roofline: field '%s' has no effect on %s (its fields: %s; and gpu, name, kind, " ..
        "precision, framework)", tostring(k), what, form.list), 2)
    end
  end
  local g = t.gpu
  if g == nil then error("hl.roofline: field 'gpu' is required", 2) end
  g = M.coerce("gpu", g)
  local op = {}
  for k, v in pairs(t) do if k ~= "gpu" then op[k] = v end end
  op.precision = op.precision or "bf16"
  if t.m and (t.n == nil or t.k == nil) then error("hl.roofline: a GEMM needs m, n and k", 2) end
  if not t.m and t.bytes and not t.bytes_read then op.bytes_read = t.bytes end
  return core.op_time(g, op)
end

--- hl.kv_capacity{ hbm_bytes, mem_util, weights_bytes, workspace_bytes, kv_token_bytes, context, block_tokens,
---                  mem_util_of ("hbm" | "free") }
function M.kv_capacity(t)
  if type(t) ~= "table" then error("hl.kv_capacity expects a table", 2) end
  core.check_fields(t, { "hbm_bytes", "mem_util", "weights_bytes", "workspace_bytes", "kv_token_bytes", "context",
                         "block_tokens", "mem_util_of" }, "hl.kv_capacity")
  return core.kv_capacity(t)
end

return M
