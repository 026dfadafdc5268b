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
  -- a draft model given inline ({"base": "llama-3.1-8b", "layers": 2}), as the model is: JSON has no
  -- model object, and the message asked for one (attack pass 5)
  if type(cfg.spec_draft_model) == "table" then t.spec_draft_model = hl.model(cfg.spec_draft_model) end
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
  local fn = type(fn_name) == "function" and fn_name or hl[fn_name]
  local ok2, r = pcall(function() return fn(to_simulate_fields(hl, cfg)) end)
  if not ok2 then return nil, fail_json(origin .. ": " .. tostring(r):gsub("^[^:]*:%d+: ", ""), 1) end
  return r
end

-- `hbdlab SUB --help`: the usage line, then the fields the JSON object takes, which are those of
-- the Lua function behind the subcommand (hl.help's text for TOPIC, the one owner of that list)
local function usage_and_fields(usage, topic)
  print(usage)
  print("The JSON object takes the fields of hl." .. topic .. " (presets by name; the same text as hl.help \"" ..
    topic .. "\"):")
  print(require("hbdlab.help").text(topic))
  return 0
end

local function write_json(r)
  local plain = {}
  for k, v in pairs(r) do plain[k] = v end
  io.write(core.json_encode(plain, true), "\n")
end

--- hbdlab eval CONFIG.json|- : the fields of hl.simulate as JSON; prints the result as JSON.
function M.eval(path, extra)
  if path == "-h" or path == "--help" then
    return usage_and_fields("usage: hbdlab eval CONFIG.json (or - for stdin): prints the result as JSON", "simulate")
  end
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
  if path == "-h" or path == "--help" then -- read as a file name before
    return usage_and_fields("usage: hbdlab serve CONFIG.json (or - for stdin) [--json] " ..
      "(notebooks/serving.md and scripts/serving_hbd.lua show examples)", "serve")
  end
  if path == nil or (opt ~= nil and not as_json) or extra ~= nil then
    return fail_json("usage: hbdlab serve CONFIG.json (or - for stdin) [--json]", 2)
  end
  local r, code = run_config(path, "serve", "serve fields")
  if not r then return code end
  if as_json then write_json(r) else print(r) end
  return 0
end

--- hbdlab walkthrough CONFIG.json|- -o WALK.html: the simulate fields as JSON; writes the
--- step-by-step communication page of that job (hl.walkthrough).
function M.walkthrough(...)
  local args, path, out = { ... }, nil, nil
  local usage = "usage: hbdlab walkthrough CONFIG.json (or - for stdin) -o WALK.html"
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "-h" or a == "--help" then return usage_and_fields(usage .. " (the job's hl.simulate fields)", "simulate")
    elseif a == "-o" and out == nil and args[i + 1] then out = args[i + 1]; i = i + 2
    elseif path == nil and (a == "-" or a:sub(1, 1) ~= "-") then path = a; i = i + 1
    else io.stderr:write("hbdlab walkthrough: unexpected argument '", a, "'; ", usage, "\n"); return 2 end
  end
  if not path or not out then io.stderr:write("hbdlab walkthrough: ", usage, "\n"); return 2 end
  -- -o naming the config itself replaced it with the page (as notebook -o does, refused)
  if path ~= "-" and core.same_file(path, out) then
    io.stderr:write("hbdlab walkthrough: -o ", out, " would overwrite the config ", path, "; ", usage, "\n")
    return 2
  end
  -- hl.walkthrough reads the fields itself: a serving config is named as one ("'rate' is a serving
  -- field"), not reported by hl.simulate as an unknown field
  local r, code = run_config(path, function(fields) return require("hbdlab.walkthrough").walkthrough(fields, out) end,
    "simulate fields")
  if not r then return code end
  io.stderr:write("hbdlab walkthrough: wrote ", out, "\n")
  return 0
end

--- hbdlab frontier CONFIG.json|- [-o STEM] [--json]: the fields of hl.frontier as JSON (systems as
--- a list of cluster objects or preset names); prints the summary, or every point, the Pareto sets
--- and the best points as JSON with --json; -o STEM writes STEM_points.csv, STEM.json and the figures.
--- Under --shard I/N each shard writes its block of points (merge them with hbdlab merge).
function M.frontier(path, ...)
  local rest, stem, as_json = { ... }, nil, false
  local i = 1
  while i <= #rest do
    if rest[i] == "-o" and rest[i + 1] and not stem then stem = rest[i + 1]; i = i + 2
    elseif rest[i] == "--json" then as_json = true; i = i + 1
    else return fail_json("usage: hbdlab frontier CONFIG.json (or - for stdin) [-o STEM] [--json] [--shard I/N]", 2) end
  end
  if path == "--help" or path == "-h" then -- as eval, serve and walkthrough: the usage, exit 0
    return usage_and_fields("usage: hbdlab frontier CONFIG.json (or - for stdin) [-o STEM] [--json] [--shard I/N]",
      "frontier")
  end
  if path == nil then
    return fail_json("usage: hbdlab frontier CONFIG.json (or - for stdin) [-o STEM] [--json] [--shard I/N]", 2)
  end
  local hl = require "hbdlab"
  local text, origin = read_all(path)
  if not text then return fail_json("cannot read " .. tostring(origin), 1) end
  local ok, cfg = pcall(core.json_decode, text, origin)
  if not ok then return fail_json(tostring(cfg), 1) end
  if type(cfg) ~= "table" or #cfg > 0 then return fail_json(origin .. ": expected a JSON object of frontier fields", 1) end
  if stem then cfg.out = stem end
  local ok2, r = pcall(hl.frontier, cfg)
  if not ok2 then return fail_json(origin .. ": " .. tostring(r):gsub("^[^:]*:%d+: ", ""), 1) end
  if as_json then
    io.write(core.json_encode(require("hbdlab.frontier").plain(r), true), "\n")
  else
    print(r)
  end
  return 0
end

--- hbdlab merge A.csv B.csv ... -o ALL.csv: the CSV files of a sharded run as one.
--- A shard's file starts with a fingerprint line (rows.shard_fingerprint: run, shard I/N,
--- its block of the sweep, the file's name): every shard of one run and one file must be
--- there once, their blocks must tile the sweep and each hold its block's rows, and the
--- fingerprint lines are dropped, so the result is the single run's file byte for byte.
--- Files without fingerprints (not shards) are joined in the order given. Headers must agree;
--- the header is written once.
local function merge_fail(code, ...)
  io.stderr:write("hbdlab merge: ", ...)
  io.stderr:write("\n")
  return code
end

-- Orders and checks the shards of one run (issue 22: shards of two sweeps, of two files, or
-- with rows lost were joined silently). files: { path, fp } with fp the fingerprint or nil.
local function check_shards(files)
  for _, f in ipairs(files) do
    if not f.fp then
      local other
      for _, g in ipairs(files) do if g.fp then other = g.path end end
      return nil, f.path .. " has no shard fingerprint line" .. (other and (" (" .. other .. " has one)") or "") ..
        ": shard files come from one hbdlab --shard run (other CSV files are joined when none is a shard)"
    end
  end
  table.sort(files, function(a, b) return a.fp.index < b.fp.index end)
  local a = files[1].fp
  for j, f in ipairs(files) do
    local fp = f.fp
    if fp.run ~= a.run then
      return nil, string.format("%s comes from another run than %s (run %s, not %s): shards of one run only",
        f.path, files[1].path, fp.run, a.run)
    end
    if fp.file ~= a.file then
      return nil, string.format("%s is a shard of %s, %s of %s", f.path, fp.file, files[1].path, a.file)
    end
    if fp.count ~= a.count then
      return nil, string.format("%s is a shard of %d, the others of %d", f.path, fp.count, a.count)
    end
    local name_k, name_n = f.path:match("_shard(%d+)of(%d+)[^/]*$")
    if name_k and (tonumber(name_k) ~= fp.index or tonumber(name_n) ~= fp.count) then
      return nil, string.format("%s is named shard %s of %s but holds shard %d of %d (renamed?)", f.path, name_k,
        name_n, fp.index, fp.count)
    end
    if fp.index ~= j - 1 then
      return nil, string.format("shard %d of %d is %s", j - 1, a.count, fp.index == j - 2 and "given twice" or "missing")
    end
  end
  if #files ~= a.count then return nil, string.format("%d of %d shards given", #files, a.count) end
  for j, f in ipairs(files) do
    local fp = f.fp
    if not fp.lo then
      return nil, f.path .. " holds rows that are not a block of a sweep (every shard computed the same rows; " ..
        "merging would repeat them): use one shard's file"
    end
    if fp.total ~= a.total then
      return nil, string.format("%s is a block of a sweep of %d points, %s of %d", f.path, fp.total, files[1].path, a.total)
    end
    local want_lo = j == 1 and 0 or files[j - 1].fp.hi
    if fp.lo ~= want_lo or (j == #files and fp.hi ~= fp.total) then
      return nil, string.format("%s holds points %d-%d of %d; the shards must hold the blocks in order", f.path, fp.lo,
        fp.hi, fp.total)
    end
  end
  return files
end

function M.merge(...)
  local args, inputs, out = { ... }, {}, nil
  if #args == 1 and (args[1] == "--help" or args[1] == "-h") then -- was read as a shard named --help
    print("usage: hbdlab merge OUT_shard0of4.csv OUT_shard1of4.csv ... -o ALL.csv (docs/LUA_API.md, " ..
      "\"Sweeps on a cluster\")")
    return 0
  end
  local i = 1
  while i <= #args do
    if args[i] == "-o" and out then
      return merge_fail(2, "-o is given twice (", out, ", ", tostring(args[i + 1]), ")")
    elseif args[i] == "-o" then out = args[i + 1]; i = i + 2
    else inputs[#inputs + 1] = args[i]; i = i + 1 end
  end
  local usage = "usage: hbdlab merge OUT_shard0of4.csv OUT_shard1of4.csv ... -o ALL.csv"
  if not out or #inputs == 0 then return merge_fail(2, usage) end
  -- the output must not replace an input, nor one file count twice (its rows would be doubled)
  for j, p in ipairs(inputs) do
    if p == out or core.same_file(out, p) then
      return merge_fail(2, "the output ", out, " would overwrite the input ", p, "; choose another -o")
    end
    for k = 1, j - 1 do
      if p == inputs[k] or core.same_file(p, inputs[k]) then
        return merge_fail(2, p, " is given twice (its rows would be counted twice)")
      end
    end
  end
  -- Shards are read in pieces (core.csv_shard_*, lua/bind/l_merge.c): memory stays bounded
  -- whatever their size, and no input limit applies. Standard input is spooled to a file first.
  local spooled = {}
  local function cleanup() for _, p in ipairs(spooled) do os.remove(p) end end
  local function fail(code, ...) cleanup(); return merge_fail(code, ...) end
  local rows = require "hbdlab.rows"
  local files, any_fp = {}, false
  for j, p in ipairs(inputs) do
    local src = p
    if p == "-" then
      src = os.tmpname()
      spooled[#spooled + 1] = src
      local f = assert(io.open(src, "wb"))
      while true do
        local piece = io.read(1 << 20)
        if not piece then break end
        f:write(piece)
      end
      f:close()
    end
    local first, err = core.csv_shard_head(src)
    if not first then -- err names the file already
      return fail(1, "cannot read ", err:find(p, 1, true) and "" or p .. ": ", tostring(err))
    end
    local fp = rows.shard_fingerprint(first)
    if first:sub(1, 14) == "#hbdlab-shard " and not fp then
      return fail(1, p, ": the shard fingerprint line is damaged")
    end
    any_fp = any_fp or fp ~= nil
    files[j] = { path = p, src = src, fp = fp, skip = fp and fp.len or 0 }
  end
  local named = 0
  for _, f in ipairs(files) do if f.path:match("_shard%d+of%d+[^/]*$") then named = named + 1 end end
  if any_fp or named > 0 then
    local why
    files, why = check_shards(files)
    if not files then return fail(1, why) end
  end
  local header, head_from, head_empty, parts = nil, nil, false, {}
  for _, f in ipairs(files) do
    local p = f.path
    -- every row whole and as wide as the header: a cut or broken shard must not run into the next
    local head, records = core.csv_shard_check(f.src, f.skip)
    if not head then return fail(1, p, ": ", records) end
    local fp = f.fp
    if fp and not fp.filtered and records ~= fp.hi - fp.lo then
      return fail(1, string.format("%s holds %d rows, its block of the sweep %d (points %d-%d of %d): " ..
        "the shard stopped early or was cut", p, records, fp.hi - fp.lo, fp.lo, fp.hi, fp.total))
    end
    -- an empty block has no rows to name its columns (a function-form sweep's header comes from its rows)
    if fp and records == 0 then
      if not header then header, head_from, head_empty = head, p, true end
    elseif not header or head_empty then
      header, head_from, head_empty = head, p, false
    elseif head ~= header then
      local function bare(h) return (h:gsub("^\239\187\191", ""):gsub("\r", "")) end
      return fail(1, p, " has other columns than ", head_from, bare(head) == bare(header)
        and " (the same names, but a byte-order mark or CRLF line ends in one of them)" or "")
    end
    parts[#parts + 1] = { f.src, f.skip + #head }
  end
  local tmp = core.temp_beside(out)
  local ok, err = pcall(core.csv_shard_copy, tmp, header, parts)
  if ok then ok, err = pcall(core.commit_temp, tmp, out) else core.discard_temp(tmp) end
  cleanup()
  if not ok then return merge_fail(1, tostring(err)) end
  return 0
end

--- hbdlab calibrate CASES.json
function M.calibrate(path, ...)
  if path == "-h" or path == "--help" then -- was read as a file name ("cannot read --help")
    return usage_and_fields("usage: hbdlab calibrate CASES.json: {\"params\": [...], \"bounds\": {...}, \"cases\": " ..
      "[{\"name\", \"config\", \"metric\", \"measured\"}]}", "calibrate")
  end
  return require("hbdlab.calibrate").main(path, ...)
end

--- hbdlab bench [--json] [--quick]
function M.bench(...) return require("hbdlab.bench").main(...) end

--- hbdlab notebook FILE.md [-o OUT] [--keep-going]
function M.notebook(...) return require("hbdlab.notebook").main(...) end

return M
