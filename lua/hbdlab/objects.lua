-- GPUs, clusters and models from Lua: presets by name, custom ones from
-- tables (fields in SI units, or friendly aliases whose names carry the unit),
-- readable summaries when printed. Fills hl.gpu, hl.cluster, hl.model, ...
local core = require "hbdlab.core"

local M = {}

-- Friendly aliases: name -> { SI field, factor to SI }.
local link_aliases = {
  scaleup_gbs = { "scaleup_bw", 1e9 },        -- GB/s per direction per GPU
  scaleout_gbps = { "scaleout_bw", 1e9 / 8 }, -- Gbit/s per GPU (NIC rate)
  scaleout_gbs = { "scaleout_bw", 1e9 },      -- GB/s per GPU
  scaleup_latency_us = { "scaleup_latency", 1e-6 },
  scaleout_latency_us = { "scaleout_latency", 1e-6 },
  coll_launch_us = { "coll_launch", 1e-6 },
}
M.aliases = {
  gpu = {
    fp32_tflops = { "fp32_flops", 1e12 }, bf16_tflops = { "bf16_flops", 1e12 },
    fp16_tflops = { "fp16_flops", 1e12 }, fp8_tflops = { "fp8_flops", 1e12 },
    fp4_tflops = { "fp4_flops", 1e12 }, int8_tops = { "int8_flops", 1e12 },
    hbm_gb = { "hbm_bytes", 1e9 }, hbm_tbs = { "hbm_bw", 1e12 },
    kernel_latency_us = { "kernel_latency", 1e-6 },
  },
  cluster = { peer_cost_us = { "peer_cost", 1e-6 } },
  model = {},
}
for k, v in pairs(link_aliases) do M.aliases.gpu[k] = v; M.aliases.cluster[k] = v end

--- Returns a copy of t with friendly aliases converted to SI fields.
function M.to_si(kind, t)
  local aliases = M.aliases[kind]
  local out = {}
  for k, v in pairs(t) do
    local a = aliases[k]
    if a then
      if type(v) ~= "number" then
        error(string.format("%s field '%s': expected a number, got %s", kind, k, type(v)), 3)
      end
      if t[a[1]] ~= nil then
        error(string.format("%s: both '%s' and '%s' given; use one", kind, k, a[1]), 3)
      end
      out[a[1]] = v * a[2]
    else
      out[k] = v
    end
  end
  return out
end

-- A name ending in .json is a file holding the object (the same fields as a preset).
local function from_file(kind, path)
  local ok, text = pcall(core.read_file, path) -- a regular text file within the input limit
  if not ok then error(string.format("%s file %s", kind, tostring(text)), 3) end
  return core.from_json(kind, text, path)
end

-- Objects of preset names, resolved once (objects are immutable, so one object serves every
-- call); emptied when $HBDLAB_PRESETS (where user presets come from) changes.
local presets = { gpu = {}, cluster = {}, model = {} }
local presets_env = os.getenv("HBDLAB_PRESETS")

local function wrap(kind, ctor)
  return function(x)
    if type(x) == "string" then
      local env = os.getenv("HBDLAB_PRESETS")
      if env ~= presets_env then
        presets_env = env
        presets = { gpu = {}, cluster = {}, model = {} }
      end
      local hit = presets[kind][x]
      if hit then return hit end
      if x:match("%.json$") then return from_file(kind, x) end
      local obj = ctor(x)
      presets[kind][x] = obj
      return obj
    end
    if type(x) == "table" then
      x = M.to_si(kind, x)
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
function M.coerce_job(t)
  if type(t) ~= "table" then return t end
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
M.model = setmetatable({ from_hf = core.model_from_hf }, {
  __call = function(_, x) return wrap("model", core.model)(x) end,
})

-- :with{} accepts aliases too.
for _, kind in ipairs { "gpu", "cluster", "model" } do
  local methods = core.metatable(kind).__methods
  local with = methods.with
  methods.with = function(self, t) return with(self, M.to_si(kind, t)) end
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

core.metatable("gpu").__tostring = function(g)
  return string.format("gpu %s: %s; HBM %s at %s; scale-up %s/dir, scale-out %s/dir%s",
    g.name, flops_line(g), si(g.hbm_bytes, "B"), si(g.hbm_bw, "B/s"), si(g.scaleup_bw, "B/s"),
    si(g.scaleout_bw, "B/s"), g.in_switch_reduce and ", in-switch reduction" or "")
end

core.metatable("cluster").__tostring = function(c)
  return string.format("cluster %s: %d x %s in %d HBD(s) of %d (%s fabric); scale-up %s/dir, %.2g us/step; " ..
    "scale-out %s/dir, %.3g us/step",
    c.name, c.gpus, c.gpu.name, c.gpus // c.hbd, c.hbd, c.fabric, si(c.scaleup_bw, "B/s"),
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
    "KV %s/token at bf16", m.name, m.layers, m.hidden, attn, moe, m.vocab, p.total / 1e9, p.active / 1e9,
    si(m:kv_bytes_per_token "bf16", "B"))
end

function M.gpus() return core.gpus() end
function M.models() return core.models() end
function M.clusters() return core.clusters() end

--- hl.roofline{ gpu = g, precision = "fp8", flops = F, bytes = B } or a GEMM:
--- hl.roofline{ gpu = g, m = 16, n = 8192, k = 8192, precision = "fp8" }.
--- Returns time_s, compute_s, memory_s, intensity (FLOP/B), ridge, bound.
function M.roofline(t)
  assert(type(t) == "table", "hl.roofline expects a table")
  core.check_fields(t, { "gpu", "name", "kind", "precision", "m", "n", "k", "weight_bytes", "act_bytes", "flops",
                         "bytes", "bytes_read", "bytes_written" }, "hl.roofline")
  local g = t.gpu
  if g == nil then error("hl.roofline: field 'gpu' is required", 2) end
  g = M.coerce("gpu", g)
  local op = { name = t.name, kind = t.kind, precision = t.precision or "bf16" }
  if t.m then
    local wb = t.weight_bytes or core.precision_bytes(op.precision)
    local ab = t.act_bytes or 2
    op.flops, op.bytes_read, op.bytes_written = core.gemm_op(t.m, t.n, t.k, ab, wb, ab)
    op.kind = op.kind or "gemm"
  else
    op.flops = t.flops or 0
    op.bytes_read = t.bytes_read or t.bytes or 0
    op.bytes_written = t.bytes_written or 0
  end
  return core.op_time(g, op)
end

--- hl.kv_capacity{ hbm_bytes, mem_util, weights_bytes, workspace_bytes, kv_token_bytes, context, block_tokens }
function M.kv_capacity(t)
  if type(t) ~= "table" then error("hl.kv_capacity expects a table", 2) end
  core.check_fields(t, { "hbm_bytes", "mem_util", "weights_bytes", "workspace_bytes", "kv_token_bytes", "context",
                         "block_tokens" }, "hl.kv_capacity")
  return core.kv_capacity(t)
end

return M
