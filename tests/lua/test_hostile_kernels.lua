-- kernels = "dir" and hl.roofline attacked from outside (attack pass 4, docs/RELIABILITY.md): each
-- case here was refused wrongly, accepted silently or gave a wrong number before its fix.
local T = require "testlib"
local hl = require "hbdlab"

local root = os.tmpname()
os.remove(root)
assert(os.execute("mkdir -p '" .. root .. "'"))
local n = 0
-- a fresh folder holding the given files (name -> text); returns its path
local function folder(files)
  n = n + 1
  local d = root .. "/" .. n
  assert(os.execute("mkdir -p '" .. d .. "'"))
  for name, text in pairs(files) do
    local f = assert(io.open(d .. "/" .. name, "wb"))
    f:write(text)
    f:close()
  end
  return d
end
local H = "dtype,m,n,k,latency_ms\n"
local GRID = H .. "bfloat16,4,6144,4096,0.020\nbfloat16,64,6144,4096,0.040\n"
local function gemm(d, m) return hl.roofline { gpu = "H100-SXM", m = m, n = 6144, k = 4096, kernels = d } end
local cl = hl.cluster { gpu = "H100-SXM", gpus = 1, hbd = 1 }

T.test("a byte-order mark before the header is not part of the first column's name", function()
  -- spreadsheets save CSV as UTF-8 with a BOM; the header read "\239\187\191dtype" and the file was refused
  -- ("the header has no column 'dtype'"). M = 16 is half way from 4 to 64 in log space: sqrt(20 x 40) us.
  local r = gemm(folder { ["gemm.csv"] = "\239\187\191" .. GRID }, 16)
  T.eq(r.measured, true, "covered")
  T.near(r.time_s, 20 * math.sqrt(2) * 1e-6, 1e-15, "20 sqrt(2) us")
end)

T.test("the row limit counts rows: a header and exactly 1,048,576 rows load, one more is refused", function()
  -- the limit counted lines, the header among them: a table of exactly the limit was refused
  local t = { H }
  for i = 1, 1048576 do t[#t + 1] = "bfloat16," .. i .. ",6144,4096,0.02\n" end
  local r = gemm(folder { ["gemm.csv"] = table.concat(t) }, 5)
  T.eq(r.measured, true, "M = 5 is a row of the full table")
  T.near(r.time_s, 0.02e-3, 1e-18, "its 0.02 ms")
  t[#t + 1] = "bfloat16,0.5,6144,4096,0.02\n"
  T.raises(function() gemm(folder { ["gemm.csv"] = table.concat(t) }, 5) end,
    "gemm.csv:1048578: more than the 1048576 rows a kernel table may hold")
end)

T.test("grid values a few ulps apart interpolate (log(v1) == log(v0) gave weight 0)", function()
  -- v0 = 16 - 1.78e-15 (one ulp below 16), v1 = 16 + 3.55e-15 (one ulp above): x = 16 lies a third of the
  -- way (log x - log v0 ~ (x - v0) / v0 this close), so the time is 20 us x 2^(1/3) = 25.198 us; the
  -- difference of the logs rounded to 0 / 0 or 0 / ulp and gave 20 us
  local r = gemm(folder { ["gemm.csv"] = H .. "bfloat16,15.999999999999998,6144,4096,0.020\n" ..
    "bfloat16,16.000000000000004,6144,4096,0.040\n" }, 16)
  T.eq(r.measured, true, "covered")
  T.near(r.time_s, 20e-6 * 2 ^ (1 / 3), 20e-6 * 1e-9, "a third of the way in log space")
end)

T.test("a message quoting a long cell cuts it at a whole UTF-8 character", function()
  -- the cell is quoted to 40 bytes: "a" and 19 two-byte characters are 39, the 20th would be cut in half
  local ok, msg = pcall(gemm, folder { ["gemm.csv"] = H .. "bfloat16,a" .. ("\195\169"):rep(30) .. ",6144,4096,1\n" }, 4)
  T.eq(ok, false, "refused")
  T.ok(msg:find("column 'm' is 'a" .. ("\195\169"):rep(19) .. "'", 1, true), "39 bytes quoted: " .. msg)
  T.ok(utf8.len(msg) ~= nil, "the message is UTF-8")
end)

T.test("a cell that begins or ends with a space or tab is refused, naming it", function()
  -- "bfloat16 " was a key no job matches (the table silently unused), " 4" read as 4 while "4 " was refused
  T.raises(function() gemm(folder { ["gemm.csv"] = H .. "bfloat16 ,4,6144,4096,0.02\n" }, 4) end,
    "gemm.csv:2:1: a cell begins or ends with a space ('bfloat16 ')")
  T.raises(function() gemm(folder { ["gemm.csv"] = H .. "bfloat16, 4,6144,4096,0.02\n" }, 4) end,
    "gemm.csv:2:10: a cell begins or ends with a space (' 4')")
  T.raises(function() gemm(folder { ["gemm.csv"] = H .. "bfloat16\t,4,6144,4096,0.02\n" }, 4) end,
    "a cell begins or ends with a space")
  T.eq(gemm(folder { ["gemm.csv"] = H .. "bfloat16,4,6144,4096,0.02\n" }, 4).measured, true, "the same row exactly")
end)

T.test("a table that is a symbolic link to nothing is an error, not a missing table", function()
  -- stat failed with ENOENT, so the table was skipped silently (the folder's other tables ran alone)
  local d = folder { ["attention_decode.csv"] =
    "batch,cached_tokens,heads,kv_heads,head_dim,window,kv_dtype,latency_ms\n1,256,32,8,128,0,bfloat16,0.010\n" }
  assert(os.execute("ln -s '" .. root .. "/nowhere.csv' '" .. d .. "/gemm.csv'"))
  T.raises(function() gemm(d, 4) end, "field 'kernels': " .. d .. "/gemm.csv is a symbolic link to a file that does not exist")
end)

T.test("hl.roofline: kernels must be a folder name; shape fields must be > 0", function()
  -- kernels = {} read as no name ("an empty folder name"); kernels = 5 looked for a folder '5'
  T.raises(function() gemm({}, 4) end, "roofline field 'kernels': expected a folder name (a string), got table")
  T.raises(function() gemm(5, 4) end, "roofline field 'kernels': expected a folder name (a string), got number")
  -- m = -1, 0 or NaN fell through to an operator of no work (3 us of launch latency), batch = -1 too
  T.raises(function() hl.roofline { gpu = "H100-SXM", m = -1, n = 6144, k = 4096 } end,
    "hl.roofline: field 'm' must be a finite number > 0 (got -1")
  T.raises(function() hl.roofline { gpu = "H100-SXM", m = 0, n = 6144, k = 4096 } end, "field 'm' must be a finite number > 0")
  T.raises(function() hl.roofline { gpu = "H100-SXM", m = 0 / 0, n = 6144, k = 4096 } end, "field 'm' must be a finite number > 0")
  T.raises(function() hl.roofline { gpu = "H100-SXM", kind = "attention", batch = -1, heads = 8 } end,
    "field 'batch' must be a finite number > 0")
  -- the operator form without a shape still works
  T.ok(hl.roofline { gpu = "H100-SXM", flops = 1e9, bytes_read = 1e6 }.time_s > 0, "flops and bytes")
end)

T.test("hl.serve with step times past the clock's range is refused, not inf", function()
  -- latency_ms = 1e308 (finite, > 0: accepted) made each decode step ~3e306 s: the clock overflowed to inf,
  -- the result held duration_s = inf, rps 0, and printing it failed inside the printer
  local d = folder { ["gemm.csv"] = H .. "bfloat16,1,6144,4096,1e308\nbfloat16,512,6144,4096,1e308\n" }
  local b = { model = "llama-3.1-8b", cluster = cl, parallel = { tp = 1 }, requests = 50, input = 200, output = 50,
              kernels = d }
  b.rate = 5
  T.raises(function() hl.serve(b) end, "serve: a step from t = ", "passes 1e9 s, where the clock no longer resolves")
  b.rate, b.concurrency = nil, 4
  T.raises(function() hl.serve(b) end, "passes 1e9 s")
  -- 1e300 ms stays finite all the way (6e299 s) but is as meaningless: the same bound
  b.kernels = folder { ["gemm.csv"] = H .. "bfloat16,1,6144,4096,1e300\nbfloat16,512,6144,4096,1e300\n" }
  T.raises(function() hl.serve(b) end, "passes 1e9 s")
  -- hl.simulate of the same job runs (one batch: its times are finite)
  T.ok(hl.simulate { model = "llama-3.1-8b", cluster = cl, parallel = { tp = 1 }, batch = 4, input = 200, output = 4,
    kernels = b.kernels }.tpot_s > 1e297, "simulate: finite (32 calls of 1e297 s a step)")
end)

os.execute("rm -rf '" .. root .. "'")
T.done()
