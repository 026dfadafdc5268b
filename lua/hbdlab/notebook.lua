-- Literate notebooks: a Markdown file whose ```lua blocks run in order in one
-- Lua state; the report keeps the prose, shows each cell's code, its printed
-- output and the figures its plot calls made. Output: self-contained HTML
-- (figures inlined) or Markdown (figures linked).
local core = require "hbdlab.core"
local M = {}

-- ---- parsing -----------------------------------------------------------------
-- A fence line: three or more backticks or tildes, then an info string (for backticks, without a
-- backtick). Returns the fence and the info's first word, or nil. Anchored, single-pass matches
-- only ("^```%s*([%w_+-]*)%s*$" backtracked quadratically on a long run of spaces).
local function fence_open(line)
  local fence = line:match("^(```+)") or line:match("^(~~~+)")
  if not fence then return nil end
  local info = line:sub(#fence + 1)
  if fence:sub(1, 1) == "`" and info:find("`", 1, true) then return nil end
  return fence, info:match("^%s*(%S*)")
end

-- A closing fence for `fence`: the same character, at least as long, then only spaces.
local function fence_closes(line, fence)
  local run = line:match("^(" .. fence:sub(1, 1):rep(3) .. "+)")
  return run ~= nil and #run >= #fence and line:find("^%s*$", #run + 1) ~= nil
end

--- Splits Markdown into { {kind = "prose", text}, {kind = "code", lang, text, line} } (CommonMark
--- fences: ``` or ~~~, three or more, closed by a fence of the same character at least as long).
--- lang is the info string's first word, lower-cased (```Lua runs as lua). A fence never closed
--- gives a cell with unterminated = true (M.main refuses the notebook).
function M.parse(text)
  local cells, prose, code, lang, fence, at = {}, {}, nil, nil, nil, nil
  local n = 0
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do
    n = n + 1
    if code then
      if fence_closes(line, fence) then
        cells[#cells + 1] = { kind = "code", lang = lang, text = table.concat(code, "\n"), line = at }
        code = nil
      else
        code[#code + 1] = line
      end
    else
      local f, info = fence_open(line)
      if f then
        if #prose > 0 then cells[#cells + 1] = { kind = "prose", text = table.concat(prose, "\n") }; prose = {} end
        code, lang, fence, at = {}, info:lower(), f, n
      else
        prose[#prose + 1] = line
      end
    end
  end
  if code then
    cells[#cells + 1] = { kind = "code", lang = lang, text = table.concat(code, "\n"), line = at, unterminated = true }
  end
  if #prose > 0 then cells[#cells + 1] = { kind = "prose", text = table.concat(prose, "\n") } end
  return cells
end

-- ---- HTML helpers --------------------------------------------------------------
local printable
local function esc(s)
  return (printable(s):gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;"):gsub('"', "&quot;"))
end
M.escape = esc

-- A link or image target: relative, or http(s)/mailto; javascript:, data:, vbscript: ... are
-- not emitted (the text stays, the link goes).
local function safe_url(u)
  local scheme = u:match("^([%a][%w+.-]*):")
  if not scheme then return true end
  scheme = scheme:lower()
  return scheme == "http" or scheme == "https" or scheme == "mailto"
end

-- Control bytes (other than tab and newline) become U+FFFD: they are not text, and \1 is the
-- renderer's own placeholder for code spans.
function printable(s)
  return (tostring(s):gsub("[%z\1-\8\11\12\14-\31\127]", "\239\191\189"))
end
M.printable = printable

-- Inline Markdown (code spans, images, links, strong, emphasis) in one left-to-right pass
-- (issue 22: nested gsub patterns took quadratic time, 14 s for a 40 KB line of `[`, and a
-- Ctrl-C waited for the whole gsub). Each search for a closing delimiter is remembered
-- (`next_of`), so a line of n bytes costs O(n) however its brackets fall, and the loop is Lua
-- code, so an interrupt stops it at once. The text of a link, a strong or an emphasis span is
-- scanned in place (a range of the same line, sharing the memo), not as a new string with its
-- own state, and literal text is emitted in runs: 1 MB of dense or nested markup renders in
-- about half a second on a loaded machine (1.2 MB took 1.95 s).

-- st: { s = the line (escaped for HTML), out = pieces, mf = {}, ma = {}, urls = {} }.
-- The first `what` (plain text) at or after `from`, if it is at or before `to`; remembered as
-- "searched from mf[what], found at ma[what]" (false: none after), which answers every later
-- search from a position in between.
local function next_of(st, what, from, to)
  local f, a = st.mf[what]
  if f and from >= f and (not st.ma[what] or from <= st.ma[what]) then
    a = st.ma[what] or nil
  else
    a = st.s:find(what, from, true)
    st.mf[what], st.ma[what] = from, a or false
  end
  if a and a > to then return nil end
  return a
end

-- Where the URL of a link whose text closes at `close` ends (its ")"), or nil: "(" right after
-- "]", then text without white space up to the first ")", within `to`. Remembered per `close`.
local function url_end(st, close, to)
  local q = st.urls[close]
  if q == nil then
    q = false
    if st.s:byte(close + 1) == 40 then -- "("
      local p = next_of(st, ")", close + 2, math.huge)
      if p and p > close + 2 and not st.s:sub(close + 2, p - 1):find("%s") then q = p end
    end
    st.urls[close] = q
  end
  return q and q <= to and q or nil
end

local DELIMS = "[`!%[%*]"

-- Appends the HTML of s[i..to] to st.out.
local function scan_range(st, i, to)
  local s, out = st.s, st.out
  local lit = i -- the literal text not yet emitted starts here
  local function flush(at)
    if at > lit then out[#out + 1] = s:sub(lit, at - 1) end
  end
  while i <= to do
    -- not remembered: a range ends at most two levels inside another (a link's text, a strong or
    -- emphasis span in it), so a search running past `to` is repeated at most twice
    local at = s:find(DELIMS, i)
    if not at or at > to then break end
    local c, resume = s:byte(at), nil
    if c == 96 then -- "`"
      local close = next_of(st, "`", at + 1, to)
      if close and close > at + 1 then
        flush(at)
        out[#out + 1] = "<code>" .. s:sub(at + 1, close - 1) .. "</code>"
        resume = close + 1
      end
    elseif c == 33 or c == 91 then -- "!" or "["
      local open = c == 33 and at + 1 or at
      if open <= to and s:byte(open) == 91 then
        local close = next_of(st, "]", open + 1, to)
        local q = close and (c == 33 or close > open + 1) and url_end(st, close, to)
        if q then
          local url = s:sub(close + 2, q - 1)
          local ok = safe_url(url)
          flush(at)
          if c == 33 then
            local text = s:sub(open + 1, close - 1)
            out[#out + 1] = ok and ('<img alt="' .. text .. '" src="' .. url .. '">') or text
          else
            if ok then out[#out + 1] = '<a href="' .. url .. '">' end
            scan_range(st, open + 1, close - 1)
            if ok then out[#out + 1] = "</a>" end
          end
          resume = q + 1
        end
      end
    elseif at + 1 <= to and s:byte(at + 1) == 42 then -- "**text**": text without a star
      local close = next_of(st, "*", at + 2, to)
      if close and close > at + 2 and close + 1 <= to and s:byte(close + 1) == 42 then
        flush(at)
        out[#out + 1] = "<strong>"
        scan_range(st, at + 2, close - 1)
        out[#out + 1] = "</strong>"
        resume = close + 2
      end
    else -- "*text*": text without a star, not starting with a space
      local star = next_of(st, "*", at + 1, to)
      if star and not s:sub(at + 1, at + 1):find("%s") then
        flush(at)
        out[#out + 1] = "<em>"
        scan_range(st, at + 1, star - 1)
        out[#out + 1] = "</em>"
        resume = star + 1
      end
    end
    if resume then lit, i = resume, resume else i = at + 1 end -- else the delimiter stays literal
  end
  flush(to + 1)
end

-- s: text already escaped for HTML
local function scan(s)
  local st = { s = s, out = {}, mf = {}, ma = {}, urls = {} }
  scan_range(st, 1, #s)
  return table.concat(st.out)
end
local function inline(s) return scan(esc(printable(s))) end

local function table_row(line)
  local cells = {}
  local body = line:gsub("^%s*|", ""):gsub("|%s*$", "")
  -- trimmed without "^%s*(.-)%s*$", which is quadratic in a run of spaces
  for c in (body .. "|"):gmatch("([^|]*)|") do cells[#cells + 1] = c:match("^%s*(.*%S)") or "" end
  return cells
end

--- A small Markdown-to-HTML converter: headings, paragraphs, lists, block
--- quotes, pipe tables, inline code, emphasis, links and images.
function M.markdown_html(text)
  local out, para, list, item = {}, {}, nil, nil
  local lines = {}
  for l in (text .. "\n"):gmatch("(.-)\r?\n") do lines[#lines + 1] = l end
  -- a list item's parts (its line, then continuation lines) are joined when it ends: appending
  -- to the item already written copied it once per line (quadratic)
  local function end_item()
    if item then out[#out + 1] = "<li>" .. table.concat(item, " ") .. "</li>"; item = nil end
  end
  local function end_list()
    end_item()
    if list then out[#out + 1] = "</" .. list .. ">"; list = nil end
  end
  local function flush()
    if #para > 0 then out[#out + 1] = "<p>" .. inline(table.concat(para, " ")) .. "</p>"; para = {} end
    end_list()
  end
  local i = 1
  while i <= #lines do
    local l = lines[i]
    local hashes, title = l:match("^(#+)%s+(.*)$")
    if hashes and #hashes <= 6 then
      flush()
      out[#out + 1] = string.format("<h%d>%s</h%d>", #hashes, inline(title), #hashes)
    elseif l:match("^%s*|") and lines[i + 1] and lines[i + 1]:match("^%s*|[%s:|-]+$") then
      flush()
      local head = table_row(l)
      local head_cells = {}
      for k, c in ipairs(head) do head_cells[k] = inline(c) end
      local rows = { "<table><thead><tr><th>" .. table.concat(head_cells, "</th><th>") .. "</th></tr></thead><tbody>" }
      i = i + 2
      while i <= #lines and lines[i]:match("^%s*|") do
        local cells = table_row(lines[i])
        local t = {}
        for k, c in ipairs(cells) do t[k] = inline(c) end
        rows[#rows + 1] = "<tr><td>" .. table.concat(t, "</td><td>") .. "</td></tr>"
        i = i + 1
      end
      out[#out + 1] = table.concat(rows, "\n") .. "</tbody></table>"
      i = i - 1
    elseif l:match("^%s*[-*]%s+") or l:match("^%s*%d+[.)]%s+") then
      local kind = l:match("^%s*[-*]%s+") and "ul" or "ol"
      if #para > 0 then out[#out + 1] = "<p>" .. inline(table.concat(para, " ")) .. "</p>"; para = {} end
      end_item()
      if list ~= kind then
        end_list()
        out[#out + 1] = "<" .. kind .. ">"
        list = kind
      end
      item = { inline(l:gsub("^%s*[-*]%s+", ""):gsub("^%s*%d+[.)]%s+", "")) }
    elseif l:match("^>%s?") then
      flush()
      out[#out + 1] = "<blockquote>" .. inline(l:gsub("^>%s?", "")) .. "</blockquote>"
    elseif l:match("^%s*$") then
      flush()
    elseif item and l:match("^%s+%S") then
      item[#item + 1] = inline(l:match("^%s*(.*)$"))
    else
      end_list()
      para[#para + 1] = l
    end
    i = i + 1
  end
  flush()
  return table.concat(out, "\n")
end

local b64chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
function M.base64(data)
  local out = {}
  for i = 1, #data, 3 do
    local a, b, c = data:byte(i, i + 2)
    local n = a * 65536 + (b or 0) * 256 + (c or 0)
    local c1, c2, c3, c4 = n >> 18 & 63, n >> 12 & 63, n >> 6 & 63, n & 63
    out[#out + 1] = b64chars:sub(c1 + 1, c1 + 1) .. b64chars:sub(c2 + 1, c2 + 1) ..
      (b and b64chars:sub(c3 + 1, c3 + 1) or "=") .. (c and b64chars:sub(c4 + 1, c4 + 1) or "=")
  end
  return table.concat(out)
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local d = f:read("a")
  f:close()
  return d
end

-- ---- running -------------------------------------------------------------------
--- Runs the code cells of a parsed notebook in one environment. Returns the
--- cells annotated with output, figures, ok and error, and the failure count.
function M.run(cells, opts)
  opts = opts or {}
  local plot = require "hbdlab.plot"
  local env = setmetatable({}, { __index = _G })
  env._ENV = env
  local failures = 0
  for _, c in ipairs(cells) do
    if c.kind == "code" and (c.lang == "lua" or c.lang == "") and not (failures > 0 and not opts.keep_going) then
      local chunks = {}
      local old_print, old_write = print, io.write
      local function capture(...)
        local n = select("#", ...)
        local parts = {}
        for k = 1, n do parts[k] = tostring((select(k, ...))) end
        chunks[#chunks + 1] = table.concat(parts, "\t") .. "\n"
      end
      _G.print = capture
      env.print = capture
      io.write = function(...)
        for k = 1, select("#", ...) do chunks[#chunks + 1] = tostring((select(k, ...))) end
        return io.stdout
      end
      local before = #plot.made
      c.warnings = {}
      require("hbdlab.warn").sink = function(msg) c.warnings[#c.warnings + 1] = msg end
      local fn, lerr = load(c.text, "=" .. (opts.name or "notebook") .. ":cell" .. (c.index or "?"), "t", env)
      local ok, err
      -- os.exit in a cell ends that cell, not the run: the report is still written, the cell marked
      local exit_mark = {}
      local old_exit = os.exit
      os.exit = function(code) error(setmetatable({ code = code }, exit_mark), 0) end
      if fn then
        ok, err = xpcall(fn, function(e)
          if getmetatable(e) == exit_mark then return e end
          return debug.traceback(e)
        end)
      else
        ok, err = false, lerr
      end
      os.exit = old_exit
      if not ok and getmetatable(err) == exit_mark then
        local code = err.code
        err = string.format("the cell called os.exit(%s); the cells after it did not run", tostring(code == nil and "" or code))
        c.exited = true
      end
      _G.print, io.write = old_print, old_write
      require("hbdlab.warn").sink = nil
      env.print = nil
      c.ran = true
      c.output = table.concat(chunks)
      c.figures = {}
      for k = before + 1, #plot.made do c.figures[#c.figures + 1] = plot.made[k] end
      c.ok = ok
      if not ok then
        -- an error object whose __tostring raises (or returns no string) must not stop the report
        local shown, text = pcall(tostring, err)
        c.error = shown and type(text) == "string" and text
          or string.format("(an error object of type %s that cannot be shown: its __tostring %s)", type(err),
            shown and "returned no string" or "raised: " .. (type(text) == "string" and text or type(text)))
        failures = failures + 1
      end
      if c.exited then break end
    end
  end
  return cells, failures
end

local CSS = [[
body { font-family: 'Liberation Sans', Arial, sans-serif; max-width: 980px; margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.5; }
pre { background: #f6f8fa; padding: 0.8em; overflow-x: auto; border-radius: 4px; font-size: 0.88em; }
pre.output { background: #fff; border-left: 3px solid #1f77b4; }
pre.warning { background: #fffbea; border-left: 3px solid #d4a017; color: #6b5200; white-space: pre-wrap; }
pre.error { background: #fff5f5; border-left: 3px solid #d62728; color: #a00; }
code { font-family: 'DejaVu Sans Mono', monospace; }
table { border-collapse: collapse; margin: 1em 0; } th, td { border: 1px solid #ccc; padding: 0.3em 0.7em; }
th { background: #f0f0f0; } img.figure { max-width: 100%; display: block; margin: 1em auto; }
.cell-failed { color: #d62728; font-weight: bold; }
]]

--- Renders the run cells as a self-contained HTML page.
function M.html(cells, title)
  local out = { "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
    "<title>" .. esc(title or "hbdlab report") .. "</title><style>" .. CSS .. "</style></head><body>" }
  local nfig = 0
  for _, c in ipairs(cells) do
    if c.kind == "prose" then
      out[#out + 1] = M.markdown_html(c.text)
    else
      out[#out + 1] = '<pre class="code"><code>' .. esc(c.text) .. "</code></pre>"
      if c.output and c.output ~= "" then out[#out + 1] = '<pre class="output">' .. esc(c.output) .. "</pre>" end
      for _, w in ipairs(c.warnings or {}) do out[#out + 1] = '<pre class="warning">warning: ' .. esc(w) .. "</pre>" end
      for _, f in ipairs(c.figures or {}) do
        local data = read_file(f)
        if data then
          nfig = nfig + 1
          local mime = f:match("%.svg$") and "image/svg+xml" or f:match("%.pdf$") and "application/pdf" or "image/png"
          if f:match("%.html$") then -- an hl.walkthrough page: its own document, scripts kept inside the frame
            out[#out + 1] = '<iframe class="page" sandbox="allow-scripts" title="' .. esc(f) .. '" srcdoc="' ..
              esc(data) .. '" style="width:100%;height:1150px;border:1px solid #ccc"></iframe>'
          elseif mime == "application/pdf" then
            out[#out + 1] = '<p><a href="' .. esc(f) .. '">figure: ' .. esc(f) .. "</a></p>"
          else
            out[#out + 1] = string.format('<img class="figure" alt="%s" src="data:%s;base64,%s">', esc(f), mime, M.base64(data))
          end
        end
      end
      if c.error then
        out[#out + 1] = '<p class="cell-failed">This cell failed:</p><pre class="error">' .. esc(c.error) .. "</pre>"
      end
    end
  end
  -- A load check the test reads through --dump-dom: how many figures decoded.
  out[#out + 1] = string.format([[<script>window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.figure'), ok = 0;
  imgs.forEach(function (i) { if (i.complete && i.naturalWidth > 0) ok++; });
  document.body.setAttribute('data-figures', imgs.length); document.body.setAttribute('data-figures-loaded', ok);
});</script>]])
  out[#out + 1] = "</body></html>"
  return table.concat(out, "\n"), nfig
end

--- Renders the run cells as Markdown (figures linked by path).
-- A fenced block that its content cannot close: the fence is longer than any run of
-- backticks (or tildes) inside (CommonMark), so output cannot break out into raw HTML.
local function fenced(lang, text)
  local run = 2
  for r in text:gmatch("`+") do if #r > run then run = #r end end
  local fence = string.rep("`", run + 1)
  return fence .. (lang or "") .. "\n" .. text .. "\n" .. fence
end

-- A path as a Markdown link target: characters that would end it are percent-encoded.
local function md_target(f)
  return (f:gsub("[%s()<>%[%]]", function(c) return string.format("%%%02X", c:byte()) end))
end

function M.markdown(cells)
  local out = {}
  for _, c in ipairs(cells) do
    if c.kind == "prose" then
      out[#out + 1] = printable(c.text)
    else
      out[#out + 1] = fenced(c.lang, printable(c.text))
      if c.output and c.output ~= "" then out[#out + 1] = fenced("text", printable(c.output:gsub("\n$", ""))) end
      for _, w in ipairs(c.warnings or {}) do out[#out + 1] = "> **warning:** " .. printable(w):gsub("[\n<>]", " ") end
      for _, f in ipairs(c.figures or {}) do
        local bang = f:match("%.html$") and "" or "!" -- a page is linked, not shown as an image
        out[#out + 1] = bang .. "[" .. printable(f):gsub("[%[%]]", "") .. "](" .. md_target(f) .. ")"
      end
      if c.error then out[#out + 1] = "**This cell failed:**\n\n" .. fenced("text", printable(c.error)) end
    end
  end
  return table.concat(out, "\n") .. "\n"
end

--- hbdlab notebook FILE.md [-o OUT.html|.md] [--keep-going]
function M.main(...)
  local args = { ... }
  local input, output, keep = nil, nil, false
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "-o" then
      output = args[i + 1]
      i = i + 1
      -- "-o" last wrote FILE.html as if no -o were given; "-o r.txt" wrote an HTML page to r.txt
      if output == nil or not (output:match("%.html$") or output:match("%.md$")) then
        io.stderr:write("notebook: -o ", output and ("'" .. output .. "'") or "needs a file name",
          output and " is not a report name (REPORT.html or REPORT.md)" or " (REPORT.html or REPORT.md)", "\n")
        return 2
      end
    elseif a == "--keep-going" then keep = true
    elseif a == "-h" or a == "--help" then
      print("usage: hbdlab notebook FILE.md [-o REPORT.html|REPORT.md] [--keep-going]")
      return 0
    elseif not input then input = a
    else io.stderr:write("notebook: unexpected argument '", a, "'\n"); return 2 end
    i = i + 1
  end
  if not input then io.stderr:write("usage: hbdlab notebook FILE.md [-o REPORT.html|REPORT.md] [--keep-going]\n"); return 2 end
  local d = core.dist()
  if d.count > 1 and not d.mpi then -- a shard would render its block of every sweep and exit 0
    io.stderr:write("notebook: a notebook renders whole sweeps; it cannot run as one shard (--shard ",
      d.index, "/", d.count, ")\n")
    return 2
  end
  local ok_read, text = pcall(core.read_file, input) -- a regular file within the input limit
  if not ok_read then io.stderr:write("notebook: cannot read ", tostring(text), "\n"); return 1 end
  output = output or input:gsub("%.md$", "") .. ".html"
  if output == input or core.same_file(output, input) then
    io.stderr:write("notebook: the report ", output, " would overwrite the notebook ", input, "; choose another -o\n")
    return 2
  end
  local cells = M.parse(text)
  for _, c in ipairs(cells) do -- the rest of the notebook would be one cell, silently
    if c.unterminated then
      io.stderr:write(string.format("notebook: %s:%d: the code fence opened here is never closed (no cell ran)\n",
        input, c.line))
      return 1
    end
  end
  local n = 0
  for _, c in ipairs(cells) do if c.kind == "code" then n = n + 1; c.index = n end end
  local _, failures = M.run(cells, { keep_going = keep, name = input:match("[^/]*$") })
  local title = text:match("^#%s+([^\n]+)") or input
  local body = output:match("%.md$") and M.markdown(cells) or M.html(cells, title)
  require("hbdlab.rows").write_atomic(output, body)
  local ran = 0
  for _, c in ipairs(cells) do if c.ran then ran = ran + 1 end end
  io.stderr:write(string.format("notebook: %d of %d cells ran, %d failed -> %s\n", ran, n, failures, output))
  for _, c in ipairs(cells) do
    if c.error then io.stderr:write("cell ", c.index, " failed:\n", c.error, "\n") end
  end
  return (failures > 0 and not keep) and 1 or 0
end

return M
