-- Charts with gnuplot: each call writes NAME.dat (the data), NAME.gp (a
-- self-contained script with the style, plots/style.gp, embedded) and renders NAME.png/.svg/.pdf
-- by running gnuplot with an argument vector (never through a shell). User text
-- reaches the .gp only as escaped double-quoted strings (M.quote) or as checked numbers.
local core = require "hbdlab.core"
local num_text = require("hbdlab.pretty").num_text

local M = {}

--- User text as one line of plain characters: every control byte (0-31 and 127: NUL, CR, LF,
--- tab, escape, ...) becomes a space. gnuplot stops reading a line at a NUL byte, so a kept NUL
--- could end a line in a backslash that joins the next line (issue 22): no control byte reaches
--- a .gp or .dat file.
function M.text(s)
  return (tostring(s):gsub("[%z\1-\31\127]", " "))
end

--- Quotes a string for gnuplot. A double-quoted string in which every byte but letters, digits,
--- space, . , : _ + - = / ( ) [ ] < > and UTF-8 (bytes >= 128) is an octal escape (\047 for an
--- apostrophe, \140 for a backquote, \100 for @, \043 for #, \073 for ;): gnuplot's scanners
--- (backquote substitution, @macros, comments, command separators, the string parser) then all
--- see one string with no quote, backquote, @, # or ; inside, and the escapes give the exact text
--- back. Single quotes with '' were not sure to hold (gnuplot 5.4 misreads `'''x'`, and its macro
--- scanner disagrees with its parser once a quote is doubled). Control bytes become spaces
--- (M.text): a NUL ended gnuplot's line (issue 22).
function M.quote(s)
  return '"' .. M.text(s):gsub("[^%w .,:_+%-=/()%[%]<>\128-\255]", function(c)
    return string.format("\\%03o", c:byte())
  end) .. '"'
end

--- A tic label: gnuplot reads it as a format for the tic's value, so a % is doubled.
function M.tic_label(s) return M.quote(M.text(s):gsub("%%", "%%%%")) end

-- A string column in a .dat file: gnuplot data files recognise double quotes
-- only (no substitution happens there); embedded quotes become apostrophes.
local function datq(s)
  return '"' .. M.text(s):gsub('"', "'") .. '"'
end

local rows = require "hbdlab.rows"
local write_atomic, ensure_dir = rows.write_atomic, rows.ensure_dir
local function dirname(p) return p:match("^(.*)/[^/]*$") or "." end

-- plots/style.gp (terminal, fonts, palette, line styles, grid), embedded at build time
-- (cmake/lua_chunks.c --text); every .gp copies it after its three header lines.
local style = require "hbdlab.plot_style"

-- Checks a name that goes into a .gp script or onto gnuplot's command line.
local function check_name(what, v)
  if type(v) ~= "string" then error("plot: field '" .. what .. "' must be a string", 4) end
  if v:find("[%c]") then
    error(string.format("plot: field '%s' %q contains a control character (newline, tab, ...); not allowed in a file name", what, v), 4)
  end
end

-- A log scale base: true (10) or a finite number > 1; anything else is refused (never pasted).
local function log_base(what, v)
  if v == true then return "10" end
  if type(v) ~= "number" or not (v > 1 and v < 1e300) then
    error(string.format("plot: field '%s' must be true or a number > 1 (the log base), got %s", what, num_text(v)), 4)
  end
  return string.format("%.10g", v)
end

-- Markers that end a complete file of each format (gnuplot exits 0 even when a write was cut short).
local complete = {
  png = function(tail) return tail:sub(-8) == "IEND\174\066\096\130" end,
  svg = function(tail) return tail:find("</svg>%s*$") ~= nil end,
  pdf = function(tail) return tail:find("%%%%EOF%s*$") ~= nil end,
}

-- The image format of an output path; the style picks the terminal from it (hbdlab_format).
local function format_of(out)
  local ext = out:match("%.(%w+)$")
  if complete[ext] then return ext end
  error("plot: output '" .. out .. "' must end in .png, .svg or .pdf", 3)
end

-- A file name in the figure's folder as gnuplot must be given it: one that begins with '|' is a
-- pipe to a shell command for `set output`, with '<' a command's output for a data or script file
-- (`gnuplot "<touch x.gp"` ran touch), and "-", "+", "++" are its pseudo-files; "./" + the name is
-- the file itself (attack12). Other names are kept as they are.
local function plain(name)
  if name:find("^[<|%-+]") then return "./" .. name end
  return name
end

-- Writes NAME.dat and NAME.gp beside t.out and runs gnuplot in that folder.
-- gp: lines after the shared preamble (terminal, output, style, title, labels).
local function render(t, data, gp_lines)
  if type(t.out) ~= "string" then error("plot: field 'out' (the image path) is required", 3) end
  check_name("out", t.out)
  -- in a sharded run (--shard I/N) the figure and its .dat/.gp are the shard's own (_shardIofN)
  local out = core.shard_path(t.out)
  local base = out:gsub("%.%w+$", "")
  local format = format_of(out)
  local logx = t.logx and log_base("logx", t.logx)
  local logy = t.logy and log_base("logy", t.logy)
  local name = base:match("[^/]*$")
  ensure_dir(dirname(out))
  write_atomic(base .. ".dat", data)
  -- three header lines, then the style verbatim (it ends in a newline)
  local gp = {
    "# generated by hbdlab; rerun from this folder with: gnuplot " .. M.quote(plain(name .. ".gp")),
    "hbdlab_format = " .. M.quote(format),
    "if (!exists('hbdlab_output')) hbdlab_output = " .. M.quote(plain(out:match("[^/]*$"))),
    style .. "set output hbdlab_output",
    "datafile = " .. M.quote(plain(name .. ".dat")),
    "set title " .. M.quote(t.title or ""),
    "set xlabel " .. M.quote(t.xlabel or t.x or ""),
    "set ylabel " .. M.quote(t.ylabel or (type(t.y) == "string" and t.y) or "value"),
  }
  if logx then gp[#gp + 1] = "set logscale x " .. logx end
  if logy then gp[#gp + 1] = "set logscale y " .. logy end
  for _, l in ipairs(gp_lines) do gp[#gp + 1] = l end
  write_atomic(base .. ".gp", table.concat(gp, "\n") .. "\n")
  local d = core.dist()
  if d.mpi and d.index > 0 then return out end -- under MPI rank 0 draws (every rank has every row)
  -- gnuplot draws into a temp file beside the figure (renamed over it only when complete, so a
  -- failure or a full disk keeps the old figure); it runs in the figure's folder (so the .gp is
  -- relocatable), from an argument vector
  local tmp = core.temp_beside(out)
  local ok, err = pcall(function()
    local code, msg = core.spawn { "gnuplot", "-e", "hbdlab_output = " .. M.quote(plain(tmp:match("[^/]*$"))),
                                   plain(name .. ".gp"),
                                   cwd = dirname(out) }
    if code == nil then error("plot: " .. msg .. " (install gnuplot-nox)", 0) end
    if code ~= 0 then error("plot: gnuplot failed with status " .. code .. " on " .. base .. ".gp", 0) end
    local tail = core.file_tail(tmp, 64) or ""
    if not complete[out:match("%.(%w+)$")](tail) then
      error("plot: " .. out .. " was not written completely (disk full or a file size limit?); the old figure is kept", 0)
    end
    core.commit_temp(tmp, out)
  end)
  if not ok then
    core.discard_temp(tmp)
    error(err, 3)
  end
  M.made[#M.made + 1] = out
  return out
end

M.made = {} -- every image written, in order (the notebook runner reads this)

local function num(v) return string.format("%.10g", v) end

-- Raises "plot.KIND: field 'F' is required (...)" naming the first missing field.
local function need(t, kind, fields)
  if type(t) ~= "table" then error("plot." .. kind .. " expects a table of fields", 3) end
  for _, f in ipairs(fields) do
    if t[f] == nil then
      error(string.format("plot.%s: field '%s' is required (needs %s)", kind, f, table.concat(fields, ", ")), 3)
    end
  end
end

-- A value that must be a finite number (a coordinate, a scale): anything else raises
-- "plot.KIND: field 'F' of row I is "abc" (a string), not a number" instead of an arithmetic
-- error inside the plot code (issue 22).
local function number(kind, what, v, i)
  if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge then
    local shown = type(v) == "string" and string.format("%q", v) or tostring(v)
    error(string.format("plot.%s: field '%s'%s is %s (a %s), not a finite number", kind, what,
      i and (" of row " .. i) or "", shown, type(v)), 4)
  end
  return v
end
local function scale_of(kind, t, f)
  if t[f] == nil then return 1 end
  return number(kind, f, t[f])
end

-- A category label: integral numbers without ".0".
local function label(v)
  if type(v) == "number" and v == math.floor(v) and math.abs(v) < 1e15 then return string.format("%d", v) end
  return tostring(v)
end

-- The unit a field name says (ttft_s -> s, kv_bytes -> B, hbm_bw -> B/s), or nil.
local function unit_of(name)
  if type(name) ~= "string" then return nil end
  if name:match("_s$") then return "s" end
  if name:match("_bytes$") then return "B" end
  if name:match("_bw$") then return "B/s" end
  if name:match("_w$") then return "W" end
  if name:match("_j$") then return "J" end
  return nil
end

--- A legend entry for value v of field `by`: numbers of a field with a unit in SI
--- prefixes ("scaleout_bw" 5e10 -> "50 GB/s"), others as they are.
function M.legend_value(by, v)
  local unit = unit_of(by)
  if unit and type(v) == "number" then return require("hbdlab.objects").si(v, unit) end
  return tostring(v)
end

-- Groups rows by t.by (or one series), each sorted by x.
local function series(t, kind)
  local order, groups = {}, {}
  for i, row in ipairs(t.data) do
    if type(row) ~= "table" and not core.is_sweep_row(row) then error(string.format("plot.%s: data[%d] is a %s, not a row table", kind, i, type(row)), 4) end
    if row[t.x] ~= nil and row[t.y] ~= nil and not row.error then
      number(kind, t.x, row[t.x], i)
      number(kind, t.y, row[t.y], i)
      local key = t.by and M.legend_value(t.by, row[t.by]) or (t.label or t.y)
      if not groups[key] then groups[key] = {}; order[#order + 1] = key end
      local g = groups[key]
      g[#g + 1] = row
    end
  end
  for _, k in ipairs(order) do table.sort(groups[k], function(a, b) return a[t.x] < b[t.x] end) end
  return order, groups
end

local prefixes = { [1e3] = "m", [1e6] = "u", [1e9] = "n", [1e-3] = "k", [1e-6] = "M", [1e-9] = "G", [1e-12] = "T" }

--- The default axis label of field `name` shown times `scale`: the unit follows the
--- scaling ("ttft_s" with scale 1e3 -> "ttft (ms)"; no unit known -> "name x scale").
function M.axis_label(name, scale)
  if type(name) ~= "string" then return "value" end
  scale = scale or 1
  -- a statistic of a timed serve field ("ttft_s.p99", a serve_sweep column): "ttft p99 (s)"
  local timed, stat = name:match("^(.+)_s%.(%w+)$")
  if timed and (scale == 1 or prefixes[scale]) then
    return string.format("%s %s (%ss)", timed, stat, scale == 1 and "" or prefixes[scale])
  end
  -- a field in the friendly units its name says ("ttft_ms", "latency_us", "ttft_p99_ms"), unscaled
  local friendly, funit = name:match("^(.+)_([mu]s)$")
  if friendly and scale == 1 then return string.format("%s (%s)", friendly:gsub("_", " "), funit) end
  local unit = unit_of(name)
  if unit then
    local base = name:gsub("_" .. (unit == "B/s" and "bw" or unit == "B" and "bytes" or unit:lower()) .. "$", "")
    if unit == "B/s" then base = name end
    if scale == 1 then return string.format("%s (%s)", base, unit) end
    local p = prefixes[scale]
    if p then return string.format("%s (%s%s)", base, p, unit) end
  end
  if scale ~= 1 then return string.format("%s x %g", name, scale) end
  return name
end

local function xy_plot(t, mark)
  local kind = mark == "points" and "scatter" or "line"
  need(t, kind, { "data", "x", "y", "out" })
  local xscale, yscale = scale_of(kind, t, "xscale"), scale_of(kind, t, "yscale")
  if type(t.data) ~= "table" then error("plot." .. kind .. ": field 'data' must be an array of rows", 3) end
  local order, groups = series(t, kind)
  if #order == 0 then error("plot: no rows have both '" .. t.x .. "' and '" .. t.y .. "'", 3) end
  local lines = {}
  for _, key in ipairs(order) do
    lines[#lines + 1] = "# series " .. M.text(key)
    for _, row in ipairs(groups[key]) do
      lines[#lines + 1] = num(row[t.x] * xscale) .. "\t" .. num(row[t.y] * yscale)
    end
    lines[#lines + 1] = "\n"
  end
  local gp = { "set offsets graph 0.03, graph 0.03, graph 0.05, graph 0.05" }
  if t.xformat then gp[#gp + 1] = "set format x " .. M.quote(t.xformat) end
  if t.yformat then gp[#gp + 1] = "set format y " .. M.quote(t.yformat) end
  -- y starts at 0 (unless asked otherwise, logarithmic, or the data go below 0)
  local ymin = t.ymin
  if ymin == nil and not t.logy then
    ymin = 0
    for _, key in ipairs(order) do
      for _, row in ipairs(groups[key]) do if row[t.y] < 0 then ymin = nil end end
    end
  end
  if ymin then gp[#gp + 1] = string.format("set yrange [%s:*]", num(ymin)); gp[1] = "set offsets graph 0.03, graph 0.03, graph 0.05, 0" end
  -- x values that are all >= 0 (a time, a rate) whose 3% margin would reach below 0: the axis starts
  -- at 0 (a run's t_s from 0.4 s to 700 s was drawn from -100 s)
  if not t.logx then
    local lo, hi = math.huge, -math.huge
    for _, key in ipairs(order) do
      for _, row in ipairs(groups[key]) do lo, hi = math.min(lo, row[t.x] * xscale), math.max(hi, row[t.x] * xscale) end
    end
    if lo >= 0 and hi > lo and lo - 0.03 * (hi - lo) < 0 then
      gp[1] = gp[1]:gsub("^set offsets graph 0%.03,", "set offsets 0,")
      gp[#gp + 1] = "set xrange [0:*]"
    end
  end
  t.xlabel = t.xlabel or M.axis_label(t.x, t.xscale)
  t.ylabel = t.ylabel or M.axis_label(t.y, t.yscale)
  if t.xtics then
    -- numbers only (a tic is a position): anything else would be pasted into the script
    if type(t.xtics) ~= "table" then error("plot: field 'xtics' must be an array of numbers", 3) end
    local tics = {}
    for i, v in ipairs(t.xtics) do
      if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge then
        error(string.format("plot: xtics[%d] must be a finite number, got %s", i, num_text(v)), 3)
      end
      tics[i] = num(v)
    end
    gp[#gp + 1] = "set xtics (" .. table.concat(tics, ", ") .. ")"
  end
  local plots = {}
  for i, key in ipairs(order) do
    plots[#plots + 1] = string.format("%s index %d using 1:2 with %s lt %d title %s",
      i == 1 and "datafile" or "''", i - 1, mark, i, M.quote((t.by and (t.by .. " ") or "") .. key))
  end
  gp[#gp + 1] = "plot " .. table.concat(plots, ", \\\n     ")
  return render(t, table.concat(lines, "\n"), gp)
end

--- hl.plot.line{ data = rows, x = "hbd", y = "ttft_s", by = "precision", title, xlabel, ylabel,
---               logx = 2|10|true, logy, xscale, yscale, xtics = {...}, out = "fig.png" }
function M.line(t) return xy_plot(t, "linespoints") end

--- hl.plot.scatter{ same fields as line }: points only.
function M.scatter(t) return xy_plot(t, "points") end

--- hl.plot.bar{ data = rows, x = "hbd", y = {"compute_s", "comm_s"} | "col", by = "series",
---              stacked = true|false, ... }: grouped or stacked bars per x category.
function M.bar(t)
  need(t, "bar", { "data", "x", "y", "out" })
  local ys = scale_of("bar", t, "yscale")
  local cols, cats, values = {}, {}, {}
  if type(t.y) == "table" then
    cols = t.y
    for i, row in ipairs(t.data) do
      local c = label(row[t.x])
      if not values[c] then values[c] = {}; cats[#cats + 1] = c end
      for _, y in ipairs(cols) do values[c][y] = number("bar", y, row[y] or 0, i) * ys end
    end
  else -- one column split by series
    local seen = {}
    for i, row in ipairs(t.data) do
      local c, s = label(row[t.x]), label(row[t.by] or t.y)
      if not values[c] then values[c] = {}; cats[#cats + 1] = c end
      if not seen[s] then seen[s] = true; cols[#cols + 1] = s end
      values[c][s] = number("bar", t.y, row[t.y] or 0, i) * ys
    end
  end
  local heads = {}
  for j, y in ipairs(cols) do heads[j] = M.text(y) end
  local lines = { "# category\t" .. table.concat(heads, "\t") }
  for _, c in ipairs(cats) do
    local parts = { datq(c) }
    for _, y in ipairs(cols) do parts[#parts + 1] = num(values[c][y] or 0) end
    lines[#lines + 1] = table.concat(parts, "\t")
  end
  local gp = {
    "set style data histograms",
    t.stacked and "set style histogram rowstacked" or "set style histogram clustered gap 1",
    "set style fill solid 0.85 border -1",
    "set boxwidth 0.75",
    "set yrange [0:*]",
    "set xtics rotate by -30",
  }
  local plots = {}
  for j, y in ipairs(cols) do
    plots[#plots + 1] = string.format("%s using %d:xtic(1) lt %d title %s", j == 1 and "datafile" or "''", j + 1, j,
      M.quote((t.labels and t.labels[y]) or y))
  end
  gp[#gp + 1] = "plot " .. table.concat(plots, ", \\\n     ")
  return render(t, table.concat(lines, "\n") .. "\n", gp)
end

--- hl.plot.heatmap{ data = rows, x = "hbd", y = "gpus", z = "tps_per_gpu", ... }: a colour grid
--- over two categorical axes, each cell labelled with its value.
function M.heatmap(t)
  need(t, "heatmap", { "data", "x", "y", "z", "out" })
  local zs = scale_of("heatmap", t, "zscale")
  local xs, ys, xi, yi, z = {}, {}, {}, {}, {}
  for i, row in ipairs(t.data) do
    local xv, yv = row[t.x], row[t.y]
    if xv ~= nil and yv ~= nil and row[t.z] ~= nil then
      if not xi[xv] then xs[#xs + 1] = xv; xi[xv] = true end
      if not yi[yv] then ys[#ys + 1] = yv; yi[yv] = true end
      z[tostring(xv) .. "\0" .. tostring(yv)] = number("heatmap", t.z, row[t.z], i) * zs
    end
  end
  local function sorted(a) table.sort(a, function(p, q) if type(p) == type(q) then return p < q end return tostring(p) < tostring(q) end) end
  sorted(xs); sorted(ys)
  local lines = { "# i j value (x = " .. M.text(t.x) .. ", y = " .. M.text(t.y) .. ")" }
  for i, xv in ipairs(xs) do
    for j, yv in ipairs(ys) do
      local v = z[tostring(xv) .. "\0" .. tostring(yv)]
      lines[#lines + 1] = string.format("%d\t%d\t%s", i - 1, j - 1, v and num(v) or "NaN")
    end
    lines[#lines + 1] = ""
  end
  local xt, yt = {}, {}
  for i, v in ipairs(xs) do xt[i] = M.tic_label(label(v)) .. " " .. (i - 1) end
  for j, v in ipairs(ys) do yt[j] = M.tic_label(label(v)) .. " " .. (j - 1) end
  local gp = {
    "set xtics (" .. table.concat(xt, ", ") .. ")",
    "set ytics (" .. table.concat(yt, ", ") .. ")",
    string.format("set xrange [-0.5:%g]", #xs - 0.5),
    string.format("set yrange [-0.5:%g]", #ys - 0.5),
    "set grid noxtics noytics",
    "set cblabel " .. M.quote(t.zlabel or t.z),
    "unset key",
    "plot datafile using 1:2:3 with image, '' using 1:2:(sprintf('%.3g', $3)) with labels font hbdlab_label_font tc lt 2",
  }
  return render(t, table.concat(lines, "\n") .. "\n", gp)
end

--- hl.plot.roofline{ gpu = g, precision = "fp8", ops = r.decode.breakdown (or rows with flops, bytes,
---                   time_s, name), out = ... }: each operator at its intensity and attained FLOP/s
--- under the GPU's compute roof and HBM slope (both at their efficiencies).
function M.roofline(t)
  need(t, "roofline", { "gpu", "ops", "out" })
  local g = require("hbdlab.objects").coerce("gpu", t.gpu) -- an object, a preset name or a table of fields
  local prec = t.precision or "bf16"
  local precs = { "fp32", "bf16", "fp16", "fp8", "int8", "fp4" }
  local known = false
  for _, p in ipairs(precs) do known = known or p == prec end
  if not known then
    error(string.format("plot.roofline: field 'precision' is %s (allowed: %s)", type(prec) == "string" and
      string.format("%q", prec) or tostring(prec), table.concat(precs, ", ")), 2)
  end
  if not (g[prec .. "_flops"] > 0) then
    error(string.format("plot.roofline: gpu '%s' has no %s compute (%s_flops = 0)", M.text(g.name), prec, prec), 2)
  end
  local peak = g[prec .. "_flops"] * g.eff_gemm
  local bw = g.hbm_bw * g.eff_mem
  local lines = { "# name\tintensity FLOP/B\tattained FLOP/s\tlabel x\tlabel y" }
  local n = 0
  -- Labels do not overlap: each goes a little above its point, then moves up
  -- (0.16 decade, about one line at this scale) while it would collide with a
  -- label already placed within half a decade of intensity.
  local pts = {}
  if type(t.ops) ~= "table" then error("plot.roofline: field 'ops' must be an array of operators", 2) end
  for i, op in ipairs(t.ops) do
    if type(op) ~= "table" then error(string.format("plot.roofline: ops[%d] is a %s, not a table", i, type(op)), 2) end
    for _, f in ipairs({ "flops", "bytes", "time_s" }) do
      if op[f] ~= nil then number("roofline", f, op[f], i) end
    end
    if (op.kind == nil or op.kind == "op") and (op.flops or 0) > 0 and (op.bytes or 0) > 0 and (op.time_s or 0) > 0 then
      pts[#pts + 1] = { name = op.name, x = op.flops / op.bytes, y = op.flops / op.time_s }
    end
  end
  table.sort(pts, function(a, b) return a.y < b.y end)
  local placed = {}
  for _, p in ipairs(pts) do
    local lx, ly = math.log(p.x, 10), math.log(p.y, 10) + 0.12
    local moved = true
    while moved do
      moved = false
      for _, q in ipairs(placed) do
        if math.abs(q[1] - lx) < 0.5 and math.abs(q[2] - ly) < 0.16 then ly = q[2] + 0.16; moved = true end
      end
    end
    placed[#placed + 1] = { lx, ly }
    lines[#lines + 1] = string.format("%s\t%s\t%s\t%s\t%s", datq(p.name), num(p.x), num(p.y), num(p.x), num(10 ^ ly))
    n = n + 1
  end
  if n == 0 then error("plot.roofline: no operator has flops, bytes and time_s", 2) end
  t.xlabel = t.xlabel or "operational intensity (FLOP/byte)"
  t.ylabel = t.ylabel or "attained FLOP/s"
  t.logx, t.logy = true, true
  local gp = {
    string.format("peak = %s; bw = %s; ridge = peak / bw", num(peak), num(bw)),
    "set xrange [0.1:1e5]",
    "set yrange [1e10:*]",
    "set format y '%.0s%cFLOP/s'",
    "roof(x) = (bw * x < peak) ? bw * x : peak",
    "set key inside right bottom",
    string.format("plot roof(x) with lines lt 1 lw 3 title %s, \\",
      -- the roof is at the achievable rates (peak x eff_gemm, HBM x eff_mem), not the datasheet's
      -- peak that print(gpu) shows: the legend says so, in plain numbers (was "3.2e+03 TFLOP/s")
      M.quote(string.format("%s %s achievable roof (%s TFLOP/s, %s TB/s)", g.name, prec,
        string.format(peak >= 100e12 and "%.0f" or "%.3g", peak / 1e12), string.format("%.3g", bw / 1e12)))),
    "     datafile using 2:3 with points lt 2 ps 1.6 title 'operators', \\",
    "     '' using 4:5:1 with labels font hbdlab_label_font notitle",
  }
  return render(t, table.concat(lines, "\n") .. "\n", gp)
end

--- hl.plot.timeline{ events = r:trace(), out = ... }: a Gantt chart per GPU (operators,
--- scale-up and scale-out collectives in their own colours).
function M.timeline(t)
  need(t, "timeline", { "events", "out" })
  local lines = { "# gpu\tstart_ms\tend_ms\tclass\tname" }
  local class = { op = 1, ["scale-up"] = 2, ["scale-out"] = 3 }
  local max_gpu, min_gpu, t_lo, t_hi = 0, math.huge, math.huge, -math.huge
  if type(t.events) ~= "table" then error("plot.timeline: field 'events' must be an array of events", 2) end
  for i, e in ipairs(t.events) do
    if type(e) ~= "table" then error(string.format("plot.timeline: events[%d] is a %s, not a table", i, type(e)), 2) end
    number("timeline", "gpu", e.gpu, i); number("timeline", "ts_s", e.ts_s, i); number("timeline", "dur_s", e.dur_s, i)
    local c = e.kind == "op" and 1 or class[e.tier or "scale-up"]
    if not c then
      error(string.format("plot.timeline: field 'tier' of event %d is %s (allowed: scale-up, scale-out)", i, tostring(e.tier)), 2)
    end
    lines[#lines + 1] = string.format("%d\t%s\t%s\t%d\t%s", e.gpu, num(e.ts_s * 1e3), num((e.ts_s + e.dur_s) * 1e3), c,
      datq(e.name))
    if e.gpu > max_gpu then max_gpu = e.gpu end
    if e.gpu < min_gpu then min_gpu = e.gpu end
    t_lo, t_hi = math.min(t_lo, e.ts_s), math.max(t_hi, e.ts_s + e.dur_s)
  end
  -- operator names on the first GPU's row (the mapping is symmetric), on bars wide enough to hold one
  local min_label_ms = t_hi > t_lo and (t_hi - t_lo) * 1e3 * 0.045 or 0
  t.xlabel = t.xlabel or "time (ms)"
  t.ylabel = t.ylabel or "GPU"
  local gp = {
    -- with labels, a free row above the first GPU holds them (they were drawn over the title)
    string.format("set yrange [%g:%g]", max_gpu + 0.6, t.labels == false and -0.6 or -1.9),
    "set ytics 0, 1",
    "set style fill solid 0.9 border -1",
    "plot for [c=1:3] datafile using (($2+$3)/2):($4==c ? $1 : 1/0):(($3-$2)/2):(0.35) with boxxyerror lt c " ..
      "title (c==1 ? 'compute/memory' : c==2 ? 'collective, scale-up' : 'collective, scale-out')" ..
      (t.labels == false and "" or string.format(", \\\n     datafile using (($2+$3)/2):($1==%s && ($3-$2)>=%s ? " ..
        "$1-0.5 : 1/0):5 with labels rotate by 35 left font hbdlab_small_font textcolor rgb hbdlab_ink notitle",
        num(min_gpu == math.huge and 0 or min_gpu), num(min_label_ms))),
  }
  return render(t, table.concat(lines, "\n") .. "\n", gp)
end

--- hl.plot.tornado{ data = rows, name = "parameter", low = "low", high = "high", base = 0,
---                   low_label =, high_label =, out = ... }: horizontal bars from the base
--- value to each row's low and high value, largest span on top.
function M.tornado(t)
  need(t, "tornado", { "data", "name", "low", "high", "out" })
  local base = t.base or 0
  local items = {}
  number("tornado", "base", base)
  for i, r in ipairs(t.data) do
    if r[t.low] and r[t.high] then
      number("tornado", t.low, r[t.low], i); number("tornado", t.high, r[t.high], i)
      items[#items + 1] = r
    end
  end
  table.sort(items, function(a, b)
    return math.abs(a[t.high] - a[t.low]) < math.abs(b[t.high] - b[t.low])
  end)
  local lines = { "# y\tlow\thigh\tname" }
  local tics = {}
  for i, r in ipairs(items) do
    lines[#lines + 1] = string.format("%d\t%s\t%s\t%s", i - 1, num(r[t.low]), num(r[t.high]), datq(r[t.name]))
    tics[#tics + 1] = M.tic_label(tostring(r[t.name])) .. " " .. (i - 1)
  end
  t.ylabel = t.ylabel or ""
  local gp = {
    "set ytics (" .. table.concat(tics, ", ") .. ")",
    string.format("set yrange [-0.7:%g]", #items - 0.3),
    "set style fill solid 0.85 border -1",
    string.format("set arrow from %s, graph 0 to %s, graph 1 nohead lw 1.5 lc rgb hbdlab_rule", num(base), num(base)),
    "set key outside right top",
    -- the two bars of a row sit side by side, so neither hides the other
    string.format("plot datafile using ((%s+$2)/2):($1-0.18):(abs($2-%s)/2):(0.17) with boxxyerror lt 1 title %s, \\", num(base), num(base),
      M.quote(t.low_label or "low value")),
    string.format("     '' using ((%s+$3)/2):($1+0.18):(abs($3-%s)/2):(0.17) with boxxyerror lt 2 title %s", num(base), num(base),
      M.quote(t.high_label or "high value")),
  }
  return render(t, table.concat(lines, "\n") .. "\n", gp)
end

--- hl.plot.frontier{ points = r.points, x = "tps_per_user", y = "tps_per_gpu", out = ..., lower = false }:
--- every point faint, the Pareto points of each system x precision x mode joined as a curve
--- (hl.frontier's figure). lower = true: smaller y is better (cost), the curve joins the lowest y.
--- keys = {"sys fp8 agg", ...}: every curve's colour by its place in this list (so two charts of
--- one search colour a curve alike even where one lacks some curves); default: order of appearance.
function M.frontier(t)
  need(t, "frontier", { "points", "x", "y", "out" })
  local order, groups = {}, {}
  for _, p in ipairs(t.points) do
    local x, y = p[t.x], p[t.y]
    if type(x) == "number" and type(y) == "number" and x == x and y == y then
      local key = p.system .. " " .. p.precision .. " " .. p.mode
      if not groups[key] then groups[key] = {}; order[#order + 1] = key end
      table.insert(groups[key], p)
    end
  end
  if #order == 0 then error("plot.frontier: no point has both '" .. t.x .. "' and '" .. t.y .. "'", 2) end
  local lines = {}
  for _, key in ipairs(order) do
    local g = groups[key]
    table.sort(g, function(a, b) return a[t.x] > b[t.x] end)
    lines[#lines + 1] = "# all points: " .. M.text(key)
    for _, p in ipairs(g) do lines[#lines + 1] = num(p[t.x]) .. "\t" .. num(p[t.y]) end
    lines[#lines + 1] = "\n"
    -- the curve: from the most interactive point, each point that betters every one before it
    lines[#lines + 1] = "# frontier: " .. M.text(key)
    local best
    for _, p in ipairs(g) do
      local y = p[t.y]
      if best == nil or (t.lower and y < best) or (not t.lower and y > best) then
        lines[#lines + 1] = num(p[t.x]) .. "\t" .. num(y)
        best = y
      end
    end
    lines[#lines + 1] = "\n"
  end
  t.xlabel = t.xlabel or "tokens/s per user"
  t.ylabel = t.ylabel or (t.y == "tps_per_gpu" and "output tokens/s per GPU" or t.y)
  -- dominated points faint: each curve's colour at 75% transparency (the style's hbdlab_faint)
  local place = {}
  if t.keys ~= nil then
    if type(t.keys) ~= "table" then error("plot.frontier: field 'keys' must be an array of curve names", 2) end
    for i, key in ipairs(t.keys) do place[key] = place[key] or i end
  end
  local extra = #(t.keys or {})
  local plots = {}
  for i, key in ipairs(order) do
    if not place[key] then extra = extra + 1; place[key] = extra end -- a curve the list does not name: after it
    local c = place[key]
    plots[#plots + 1] = string.format("%s index %d using 1:2 with points pt 7 ps 0.6 lc rgb hbdlab_faint(%d) notitle",
      i == 1 and "datafile" or "''", 2 * (i - 1), c)
    plots[#plots + 1] = string.format("'' index %d using 1:2 with linespoints lt %d lw 2.5 title %s",
      2 * i - 1, (c - 1) % 6 + 1, M.quote(key))
  end
  local gp = { "set offsets 0, graph 0.03, graph 0.05, 0", "set xrange [0:*]", "set yrange [0:*]" }
  gp[#gp + 1] = "plot " .. table.concat(plots, ", \\\n     ")
  return render(t, table.concat(lines, "\n") .. "\n", gp)
end

return M
