-- Pretty-printing of values for the REPL and reports: nested tables with sorted
-- keys, arrays inline when short, objects through their __tostring, cut at a
-- depth and a width so a huge result never floods the terminal.
local M = {}

--- s with every byte a terminal acts on shown as an escape: C0 control bytes but tab and line
--- feed, DEL, and C1 controls (U+0080..U+009F in UTF-8, and a lone 0x9B, CSI on 8-bit terminals)
--- become \ddd. A name holding "\27[2J" (clear the screen) or "\27]0;title\7" is printed as
--- text. Returns s itself when there is nothing to escape.
function M.terminal(s)
  if not s:find("[%z\1-\8\11-\31\127\155\194]") then return s end
  s = s:gsub("[%z\1-\8\11-\31\127]", function(c) return "\\" .. c:byte() end)
  s = s:gsub("\194([\128-\159])", function(c) return "\\194\\" .. c:byte() end)
  -- a lone 0x9B (not the second byte of a UTF-8 sequence: the C2 case above is already escaped)
  s = s:gsub("()\155", function(at)
    local prev = at > 1 and s:byte(at - 1) or 0
    return prev >= 0x80 and "\155" or "\\155"
  end)
  return s
end

--- A value as an error message names it: tostring, but NaN as "nan" whatever its sign bit (Lua's
--- tostring(0/0) is "-nan" on x86), as the core's messages print it.
function M.num_text(v)
  if v ~= v then return "nan" end
  local t = type(v) -- a table or function by its kind, not its address ("table: 0x55aa...")
  if t == "table" or t == "function" or t == "thread" then return "a " .. t end
  return tostring(v)
end

local MAX_DEPTH = 4
local MAX_ITEMS = 40

local function is_identifier(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil
end

local function format_number(v)
  if math.type(v) == "integer" then return tostring(v) end
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" elseif v == -math.huge then return "-inf" end
  if v == math.floor(v) and math.abs(v) < 1e15 then return string.format("%.1f", v) end
  return string.format("%.6g", v)
end

local function key_order(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then return ta == "number" end
  if ta == "number" or ta == "string" then return a < b end
  return tostring(a) < tostring(b)
end

local function has_tostring(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__tostring ~= nil
end

local format

local function format_table(t, depth, indent, seen)
  if seen[t] then return "<cycle>" end
  if depth >= MAX_DEPTH then return "{...}" end
  seen[t] = true
  local n = #t
  local keys = {}
  for k in pairs(t) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = k end
  end
  table.sort(keys, key_order)
  local parts, total = {}, 0
  for i = 1, n do
    total = total + 1
    if total > MAX_ITEMS then parts[#parts + 1] = "... (" .. (n - i + 1 + #keys) .. " more)"; break end
    parts[#parts + 1] = format(t[i], depth + 1, indent .. "  ", seen)
  end
  if total <= MAX_ITEMS then
    for i, k in ipairs(keys) do
      total = total + 1
      if total > MAX_ITEMS then parts[#parts + 1] = "... (" .. (#keys - i + 1) .. " more)"; break end
      local ks = is_identifier(k) and k or ("[" .. format(k, MAX_DEPTH, "", seen) .. "]")
      parts[#parts + 1] = ks .. " = " .. format(t[k], depth + 1, indent .. "  ", seen)
    end
  end
  seen[t] = nil
  if #parts == 0 then return "{}" end
  local flat = "{ " .. table.concat(parts, ", ") .. " }"
  if #flat <= 78 - #indent and not flat:find("\n") then return flat end
  return "{\n" .. indent .. "  " .. table.concat(parts, ",\n" .. indent .. "  ") .. "\n" .. indent .. "}"
end

format = function(v, depth, indent, seen)
  local tv = type(v)
  if tv == "string" then return string.format("%q", v) end
  if tv == "number" then return format_number(v) end
  if tv == "table" and not has_tostring(v) then return format_table(v, depth, indent, seen) end
  -- a sweep row (a view over the C sweep's points, lua/bind/l_sweep_rows.c) reads as its table
  if tv == "userdata" and require("hbdlab.core").is_sweep_row(v) then return format_table(v, depth, indent, seen) end
  return tostring(v)
end

--- Returns a readable multi-line rendering of v.
function M.format(v)
  return format(v, 0, "", {})
end

--- Prints each argument on its own line (the REPL's result printer).
function M.print(...)
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    -- a string result is shown as text: a control sequence in it is escaped, not run
    if type(v) == "string" then print(M.terminal(v)) else print(M.terminal(M.format(v))) end
  end
end

return M
