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
print("ffi ok " .. v)
