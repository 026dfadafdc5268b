-- hbdlab: the Lua face of the simulation core. `local hl = require "hbdlab"`.
-- C functions live in hbdlab.core; this file assembles the public surface
-- from the Lua modules beside it (each one fills in its part of `hl`).
local core = require "hbdlab.core"

local hl = {
  _VERSION = "hbdlab " .. core.version(),
  version = core.version(),
  core = core,
}

local objects = require "hbdlab.objects"
for _, k in ipairs { "gpu", "cluster", "model", "gpus", "models", "clusters", "roofline", "kv_capacity" } do
  hl[k] = objects[k]
end

-- Modules a script may never use are loaded on the first call (startup time, docs/PERFORMANCE.md):
-- hl.X is a wrapper that tail-calls the module's function, so error levels still point at the
-- caller and hl.X stays one value for hl.help(hl.X).
local function lazy(module, name)
  return function(...) return require(module)[name](...) end
end

-- Module tables load on first access the same way (hl.plot, hl.rows, ...: an __index on hl keeps
-- each one once loaded); pairs(hl) and the REPL's completion (the metatable's __load_all) load them
-- all first, so hl lists the same names as when every module was loaded up front.
local lazy_tables = { pretty = "hbdlab.pretty", plot = "hbdlab.plot", trace = "hbdlab.trace", rows = "hbdlab.rows",
                      minitf = "hbdlab.minitf" }
local function load_table(t, k)
  local module = lazy_tables[k]
  if module == nil then return nil end
  local m = require(module)
  rawset(t, k, m)
  return m
end
local function load_all()
  for k in pairs(lazy_tables) do
    if rawget(hl, k) == nil then load_table(hl, k) end
  end
end
setmetatable(hl, { __index = load_table, __pairs = function(t) load_all(); return next, t, nil end,
                   __load_all = load_all })

hl.simulate = require("hbdlab.simulate").simulate
hl.serve = lazy("hbdlab.serve", "serve")
hl.serve_capacity = lazy("hbdlab.serve", "serve_capacity")
hl.serve_pd_ratio = lazy("hbdlab.serve", "serve_pd_ratio")
hl.serve_sweep = lazy("hbdlab.serve", "serve_sweep")
hl.frontier = lazy("hbdlab.frontier", "frontier")
hl.walkthrough = lazy("hbdlab.walkthrough", "walkthrough")
hl.sweep = lazy("hbdlab.sweep", "sweep")
hl.sweep_to_csv = lazy("hbdlab.sweep", "sweep_to_csv")
--- hl.interrupted() -> true when Ctrl-C / SIGTERM stopped a sweep since the last call. Asking
--- handles it: a script whose sweep was stopped and which never asks exits with status 130.
--- hl.warnings(false) silences the warnings for silent defaults (context limit, no mapping).
hl.warnings = function(on)
  if on ~= nil and type(on) ~= "boolean" then -- hl.warnings(0) left them on (0 is true in Lua)
    error("hl.warnings: expected true or false, got " .. type(on) .. " " .. tostring(on), 2)
  end
  require("hbdlab.warn").enabled = on ~= false
end
hl.interrupted = function() return core.take_interrupted() end
hl.params = lazy("hbdlab.params", "params")
hl.help = lazy("hbdlab.help", "help")
hl.calibrate = lazy("hbdlab.calibrate", "calibrate")
if _G.help == nil then _G.help = hl.help end

--- hl.net_requirement{ count, bytes, factor, compute_s, latency_s, share } -> { budget_s, bandwidth,
--- max_latency_s }: the network a traffic class needs to stay under `share` of a step (hl_coll_requirement).
hl.net_requirement = core.net_requirement

--- hl.collective{ op = "allreduce", bytes = 1e9, ranks = 16, cluster = clu, algo = "auto",
---                 placement = "packed" | ranks_per_hbd, imbalance = 1 }
--- Payload as elements and a precision also works: elements = N, precision = "fp8".
function hl.collective(t)
  assert(type(t) == "table", "hl.collective expects a table")
  core.check_fields(t, { "op", "bytes", "ranks", "cluster", "algo", "placement", "ranks_per_hbd", "imbalance",
                         "elements", "precision", "tokens", "topk", "hidden" }, "hl.collective")
  local c = t.cluster
  if type(c) == "string" or (type(c) == "table" and getmetatable(c) == nil) then c = hl.cluster(c) end
  if c == nil then error("hl.collective: field 'cluster' is required", 2) end
  if type(c) ~= "userdata" then -- "hbdlab/init.lua:92: bad argument #1 to 'collective' (expected a cluster object)"
    error("hl.collective field 'cluster': expected a cluster object, preset name or table of cluster fields, got " ..
      type(c), 2)
  end
  local bytes = t.bytes
  -- op = "dispatch" / "combine": the core computes the MoE payload (hl_coll_moe_bytes)
  if bytes == nil and t.elements and t.op ~= "dispatch" and t.op ~= "combine" then
    bytes = t.elements * core.precision_bytes(t.precision or "bf16")
  end
  local rph = t.ranks_per_hbd
  if type(t.placement) == "number" then
    local v = t.placement -- refused under its own name (it was "field 'ranks_per_hbd': nan is not an integer")
    if not (v >= 0 and v <= 2 ^ 40 and v == math.floor(v)) then
      error("hl.collective field 'placement': " .. require("hbdlab.pretty").num_text(v) ..
        " is not a whole number of ranks per HBD in 0..2^40 (0 or \"packed\": packed)", 2)
    end
    rph = v
  elseif t.placement ~= nil and t.placement ~= "packed" then
    error("hl.collective field 'placement': expected \"packed\" or a number of ranks per HBD", 2)
  end
  return core.collective(c, { op = t.op, bytes = bytes, ranks = t.ranks or c.gpus, algo = t.algo,
                              ranks_per_hbd = rph, imbalance = t.imbalance, tokens = t.tokens, topk = t.topk,
                              hidden = t.hidden, precision = t.precision })
end

return hl
