-- Pretty-printing of values for the REPL and reports: nested tables with sorted
-- keys, arrays inline when short, objects through their __tostring, cut at a
-- depth and a width so a huge result never floods the terminal.
local M = {}

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
    if type(v) == "string" then print(v) else print(M.format(v)) end
  end
end

return M
