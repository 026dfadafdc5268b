-- Subcommands of the hbdlab host: eval, notebook, bench, serve. Each returns an exit status.
local core = require "hbdlab.core"

local M = {}

local function read_all(path)
  if path == "-" then return io.read("a"), "stdin" end
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local text = f:read("a")
  f:close()
  return text, path
end

local function fail_json(msg, code)
  io.stderr:write(core.json_encode({ error = msg }), "\n")
  return code or 1
end

-- Converts a decoded JSON config into hl.simulate fields: presets by name,
-- inline objects as tables (a cluster object may name its gpu preset).
local function to_simulate_fields(hl, cfg)
  local t = {}
  for k, v in pairs(cfg) do t[k] = v end
  if type(cfg.model) == "table" then t.model = hl.model(cfg.model) end
  if type(cfg.cluster) == "table" then t.cluster = hl.cluster(cfg.cluster) end
  return t
end

-- Reads a JSON config of `fn`'s fields (hl.simulate or hl.serve) and runs it;
-- returns the result, or nil and the exit status after writing the JSON error.
local function run_config(path, fn_name, what)
  local hl = require "hbdlab"
  local text, origin = read_all(path)
  if not text then return nil, fail_json("cannot read " .. path .. ": " .. tostring(origin), 1) end
  local ok, cfg = pcall(core.json_decode, text, origin)
  if not ok then return nil, fail_json(tostring(cfg), 1) end
  if type(cfg) ~= "table" or #cfg > 0 then return nil, fail_json(origin .. ": expected a JSON object of " .. what, 1) end
  local ok2, r = pcall(function() return hl[fn_name](to_simulate_fields(hl, cfg)) end)
  if not ok2 then return nil, fail_json(origin .. ": " .. tostring(r):gsub("^[^:]*:%d+: ", ""), 1) end
  return r
end

local function write_json(r)
  local plain = {}
  for k, v in pairs(r) do plain[k] = v end
  io.write(core.json_encode(plain, true), "\n")
end

--- hbdlab eval CONFIG.json|- : the fields of hl.simulate as JSON; prints the result as JSON.
function M.eval(path, extra)
  if path == nil or extra ~= nil then
    return fail_json("usage: hbdlab eval CONFIG.json (or - for stdin)", 2)
  end
  local r, code = run_config(path, "simulate", "simulate fields")
  if not r then return code end
  write_json(r)
  return 0
end

--- hbdlab serve CONFIG.json|- [--json] : the fields of hl.serve as JSON; prints the summary
--- (or the result as JSON with --json).
function M.serve(path, opt, extra)
  local as_json = opt == "--json"
  if path == nil or (opt ~= nil and not as_json) or extra ~= nil then
    return fail_json("usage: hbdlab serve CONFIG.json (or - for stdin) [--json]", 2)
  end
  local r, code = run_config(path, "serve", "serve fields")
  if not r then return code end
  if as_json then write_json(r) else print(r) end
  return 0
end

--- hbdlab bench [--json] [--quick]
function M.bench(...) return require("hbdlab.bench").main(...) end

--- hbdlab notebook FILE.md [-o OUT] [--keep-going]
function M.notebook(...) return require("hbdlab.notebook").main(...) end

return M
