-- Property test (issue 22, item 1): no control byte of user text reaches a .gp file, and gnuplot
-- never runs a command planted in user text. Every text option of every plot kind (line,
-- scatter, bar, heatmap, roofline, timeline, tornado) gets random strings of any bytes 0-255
-- (NUL, CR, LF, backslash, quotes, UTF-8 included), mixed with pieces of known attacks (a NUL
-- after a backslash joined the next line in gnuplot: `title = "T\\\0"` then
-- `xlabel = '; system("touch PWNED"); #'` ran). Each figure is drawn by gnuplot; after each, its
-- .gp holds no byte below 32 but the line end, and no planted file exists.
local T = dofile("tests/lua/testlib.lua")

local dir = os.tmpname()
os.remove(dir)
hl.rows.ensure_dir(dir)
local function pwned() -- planted commands touch dir/PWNED* (absolute) or ./PWNED* (gnuplot runs in dir)
  local p = io.popen("ls -a '" .. dir .. "'")
  local names = p:read("a")
  p:close()
  return names:find("PWNED", 1, true) ~= nil
end

math.randomseed(22)
local pieces = {
  "\\", "\0", "\\\0", "\n", "\r", "\r\n", "'", '"', "`", "''", "\27[31m", "\t", "\127",
  '; system("touch ' .. dir .. '/PWNED_a"); #', "'; system('touch PWNED_b'); '",
  "\\\0\nsystem('touch PWNED_c')\n", "`touch PWNED_d`", '"; system("touch PWNED_e") #',
  "\n!touch PWNED_f\n", "$(touch PWNED_g)", "é", "€", "日本", "\240\159\154\128", "\255\254", "%s%d%n",
}
local function random_text()
  local parts = {}
  for _ = 1, math.random(1, 8) do
    if math.random() < 0.5 then
      parts[#parts + 1] = pieces[math.random(#pieces)]
    else
      local b = {}
      for k = 1, math.random(1, 6) do b[k] = string.char(math.random(0, 255)) end
      parts[#parts + 1] = table.concat(b)
    end
  end
  return table.concat(parts)
end

local bad_gp, runs, refused = {}, 0, 0
local function check_file(kind, path, allowed) -- allowed: the pattern of control bytes hbdlab writes itself
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  local at = text:find(allowed)
  if at then bad_gp[#bad_gp + 1] = string.format("%s: %s byte %d is %d", kind, path, at, text:byte(at)) end
end

local n = 0
local function draw(kind, t, gnuplot_may_refuse)
  n = n + 1
  t.out = dir .. "/f" .. n .. ".png"
  local ok, err = pcall(hl.plot[kind], t)
  runs = runs + 1
  -- gnuplot may refuse a random format string (xformat '%n'): an error, never a command run;
  -- every other text is drawn
  if not ok then
    refused = refused + 1
    T.ok(gnuplot_may_refuse and tostring(err):find("gnuplot failed", 1, true), kind .. ": refused: " .. tostring(err))
  end
  check_file(kind, dir .. "/f" .. n .. ".gp", "[%z\1-\9\11-\31\127]") -- line ends only
  check_file(kind, dir .. "/f" .. n .. ".dat", "[%z\1-\8\11-\31\127]") -- tabs between columns, line ends
  T.ok(not pwned(), kind .. ": a planted command ran")
end

local ops = hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, output = 8 }.decode.breakdown
local events = hl.trace.events(hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 2, dp = 4 }, batch = 4, output = 8 })

T.test("every text option of every plot kind keeps control bytes out of the .gp", function()
  for _ = 1, 5 do
    for _, kind in ipairs({ "line", "scatter" }) do
      local xf, yf, by = random_text(), random_text(), random_text()
      local data = {}
      for i = 1, 4 do data[i] = { [xf] = i, [yf] = i * i, [by] = random_text() } end
      draw(kind, { data = data, x = xf, y = yf, by = by, title = random_text(), xlabel = random_text(),
        ylabel = random_text(), xformat = random_text(), yformat = random_text() }, true)
      draw(kind, { data = data, x = xf, y = yf, by = by, title = random_text(), xlabel = random_text(),
        ylabel = random_text() })
      draw(kind, { data = data, x = xf, y = yf, label = random_text() }) -- labels from the field names
    end
    local c1, c2 = random_text(), random_text()
    local bars = { { cat = random_text(), [c1] = 1, [c2] = 2 }, { cat = random_text(), [c1] = 3, [c2] = 1 } }
    draw("bar", { data = bars, x = "cat", y = { c1, c2 }, labels = { [c1] = random_text() }, title = random_text(),
      xlabel = random_text(), ylabel = random_text() })
    draw("bar", { data = { { cat = 1, v = 2, s = random_text() }, { cat = 2, v = 3, s = random_text() } }, x = "cat",
      y = "v", by = "s", stacked = true, title = random_text() })
    local hx, hy, hz = random_text(), random_text(), random_text()
    draw("heatmap", { data = { { [hx] = random_text(), [hy] = random_text(), [hz] = 1 },
      { [hx] = random_text(), [hy] = random_text(), [hz] = 2 } }, x = hx, y = hy, z = hz, zlabel = random_text(),
      title = random_text(), xlabel = random_text(), ylabel = random_text() })
    local named = {}
    for i, op in ipairs(ops) do named[i] = { name = random_text(), flops = op.flops, bytes = op.bytes, time_s = op.time_s } end
    draw("roofline", { gpu = "h100-sxm", precision = "fp8", ops = named, title = random_text(), xlabel = random_text(),
      ylabel = random_text() })
    local ev = {}
    for i = 1, math.min(#events, 12) do
      local e = events[i]
      ev[i] = { gpu = e.gpu, ts_s = e.ts_s, dur_s = e.dur_s, kind = e.kind, tier = e.tier, name = random_text() }
    end
    draw("timeline", { events = ev, title = random_text(), xlabel = random_text(), ylabel = random_text() })
    draw("tornado", { data = { { p = random_text(), lo = 1, hi = 3 }, { p = random_text(), lo = 0.5, hi = 2 } },
      name = "p", low = "lo", high = "hi", low_label = random_text(), high_label = random_text(), title = random_text() })
  end
  T.eq(#bad_gp, 0, "control bytes in .gp/.dat files: " .. table.concat(bad_gp, "; "))
  T.ok(runs >= 60 and refused <= 10, string.format("%d figures, %d refused by gnuplot", runs, refused))
end)

T.test("the two lines of the issue run nothing and are drawn", function()
  draw("line", { data = { { x = 1, y = 1 }, { x = 2, y = 2 } }, x = "x", y = "y", title = "T\\\0",
    xlabel = '; system("touch ' .. dir .. '/PWNED_issue"); #' })
  T.ok(io.open(dir .. "/f" .. n .. ".png", "rb") ~= nil, "the figure is drawn")
  local f = assert(io.open(dir .. "/f" .. n .. ".gp", "rb"))
  local gp = f:read("a")
  f:close()
  T.ok(gp:find('set title "T\\134 "\n', 1, true), "the NUL became a space inside the quotes")
end)

-- issue 22, item 9: values of the wrong type gave Lua's own errors from inside the plot code
-- ("attempt to mul a 'string' with a 'number'", "attempt to index a nil value")
T.test("plots name the field and the row of a value that is not a number", function()
  local out = dir .. "/bad.png"
  T.raises(function() hl.plot.line { data = { { x = "a", y = 1 } }, x = "x", y = "y", out = out } end,
    "plot.line: field 'x' of row 1 is \"a\" (a string), not a finite number")
  T.raises(function() hl.plot.scatter { data = { { x = 1, y = 1 }, { x = 2, y = "2" } }, x = "x", y = "y", out = out } end,
    "plot.scatter: field 'y' of row 2 is \"2\" (a string)")
  T.raises(function() hl.plot.line { data = { { x = 1, y = 1 } }, x = "x", y = "y", xscale = "k", out = out } end,
    "plot.line: field 'xscale' is \"k\" (a string), not a finite number")
  T.raises(function() hl.plot.line { data = { 5 }, x = "x", y = "y", out = out } end, "plot.line: data[1] is a number, not a row table")
  T.raises(function() hl.plot.bar { data = { { c = 1, v = "x" } }, x = "c", y = "v", out = out } end,
    "plot.bar: field 'v' of row 1 is \"x\" (a string)")
  T.raises(function() hl.plot.heatmap { data = { { a = 1, b = 1, z = {} } }, x = "a", y = "b", z = "z", out = out } end,
    "plot.heatmap: field 'z' of row 1 is table")
  T.raises(function() hl.plot.roofline { gpu = "h100-sxm", precision = "nope", ops = ops, out = out } end,
    "plot.roofline: field 'precision' is \"nope\" (allowed: fp32, bf16, fp16, fp8, int8, fp4)")
  T.raises(function() hl.plot.roofline { gpu = "h100-sxm", precision = "fp4", ops = ops, out = out } end,
    "plot.roofline: gpu 'H100-SXM' has no fp4 compute")
  T.raises(function() hl.plot.roofline { gpu = "h100-sxm", ops = { { flops = "1", bytes = 1, time_s = 1 } }, out = out } end,
    "plot.roofline: field 'flops' of row 1 is \"1\"")
  T.raises(function() hl.plot.timeline { events = { { gpu = "0", ts_s = 0, dur_s = 1, name = "x" } }, out = out } end,
    "plot.timeline: field 'gpu' of row 1 is \"0\"")
  T.raises(function() hl.plot.timeline { events = { { gpu = 0, ts_s = 0, dur_s = 1, tier = "moon" } }, out = out } end,
    "plot.timeline: field 'tier' of event 1 is moon (allowed: scale-up, scale-out)")
  T.raises(function() hl.plot.tornado { data = { { p = "a", lo = "1", hi = 2 } }, name = "p", low = "lo", high = "hi", out = out } end,
    "plot.tornado: field 'lo' of row 1 is \"1\"")
end)

T.test("attack12: a figure name that begins with | or < is a file, not a command", function()
  -- gnuplot reads `set output "|cmd"` as a pipe to a shell command and a script or data file
  -- "<cmd" as a command's output: out = "|touch PWNED_p.png" ran `touch PWNED_p.png.tmp-...`
  -- (the temp name's start) and out = "<touch PWNED_q.png" ran `touch PWNED_q.gp` (the script
  -- argument), leaving no figure. File names are legal with any first byte; each is now "./"+name.
  local function planted() -- a file named PWNED_... (the figures' own names hold "touch PWNED")
    local p = io.popen("ls -a '" .. dir .. "'")
    local names = p:read("a")
    p:close()
    return ("\n" .. names):find("\nPWNED", 1, true) ~= nil
  end
  for _, name in ipairs { "|touch PWNED_p.png", "<touch PWNED_q.png", "-", "+.png" } do
    local out = dir .. "/" .. name
    if name == "-" then out = dir .. "/-.png" end
    T.eq(hl.plot.line { data = { { x = 1, y = 1 }, { x = 2, y = 3 } }, x = "x", y = "y", out = out }, out, "drawn: " .. name)
    local f = assert(io.open(out, "rb"))
    local png = f:read("a")
    f:close()
    T.eq(png:sub(-8), "IEND\174\066\096\130", "a complete PNG: " .. name)
    T.ok(not planted(), "no planted command ran for " .. name)
    -- and the .gp reruns alone from its folder (its default output and data file are the same names)
    local gp = out:gsub("%.png$", ".gp")
    local base = gp:match("[^/]*$")
    T.ok(os.execute("cd '" .. dir .. "' && gnuplot './" .. base:gsub("'", "'\\''") .. "' 2>/dev/null"), "reruns: " .. base)
    T.ok(not planted(), "the rerun ran no planted command for " .. name)
  end
end)

os.execute("rm -rf '" .. dir .. "'")
T.done()
