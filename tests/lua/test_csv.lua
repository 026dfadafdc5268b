-- One CSV writer (core/src/csv.c): hl.rows.to_csv gives hand-written text for every kind of
-- cell, and hl.sweep_to_csv and hl.rows.write_csv write the same sweep byte for byte.
local T = require "testlib"
local hl = require "hbdlab"

T.test("rows.to_csv: each cell form, written out by hand", function()
  local rows = {
    { name = "plain", n = 42, x = 0.5, ok = true },
    { name = 'say "hi", twice', n = -7, x = 0.1, ok = false },
    { name = " lead", x = 1e300 },
    { name = "two\nlines", n = 9007199254740993, x = 3.0 },
    { name = "nul\0kept" },
  }
  -- numbers are the shortest decimal reading back to the same double: the double nearest 0.1 is
  -- 0.1000000000000000055..., and "0.1" reads back to it (so do 1e300's digits); 3.0 is a float,
  -- written 3 as %g would; a missing value is empty
  local want = table.concat({
    "name,n,x,ok",
    "plain,42,0.5,true",
    '"say ""hi"", twice",-7,0.1,false',
    '" lead",,1e+300,',
    '"two\nlines",9007199254740993,3,',
    "nul\0kept,,,",
  }, "\n") .. "\n"
  T.eq(hl.rows.to_csv(rows, { "name", "n", "x", "ok" }), want, "text")
  T.eq(hl.rows.to_csv({}, { "a,b" }), '"a,b"\n', "no rows: the header alone, quoted")
end)

T.test("issue 22: cells a spreadsheet would run get an apostrophe, which read_csv takes off", function()
  -- '=cmd|...' was written as is: opened in a spreadsheet it runs (OWASP "CSV Injection")
  local names = { "=cmd|' /C calc'!A0", "+1", "-2", "@SUM(A1)", "\tx", "\rx", "'=x", "''", "'x", "a=b", "=\"q\"" }
  local rows = {}
  for i, s in ipairs(names) do rows[i] = { name = s, n = -i } end
  local text = hl.rows.to_csv(rows, { "name", "n" })
  T.ok(text:find('\n"\'=cmd|\' /C calc\'!A0",-1\n', 1, true) ~= nil, "escaped, the number not: " .. text)
  for line in text:gmatch("[^\n]+") do
    T.ok(not line:find("^[=+%-@]"), "no line starts a formula: " .. line)
  end
  local dir = os.getenv("HBDLAB_BUILD_DIR") or "/tmp"
  hl.rows.write(rows, dir .. "/formula.csv")
  local back = hl.rows.read_csv(dir .. "/formula.csv")
  for i, s in ipairs(names) do
    T.eq(back[i].name, s, "read back exactly: " .. string.format("%q", s))
    T.eq(back[i].n, -i, "a negative number stays a number")
  end
end)

T.test("sweep_to_csv and rows.write_csv write one sweep identically", function()
  local base = { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "H100", gpus = 8, hbd = 8 }, parallel = { tp = 1 } }
  -- tp = 3 fails (it does not divide 32 heads): an error cell and empty result cells; the placement
  -- axis value holds commas (quoted). No batch = "max" here: a row's batch is the batch as run, while
  -- sweep_to_csv's axis column says max (tests/lua/test_sweep_search.lua checks that).
  local axes = { { "input", { 128, 4096 } }, { "tp", { 1, 3 } }, { "batch", { 1, 64 } },
                 { "model", { "llama-3.1-8b", "mixtral-8x7b" } }, { "placement", { "tp,dp,pp" } } }
  local columns = { "ttft_ms", "bound", "memory.fits", "parallel.tp", "memory.kv_bytes" }
  local a, b = os.tmpname(), os.tmpname()
  local n = hl.sweep_to_csv { base = base, axes = axes, out = a, columns = columns, progress = false }
  local rows = hl.sweep { base = base, axes = axes }
  local cols = { "input", "tp", "batch", "model", "placement" }
  for _, c in ipairs(columns) do cols[#cols + 1] = c end
  cols[#cols + 1] = "error"
  hl.rows.write_csv(rows, b, cols)
  local ta, tb = io.open(a, "rb"):read("a"), io.open(b, "rb"):read("a")
  os.remove(a)
  os.remove(b)
  T.eq(n, 16, "2 x 2 x 2 x 2 rows")
  T.ok(ta:find("does not divide", 1, true) and ta:find(',"tp,dp,pp",', 1, true), "error cells, a quoted axis value")
  T.eq(ta, tb, "the same bytes")
end)

T.test("rows.write creates missing folders and names the one it cannot create", function()
  local base = os.tmpname() -- a file: a folder cannot be made below it
  os.remove(base)
  local dir = base .. "/a//b/c/"
  hl.rows.write({ { x = 1 } }, dir .. "r.csv")
  local f = io.open(dir .. "r.csv")
  T.ok(f ~= nil, "written into a new three-level folder")
  T.eq(f:read("a"), "x\n1\n", "the rows")
  f:close()
  hl.rows.write({ { x = 2 } }, dir .. "r.csv") -- the folders exist now
  local blocker = base .. "/a/file"
  io.open(blocker, "w"):close()
  T.raises(function() hl.rows.write({ { x = 1 } }, blocker .. "/sub/r.csv") end,
           "cannot create folder " .. blocker .. "/sub: " .. blocker .. ": Not a directory")
  os.remove(dir .. "r.csv"); os.remove(base .. "/a/b/c"); os.remove(base .. "/a/b"); os.remove(blocker)
  os.remove(base .. "/a"); os.remove(base)
end)

T.done()
