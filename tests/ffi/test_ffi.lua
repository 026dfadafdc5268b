-- luajit test_ffi.lua CDEF_FILE LIBRARY: cdef the generated header text, load
-- the shared library, call into the core.
local ffi = require "ffi"
local cdef_path, lib_path = arg[1], arg[2]
local f = assert(io.open(cdef_path, "rb"))
local text = f:read("*a")
f:close()
ffi.cdef(text)
local lib = ffi.load(lib_path)

local function check(cond, msg) if not cond then error(msg, 2) end end

local v = ffi.string(lib.hl_version())
check(v:match("^%d+%.%d+%.%d+$"), "version: " .. v)
check(ffi.string(lib.hl_strerror(lib.HL_EINVAL)) == "invalid argument", "strerror")
local extra = io.open((arg[0]:gsub("test_ffi%.lua$", "ffi_core.lua")), "rb")
if extra then
  extra:close()
  dofile((arg[0]:gsub("test_ffi%.lua$", "ffi_core.lua")))(ffi, lib, check)
end
-- the JSON front end and the CSV writer through the FFI (opaque hl_json, plain hl_csv)
do
  local err = ffi.new("hl_err")
  local root = ffi.new("hl_json *[1]")
  local doc = '{"a": [1, "x,y"], "b": true}'
  check(lib.hl_json_parse(doc, #doc, "ffi.json", root, err) == 0, ffi.string(err.msg))
  check(lib.hl_json_kind_of(root[0]) == lib.HL_JSON_OBJECT and lib.hl_json_count(root[0]) == 2, "json object of 2")
  local a = lib.hl_json_first(root[0])
  check(ffi.string(lib.hl_json_key(a)) == "a" and lib.hl_json_count(a) == 2, "member a, 2 elements")
  local s = lib.hl_json_next(lib.hl_json_first(a))
  local csv = ffi.new("hl_csv")
  lib.hl_csv_init(csv)
  lib.hl_csv_text(csv, lib.hl_json_string(s))
  lib.hl_csv_number(csv, lib.hl_json_number(lib.hl_json_first(a)))
  lib.hl_csv_end_row(csv)
  check(ffi.string(csv.text, csv.len) == '"x,y",1\n', "csv row: " .. ffi.string(csv.text, csv.len))
  lib.hl_csv_free(csv)
  lib.hl_json_free(root[0])
  local dup = '{"k": 1, "k": 2}'
  check(lib.hl_json_parse(dup, #dup, "d.json", root, err) == lib.HL_EPARSE
    and ffi.string(err.msg):find("duplicate key 'k'", 1, true), "duplicate key through the FFI")
  -- attack pass: text[0..len) of a longer buffer is one value ("[1]" here; the parser read on
  -- to the NUL and refused "[1]x" before), and stepping past the end gives NULL, not a crash
  local buf = ffi.new("char[4]", "[1]x") -- no NUL at all after the 4 bytes' value "[1]x"
  check(lib.hl_json_parse(buf, 3, "b.json", root, err) == 0, "text[0..3) of a longer buffer: " .. ffi.string(err.msg))
  check(lib.hl_json_count(root[0]) == 1 and lib.hl_json_number(lib.hl_json_first(root[0])) == 1, "[1] read")
  check(lib.hl_json_next(nil) == nil and lib.hl_json_key(nil) == nil, "next and key of NULL are NULL")
  lib.hl_json_free(root[0])
end
print("ffi ok " .. v)
