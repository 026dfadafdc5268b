# hl.simulate's caches of preset names and job plans follow $HBDLAB_PRESETS when it changes
# between calls in one process (presets_env_check.lua, under a stock lua5.4 with a small module
# that calls setenv, built here).
. "$(dirname "$0")/lib.sh"
command -v lua5.4 >/dev/null || { echo "lua5.4 is required"; exit 1; }
cc=${HBDLAB_CC:-cc}
check "the setenv module builds" "$cc" -std=c11 -shared -fPIC ${HBDLAB_SAN_FLAGS:-} -Wall -Wextra -Werror \
    -I/usr/include/lua5.4 "$HBDLAB_SOURCE_DIR/tests/host/setenv_mod.c" -o "$TMP/setenv_mod.so"
for d in a b; do mkdir -p "$TMP/$d/models"; done
model='{"hidden": 4096, "layers": %d, "heads": 32, "kv_heads": 8, "ffn": 14336, "vocab": 128256}'
printf "$model" 32 > "$TMP/a/models/cachetest.json"
printf "$model" 16 > "$TMP/b/models/cachetest.json"
out=$(env -u HBDLAB_PRESETS LD_PRELOAD="${HBDLAB_PRELOAD:-}" LUA_CPATH="$HBDLAB_BUILD_DIR/lua5.4/?.so;$TMP/?.so" \
    lua5.4 "$HBDLAB_SOURCE_DIR/tests/host/presets_env_check.lua" "$TMP/a" "$TMP/b" 2>&1)
check "a change of \$HBDLAB_PRESETS reaches the next hl.simulate: $out" [ "$out" = "ok" ]
finish
