# The bindings as a Lua C module: a stock lua5.4 can require "hbdlab".
. "$(dirname "$0")/lib.sh"
command -v lua5.4 >/dev/null || { echo "lua5.4 is required"; exit 1; }
out=$(LD_PRELOAD="${HBDLAB_PRELOAD:-}" LUA_CPATH="$HBDLAB_BUILD_DIR/lua5.4/?.so" lua5.4 -e 'local hl = require "hbdlab"; print(hl.version == hl.core.version(), type(hl.pretty.format))')
check "lua5.4 requires hbdlab.so" [ "$out" = "true	function" ]
out=$(LD_PRELOAD="${HBDLAB_PRELOAD:-}" LUA_CPATH="$HBDLAB_BUILD_DIR/lua5.4/?.so" lua5.4 "$HBDLAB_SOURCE_DIR/tests/host/luamod_check.lua")
check "module API works under lua5.4" [ "$out" = "ok" ]
finish
