# LuaJIT FFI: the generated cdef (from the real headers) parses and libhbdlab
# can be called through it.
. "$(dirname "$0")/lib.sh"
command -v luajit >/dev/null || { echo "luajit is required"; exit 1; }
out=$(LD_PRELOAD="${HBDLAB_PRELOAD:-}" luajit "$HBDLAB_SOURCE_DIR/tests/ffi/test_ffi.lua" "$HBDLAB_BUILD_DIR/hbdlab_cdef.h" "$HBDLAB_BUILD_DIR/libhbdlab.so" 2>&1)
echo "$out"
check "luajit FFI calls libhbdlab" contains "$out" "ffi ok"
check "a whole simulation runs through the FFI" contains "$out" "ffi sim: TPOT"
finish
