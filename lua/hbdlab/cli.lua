-- Subcommands of the hbdlab host: eval, notebook, bench, serve, calibrate. Each returns an exit status.
local core = require "hbdlab.core"

local M = {}

-- The text of a config file (a regular file within the input limit) or of stdin ("-", read up
-- to the same limit); nil and a message when it cannot be read.
local function read_all(path)
  local cap = core.max_input_bytes()
  if path == "-" then
    local text = io.read(cap + 1) or ""
    if #text > cap then
      return nil, string.format("more than the input limit of %d bytes (HBDLAB_MAX_INPUT_BYTES)", cap)
    end
    return text, "stdin"
  end
  local ok, text = pcall(core.read_file, path)
  if not ok then return nil, tostring(text) end
  return text, path
end

local function fail_json(msg, code)
  if not utf8.len(msg) then msg = msg:gsub("[\128-\255]", "?") end -- a file name need not be UTF-8; JSON must
  io.stderr:write(core.json_encode({ error = msg }), "\n")
  return code or 1
end

-- Converts a decoded JSON config into hl.simulate fields: presets by name,
-- inline objects as tables (a cluster object may name its gpu preset).
-- A disaggregated serve config's pools are instances too (hl.serve takes the same tables).
local function to_simulate_fields(hl, cfg)
  local t = {}
  for k, v in pairs(cfg) do t[k] = v end
  if type(cfg.model) == "table" then t.model = hl.model(cfg.model) end
  if type(cfg.cluster) == "table" then t.cluster = hl.cluster(cfg.cluster) end
  if type(cfg.disagg) == "table" then
    local d = {}
    for k, v in pairs(cfg.disagg) do d[k] = (k == "prefill" or k == "decode") and type(v) == "table" and #v == 0 and
      to_simulate_fields(hl, v) or v end
    t.disagg = d
  end
  return t
end

-- Reads a JSON config of `fn`'s fields (hl.simulate or hl.serve) and runs it;
-- returns the result, or nil and the exit status after writing the JSON error.
local function run_config(path, fn_name, what)
  local hl = require "hbdlab"
  hl.warnings(false) -- stderr carries only the JSON error
  local text, origin = read_all(path)
  if not text then
    local msg = tostring(origin)
    if path == "-" or not msg:find(path, 1, true) then msg = path .. ": " .. msg end
    return nil, fail_json("cannot read " .. msg, 1)
  end
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

--- hbdlab merge A.csv B.csv ... -o ALL.csv: the CSV files of a sharded run as one.
--- Files named *_shardIofN* are ordered by I and must all be there (0..N-1);
--- others keep the order given. Headers must agree; the header is written once.
function M.merge(...)
  local args, inputs, out = { ... }, {}, nil
  local i = 1
  while i <= #args do
    if args[i] == "-o" and out then
      io.stderr:write("hbdlab merge: -o is given twice (", out, ", ", tostring(args[i + 1]), ")\n")
      return 2
    elseif args[i] == "-o" then out = args[i + 1]; i = i + 2
    else inputs[#inputs + 1] = args[i]; i = i + 1 end
  end
  local usage = "usage: hbdlab merge OUT_shard0of4.csv OUT_shard1of4.csv ... -o ALL.csv"
  if not out or #inputs == 0 then io.stderr:write("hbdlab merge: ", usage, "\n"); return 2 end
  local shards, named = {}, 0
  for _, p in ipairs(inputs) do
    local k, n = p:match("_shard(%d+)of(%d+)[^/]*$")
    if k then named = named + 1; shards[#shards + 1] = { path = p, k = tonumber(k), n = tonumber(n) } end
  end
  if named == #inputs then
    table.sort(shards, function(a, b) return a.k < b.k end)
    local n = shards[1].n
    for j, s in ipairs(shards) do
      if s.n ~= n then io.stderr:write("hbdlab merge: ", s.path, " is a shard of ", s.n, ", the others of ", n, "\n"); return 1 end
      if s.k ~= j - 1 then
        io.stderr:write(string.format("hbdlab merge: shard %d of %d is %s\n", j - 1, n,
          s.k == j - 2 and "given twice" or "missing")); return 1
      end
    end
    if #shards ~= n then io.stderr:write(string.format("hbdlab merge: %d of %d shards given\n", #shards, n)); return 1 end
    inputs = {}
    for j, s in ipairs(shards) do inputs[j] = s.path end
  end
  -- the output must not replace an input, nor one file count twice (its rows would be doubled)
  for j, p in ipairs(inputs) do
    if p == out or core.same_file(out, p) then
      io.stderr:write("hbdlab merge: the output ", out, " would overwrite the input ", p, "; choose another -o\n")
      return 2
    end
    for k = 1, j - 1 do
      if p == inputs[k] or core.same_file(p, inputs[k]) then
        io.stderr:write("hbdlab merge: ", p, " is given twice (its rows would be counted twice)\n")
        return 2
      end
    end
  end
  local header, body = nil, {}
  for _, p in ipairs(inputs) do
    local text, err = read_all(p)
    if not text then -- err names the file already
      io.stderr:write("hbdlab merge: cannot read ", err:find(p, 1, true) and "" or p .. ": ", tostring(err), "\n")
      return 1
    end
    -- every row whole and as wide as the header: a cut or broken shard must not run into the next
    local head_end, why = require("hbdlab.rows").csv_check(text, true)
    if not head_end then io.stderr:write("hbdlab merge: ", p, ": ", why, "\n"); return 1 end
    local head, rest = text:sub(1, head_end), text:sub(head_end + 1)
    if header and head ~= header then
      local function bare(h) return (h:gsub("^\239\187\191", ""):gsub("\r", "")) end
      io.stderr:write("hbdlab merge: ", p, " has other columns than ", inputs[1], bare(head) == bare(header)
        and " (the same names, but a byte-order mark or CRLF line ends in one of them)" or "", "\n")
      return 1
    end
    header = header or head
    body[#body + 1] = rest
  end
  require("hbdlab.rows").write_atomic(out, header .. table.concat(body))
  return 0
end

--- hbdlab calibrate CASES.json
function M.calibrate(...) return require("hbdlab.calibrate").main(...) end

--- hbdlab bench [--json] [--quick]
function M.bench(...) return require("hbdlab.bench").main(...) end

--- hbdlab notebook FILE.md [-o OUT] [--keep-going]
function M.notebook(...) return require("hbdlab.notebook").main(...) end

return M
