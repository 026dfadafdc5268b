-- hbdlab: the Lua face of the simulation core. `local hl = require "hbdlab"`.
-- C functions live in hbdlab.core; this file assembles the public surface
-- from the Lua modules beside it (each one fills in its part of `hl`).
local core = require "hbdlab.core"

local hl = {
  _VERSION = "hbdlab " .. core.version(),
  version = core.version(),
  core = core,
}

hl.pretty = require "hbdlab.pretty"

local objects = require "hbdlab.objects"
for _, k in ipairs { "gpu", "cluster", "model", "gpus", "models", "clusters", "roofline", "kv_capacity" } do
  hl[k] = objects[k]
end

return hl
