-- Run by tests/host/test_presets_env.sh under a stock lua5.4: hl.simulate with a preset name
-- keeps the name's object (hbdlab/objects.lua) and the plan read from the job table
-- (lua/bind/l_sim.c) between calls; a change of $HBDLAB_PRESETS must reach the next call.
-- arg[1], arg[2]: two preset folders whose models/cachetest.json differ in their layers (32, 16).
local env = require "setenv_mod"
local hl = require "hbdlab"
local core = hl.core
local job = { model = "cachetest", cluster = "hgx-h100", batch = 8, input = 2048, output = 64, parallel = { tp = 8 } }
local function reference() -- read in full: core.simulate resolves the name itself
  local t = {}
  for k, v in pairs(job) do t[k] = v end
  t.parallel = { tp = 8 }
  return (core.simulate(t))
end
assert(env.setenv("HBDLAB_PRESETS", arg[1]))
local a1, a2 = hl.simulate(job), hl.simulate(job)
assert(a1.ttft_s == a2.ttft_s and a1.ttft_s == reference().ttft_s, "folder A, twice")
assert(env.setenv("HBDLAB_PRESETS", arg[2]))
local b = hl.simulate(job)
assert(b.ttft_s == reference().ttft_s, "folder B: " .. b.ttft_s .. " vs " .. reference().ttft_s)
assert(b.ttft_s < a1.ttft_s, "16 layers take less time than 32")
assert(env.setenv("HBDLAB_PRESETS", arg[1]))
assert(hl.simulate(job).ttft_s == a1.ttft_s, "folder A again")
assert(env.unsetenv("HBDLAB_PRESETS"))
local ok, err = pcall(hl.simulate, job)
assert(not ok and tostring(err):find("cachetest", 1, true), "no folder: the name is unknown: " .. tostring(err))
print("ok")
