-- hl.params: a script declares its parameters with defaults and help;
-- `--set name=value` overrides them, `--help` lists them and exits.
local core = require "hbdlab.core"

local M = {}

local function convert(name, default, text)
  local t = type(default)
  if t == "number" then
    local v = tonumber(text)
    if v == nil then error(string.format("--set %s=%s: expected a number", name, text), 0) end
    return v
  elseif t == "boolean" then
    if text == "true" or text == "1" then return true end
    if text == "false" or text == "0" then return false end
    error(string.format("--set %s=%s: expected true or false", name, text), 0)
  elseif t == "table" then -- comma-separated list of the element type of the default
    local out = {}
    for item in text:gmatch("[^,]+") do out[#out + 1] = convert(name, default[1] or "", item) end
    return out
  end
  return text
end

--- hl.params{ name = { default, "help" }, ... } -> table of values.
--- Reads the script's arguments (global `arg`, or the array given as 2nd argument).
function M.params(spec, argv)
  argv = argv or _G.arg or {}
  local values, names = {}, {}
  for name, s in pairs(spec) do
    if type(s) ~= "table" or s[1] == nil then
      error(string.format("hl.params: '%s' must be { default, \"help\" }", tostring(name)), 2)
    end
    values[name] = s[1]
    names[#names + 1] = name
  end
  table.sort(names)
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "--help" or a == "-h" then
      local script = argv[0] or "script.lua"
      print(string.format("usage: hbdlab %s [--set name=value ...]\nParameters:", script))
      for _, n in ipairs(names) do
        local d = spec[n][1]
        local shown = type(d) == "table" and table.concat(d, ",") or tostring(d)
        print(string.format("  %-18s %-14s %s", n, shown, spec[n][2] or ""))
      end
      os.exit(0)
    elseif a == "--set" or a:match("^%-%-set=") then
      local kv = a == "--set" and argv[i + 1] or a:sub(7)
      if a == "--set" then i = i + 1 end
      local k, v = (kv or ""):match("^([%w_%.]+)=(.*)$")
      if not k then error("--set expects name=value, got '" .. tostring(kv) .. "'", 0) end
      if spec[k] == nil then
        local near = core.nearest(k, names)
        error(string.format("--set %s: unknown parameter (known: %s)%s", k, table.concat(names, ", "),
          near and (" - did you mean '" .. near .. "'?") or ""), 0)
      end
      values[k] = convert(k, spec[k][1], v)
    elseif a:match("^%-") then
      -- a mistyped option (--sett) must not be ignored silently: the run would use the defaults
      local near = core.nearest(a:match("^([^=]*)"), { "--set", "--help" })
      error(string.format("unknown option '%s'%s (options: --set name=value, --help)", a,
        near and (" - did you mean '" .. near .. "'?") or ""), 0)
    end
    i = i + 1
  end
  return values
end

return M
