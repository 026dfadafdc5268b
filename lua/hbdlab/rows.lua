-- hl.rows: helpers for arrays of flat tables (sweep results): filter, sort,
-- group, pivot, aligned printing, and CSV / JSON / JSON Lines files written
-- atomically (temp file + rename) and read back to the same rows.
local core = require "hbdlab.core"

local M = {}

-- The axis names of rows a sweep returned (weak keys: a side table, so rows stay plain arrays).
M.axes_of = setmetatable({}, { __mode = "k" })
-- The block of its sweep a sweep's rows are, { lo, hi, total [, filtered = true] } (0-based,
-- [lo, hi) of total points): in a sharded run (--shard I/N) it goes into the fingerprint line
-- of the CSV file (core.shard_line), which `hbdlab merge` checks.
M.block_of = setmetatable({}, { __mode = "k" })
-- Rows of a simulate sweep (hl.sweep with base/axes): their files carry every result
-- field and the `error` column whatever the data (a shard without failing points
-- has the same columns as one with them, so `hbdlab merge` joins them).
M.result_rows = setmetatable({}, { __mode = "k" })

function M.filter(rows, pred)
  local out = {}
  if type(pred) == "table" then
    local want = pred
    pred = function(r) for k, v in pairs(want) do if r[k] ~= v then return false end end return true end
  end
  for _, r in ipairs(rows) do if pred(r) then out[#out + 1] = r end end
  M.axes_of[out] = M.axes_of[rows]
  local b = M.block_of[rows]
  if b then M.block_of[out] = { b[1], b[2], b[3], filtered = true } end
  M.result_rows[out] = M.result_rows[rows]
  return out
end

--- sort(rows, "key") ascending, sort(rows, "-key") descending, or sort(rows, less_fn). Returns a new array.
function M.sort(rows, by)
  local out = {} -- copied in a loop: table.unpack refuses arrays of more than ~1M (a sweep's 10M rows)
  for i = 1, #rows do out[i] = rows[i] end
  M.axes_of[out] = M.axes_of[rows]
  M.result_rows[out] = M.result_rows[rows]
  if type(by) == "function" then
    table.sort(out, by)
  else
    local desc = by:sub(1, 1) == "-"
    local key = desc and by:sub(2) or by
    table.sort(out, function(a, b)
      local x, y = a[key], b[key]
      if x == nil then return false elseif y == nil then return true end
      if type(x) ~= type(y) then x, y = tostring(x), tostring(y) end
      if desc then return x > y else return x < y end
    end)
  end
  return out
end

--- group(rows, "key") -> { [value] = rows }, plus the values in first-seen order as second result.
function M.group(rows, key)
  local groups, order = {}, {}
  for _, r in ipairs(rows) do
    local v = r[key]
    if groups[v] == nil then groups[v] = {}; order[#order + 1] = v end
    local g = groups[v]
    g[#g + 1] = r
  end
  return groups, order
end

--- pivot(rows, row_key, col_key, value_key) -> rows with one row per row_key value and a column per col_key value.
function M.pivot(rows, rk, ck, vk)
  local out, index, cols, seen = {}, {}, {}, {}
  for _, r in ipairs(rows) do
    local rv, cv = r[rk], tostring(r[ck])
    if not index[rv] then index[rv] = { [rk] = rv }; out[#out + 1] = index[rv] end
    index[rv][cv] = r[vk]
    if not seen[cv] then seen[cv] = true; cols[#cols + 1] = cv end
  end
  return out, cols
end

-- Rank of each result field in the result table's order (ttft_s, tpot_s, ...).
local result_rank
local function rank_of(k)
  if not result_rank then
    result_rank = {}
    for i, f in ipairs(core.result_fields()) do result_rank[f.name] = i end
  end
  return result_rank[k]
end

--- The columns of rows: the sweep's axes first (kept by filter and sort), then
--- other inputs (names that are not result fields) sorted, then result fields in the
--- result table's order, `error` last.
function M.columns(rows, cols, whole_schema)
  if cols then
    -- a list of names: {columns = {"a"}} (an options table) or {} wrote a CSV of no columns, a
    -- file of empty lines, without a word (attack pass 5)
    if type(cols) ~= "table" then error("columns: expected a list of column names, got " .. type(cols), 0) end
    if core.check_list(cols, "columns") == 0 then
      error("columns: an empty list (give the names of the columns to write, or leave it out for every column)", 0)
    end
    return cols
  end
  local list = core.rows_keys(rows) -- every row's keys in pairs() order, once (sweep views read in C)
  local set = {}
  for _, k in ipairs(list) do set[k] = true end
  if whole_schema then -- every result field, its friendly aliases and `error`, whatever the data
    for _, f in ipairs(core.result_fields()) do
      if not set[f.name] then set[f.name] = true; list[#list + 1] = f.name end
    end
    if not set.error then set.error = true; list[#list + 1] = "error" end
  end
  local axis = {}
  for i, a in ipairs(M.axes_of[rows] or {}) do axis[a] = i end
  local function class(k)
    if axis[k] then return 0, axis[k] end
    if k == "error" then return 3, 0 end
    local rk = rank_of(k)
    if rk then return 2, rk end
    return 1, 0
  end
  table.sort(list, function(a, b)
    local ca, ra = class(a)
    local cb, rb = class(b)
    if ca ~= cb then return ca < cb end
    if ra ~= rb then return ra < rb end
    return tostring(a) < tostring(b)
  end)
  return list
end

local function cell(v)
  if v == nil then return "" end
  if type(v) == "number" then
    if math.type(v) == "integer" or (v == math.floor(v) and math.abs(v) < 1e15) then return string.format("%d", v) end
    return string.format("%.6g", v)
  end
  return require("hbdlab.pretty").terminal(tostring(v)) -- a cell's control bytes are shown, not run
end

-- s padded with spaces to w bytes, on the left when `right` (string.format's "%-99s" refuses
-- widths of 100 and more: an error row's message is wider)
local function pad(s, w, right)
  local n = w - #s
  if n <= 0 then return s end
  return right and (string.rep(" ", n) .. s) or (s .. string.rep(" ", n))
end

--- Returns an aligned text table (numbers right-aligned); print(rows, cols) prints it.
function M.format(rows, cols)
  cols = M.columns(rows, cols)
  local widths, cells, names = {}, {}, {}
  for j, c in ipairs(cols) do -- a key that is no string (row[1] = x, row[print] = 1) is named by tostring
    names[j] = require("hbdlab.pretty").terminal(type(c) == "string" and c or tostring(c))
    widths[j] = #names[j]
  end
  for i, r in ipairs(rows) do
    cells[i] = {}
    for j, c in ipairs(cols) do
      local s = cell(r[c])
      cells[i][j] = s
      if #s > widths[j] then widths[j] = #s end
    end
  end
  local lines = {}
  local head, rule = {}, {}
  for j, c in ipairs(cols) do
    head[j] = pad(names[j], widths[j])
    rule[j] = string.rep("-", widths[j])
  end
  lines[1] = table.concat(head, "  ")
  lines[2] = table.concat(rule, "  ")
  for i, r in ipairs(rows) do
    local parts = {}
    for j, c in ipairs(cols) do
      parts[j] = pad(cells[i][j], widths[j], type(r[c]) == "number")
    end
    lines[#lines + 1] = table.concat(parts, "  ")
  end
  return table.concat(lines, "\n")
end

function M.print(rows, cols) print(M.format(rows, cols)) end

--- Creates a folder and its parents (core.mkdir_p: mkdir(2) per missing component, no process).
function M.ensure_dir(dir)
  if dir == nil or dir == "" or dir == "." then return end
  local ok, msg = core.mkdir_p(dir)
  if not ok then error("cannot create folder " .. dir .. ": " .. tostring(msg), 3) end
end

--- Writes text to path atomically: a temp file in the same folder (mkstemp), then rename;
--- on any failure (full disk, file size limit) the old file stays and no temp file is left.
--- The folder is created when missing.
function M.write_atomic(path, text)
  local d = core.dist()
  if d.mpi and d.index > 0 then return path end -- under MPI every rank has every row; rank 0 writes
  -- a name that is a folder's ("out/", "x.md./") is refused by core.write_atomic: no folder is made for it
  if not path:match("/%.?%.?$") then M.ensure_dir(path:match("^(.*)/[^/]*$")) end
  -- a mkstemp temp file beside path, renamed over it when complete (core.write_atomic, l_files.c)
  -- in a sharded run the file is the shard's own (_shardIofN before the extension)
  local ok, written = pcall(core.write_atomic, path, text)
  if not ok then error(written, 3) end
  return written
end

--- CSV text of rows: a header of cols, one line per row (the core's CSV writer, hbdlab/csv.h,
--- also hl.sweep_to_csv's: RFC 4180 quoting, integers in full, other numbers the shortest decimal
--- that reads back to the same double).
function M.to_csv(rows, cols) return core.to_csv(rows, M.columns(rows, cols, M.result_rows[rows])) end

--- The path a CSV of a sharded run (--shard I/N) goes to: _shardIofN before the extension
--- (core.shard_path, the name hl.sweep_to_csv uses too).
function M.shard_path(path) return core.shard_path(path) end

--- In a sharded run the file starts with a fingerprint line (core.shard_line: the run, the
--- shard, the block of the sweep the rows are, the file's name) that `hbdlab merge` checks
--- and drops, so the merged file is the single run's.
function M.write_csv(rows, path, cols)
  local b = M.block_of[rows]
  local line = b and core.shard_line(path, b[1], b[2], b[3], b.filtered) or core.shard_line(path)
  return M.write_atomic(path, line .. M.to_csv(rows, cols))
end

--- The fingerprint line of a shard's CSV text, parsed: { index, count, run, lo, hi, total,
--- filtered, file, len = bytes of the line }, or nil when text has none.
function M.shard_fingerprint(text)
  if text:sub(1, 14) ~= "#hbdlab-shard " then return nil end
  local line = text:match("^[^\n]*\n")
  if not line then return nil end
  local i, n, run, rows, file = line:match("^#hbdlab%-shard (%d+)/(%d+) run=(%x+) rows=(%S+) file=(%S+)\n$")
  if not i then return nil end
  local f = { index = tonumber(i), count = tonumber(n), run = run, file = file, len = #line }
  if rows ~= "-" then
    local lo, hi, total, filtered = rows:match("^(%d+)%-(%d+)/(%d+)(f?)$")
    if not lo then return nil end
    f.lo, f.hi, f.total, f.filtered = tonumber(lo), tonumber(hi), tonumber(total), filtered == "f"
  end
  return f
end

-- Parses CSV text (RFC 4180 quoting); numbers and true/false come back typed. A leading
-- UTF-8 byte-order mark (spreadsheets write one) is skipped: it is not part of the first name.
function M.parse_csv(text)
  if text:sub(1, 3) == "\239\187\191" then text = text:sub(4) end
  local records, field, record, i, n = {}, {}, {}, 1, #text
  local text_cells = {} -- [record] = { [column] = true }: cells read back from "'..." stay text
  local function push_field()
    local s = table.concat(field)
    -- "'=x" is how the writer escapes a cell a spreadsheet would run (core/src/csv.c): read back "=x"
    if s:find("^'[=+%-@\t\r']") then
      s = s:sub(2)
      text_cells[record] = text_cells[record] or {}
      text_cells[record][#record + 1] = true
    end
    record[#record + 1] = s
    field = {}
  end
  local function push_record() push_field(); records[#records + 1] = record; record = {} end
  local quoted = false
  while i <= n do
    local ch = text:sub(i, i)
    if quoted then
      if ch == '"' then
        if text:sub(i + 1, i + 1) == '"' then field[#field + 1] = '"'; i = i + 1 else quoted = false end
      else
        field[#field + 1] = ch
      end
    elseif ch == '"' then quoted = true
    elseif ch == "," then push_field()
    elseif ch == "\n" then push_record()
    elseif ch ~= "\r" then field[#field + 1] = ch
    end
    i = i + 1
  end
  if #field > 0 or #record > 0 then push_record() end
  local head = table.remove(records, 1) or {}
  local rows = {}
  for _, rec in ipairs(records) do
    local r = {}
    local as_text = text_cells[rec] or {}
    for j, c in ipairs(head) do
      local s = rec[j]
      if as_text[j] then r[c] = s -- "+1" written as text is text
      elseif s ~= nil and s ~= "" then
        local num = tonumber(s)
        if num ~= nil and s:match("^[%d%.%-+eE]+$") then
          r[c] = math.type(num) == "float" and num == math.floor(num) and math.abs(num) < 2^53 and s:find("[.eE]") == nil
            and math.tointeger(num) or num
        elseif s == "true" then r[c] = true
        elseif s == "false" then r[c] = false
        else r[c] = s end
      end
    end
    rows[#rows + 1] = r
  end
  return rows, head
end

local function read_file(path)
  local ok, t = pcall(core.read_file, path) -- a regular text file within the input limit
  if not ok then error("cannot read " .. tostring(t), 3) end
  return t
end

--- Where the first record (the header) of CSV text (RFC 4180) ends when the text is whole:
--- every quoted cell closed, no record wider than the header; when strict (shards given to
--- `hbdlab merge`) every record exactly as wide and the last one ended by a line end. Else
--- nil and what is wrong, with its line number. Second result: the number of records after the header.
function M.csv_check(text, strict)
  local line, cells, want, head_end, i, ends = 1, 1, nil, nil, 1, 0
  while true do
    local at = text:find('[",\n]', i)
    if not at then break end
    local ch = text:sub(at, at)
    if ch == '"' then -- a quoted cell: to its closing quote ("" is a quote inside)
      local q, doubled = at
      repeat
        q = text:find('"', q + 1, true)
        if not q then return nil, string.format("line %d: a quoted cell is not closed", line) end
        doubled = text:sub(q + 1, q + 1) == '"'
        if doubled then q = q + 1 end
      until not doubled
      line = line + select(2, text:sub(at, q):gsub("\n", ""))
      at = q
    elseif ch == "," then cells = cells + 1
    else
      want, head_end = want or cells, head_end or at
      if cells > want or strict and cells ~= want then
        return nil, string.format("line %d has %d cells, the header %d", line, cells, want)
      end
      cells, line, ends = 1, line + 1, ends + 1
    end
    i = at + 1
  end
  if strict and not head_end then return nil, "no header line" end
  if strict and text:sub(-1) ~= "\n" then return nil, string.format("line %d is cut short (no line end)", line) end
  if want and cells > want then return nil, string.format("line %d has %d cells, the header %d", line, cells, want) end
  -- records after the header: every line end counted (strict: the last record has one)
  return head_end or #text, head_end and ends - 1 + (text:sub(-1) ~= "\n" and 1 or 0) or 0
end

function M.read_csv(path)
  local text = read_file(path)
  local fp = M.shard_fingerprint(text) -- a shard's file reads as its rows
  if fp then text = text:sub(fp.len + 1) end
  local ok, why = M.csv_check(text)
  if not ok then error(path .. ": " .. why, 2) end
  return M.parse_csv(text)
end

function M.write_json(rows, path) return M.write_atomic(path, core.json_encode(rows, true) .. "\n") end
function M.read_json(path) return core.json_decode(read_file(path), path) end

function M.write_jsonl(rows, path)
  local lines = {}
  for i, r in ipairs(rows) do lines[i] = core.json_encode(r) end
  return M.write_atomic(path, table.concat(lines, "\n") .. (#lines > 0 and "\n" or ""))
end

function M.read_jsonl(path)
  local rows, n = {}, 0
  for line in read_file(path):gmatch("[^\n]+") do
    n = n + 1
    rows[#rows + 1] = core.json_decode(line, path .. ":" .. n)
  end
  return rows
end

--- write(rows, path): format from the extension (.csv, .json, .jsonl).
function M.write(rows, path, cols)
  if path:match("%.csv$") then return M.write_csv(rows, path, cols) end
  if path:match("%.jsonl$") then return M.write_jsonl(rows, path) end
  if path:match("%.json$") then return M.write_json(rows, path) end
  error("rows.write: '" .. path .. "' must end in .csv, .json or .jsonl", 2)
end

return M
