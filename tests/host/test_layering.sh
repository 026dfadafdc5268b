# The layering rules of the source tree (docs/ARCHITECTURE.md "Lua side"):
#   - a binding (lua/bind) includes only public core headers (core/include) and lua/bind headers;
#   - the host (lua/host) includes only its own, the bindings' and the public core headers;
#   - the core never includes a Lua header;
#   - each binding library (lua/bind/l_*.c) registers its functions in hbdlab.core through one
#     luaL_Reg table: its hl_bind_* function calls luaL_setfuncs once, and no file sets a function
#     by name with lua_pushcfunction + lua_setfield (metamethods "__*" excepted).
# The build enforces the include rule too (the bindings' include path has no core/src); this test
# also catches a relative path around it. Each rule is first shown to catch a planted violation.
. "$(dirname "$0")/lib.sh"

# quoted_includes FILE: the "..." include names of a C file, one a line
quoted_includes() { sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"; }

# layering ROOT: prints one line per violation in the tree at ROOT (nothing when it keeps the rules)
layering() {
    local root=$1 f inc name
    for f in "$root"/lua/bind/*.[ch]; do
        for inc in $(quoted_includes "$f"); do
            name=$(basename "$f")
            case "$inc" in *..*) echo "$name includes \"$inc\": no relative paths out of the tree" && continue ;; esac
            if [ ! -f "$root/lua/bind/$inc" ] && [ ! -f "$root/core/include/$inc" ]; then
                echo "$name includes \"$inc\": a binding includes only core/include and lua/bind headers"
            fi
        done
    done
    for f in "$root"/lua/host/*.[ch]; do
        for inc in $(quoted_includes "$f"); do
            name=$(basename "$f")
            case "$inc" in *..*) echo "$name includes \"$inc\": no relative paths out of the tree" && continue ;; esac
            if [ ! -f "$root/lua/host/$inc" ] && [ ! -f "$root/lua/bind/$inc" ] && [ ! -f "$root/core/include/$inc" ]; then
                echo "$name includes \"$inc\": the host includes only lua/host, lua/bind and core/include headers"
            fi
        done
    done
    grep -lE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](lua|lauxlib|lualib)\.h' \
        "$root"/core/src/*.[ch] "$root"/core/include/hbdlab/*.h 2> /dev/null |
        sed 's|.*/||; s|$|: the core includes a Lua header|'
    for f in "$root"/lua/bind/l_*.c; do
        name=$(basename "$f")
        # a function set by name: lua_pushcfunction/lua_pushcclosure, then lua_setfield of a name not "__*"
        awk -v name="$name" '
            /lua_push(cfunction|cclosure)\(/ { pushed = FNR; next }
            pushed == FNR - 1 && match($0, /lua_setfield\([^,]*,[^,]*, *"[^"]*"/) {
                k = $0; sub(/.*lua_setfield\([^,]*,[^,]*, *"/, "", k); sub(/".*/, "", k)
                if (k !~ /^__/) printf "%s:%d registers \"%s\" one by one: use the luaL_Reg table\n", name, FNR, k
            }' "$f"
        [ "$name" = l_hbdlab.c ] && continue # the module opener: it has no hl_bind_* of its own
        awk -v name="$name" '
            /^void hl_bind_[a-z0-9_]*\(lua_State \*L\)/ { defs++; body = 1; next }
            body && /luaL_setfuncs\(/ { calls++ }
            body && /^}/ { body = 0 }
            END {
                if (defs != 1) printf "%s: %d hl_bind_* functions, expected one\n", name, defs
                else if (calls != 1) printf "%s: hl_bind_* calls luaL_setfuncs %d times, expected one luaL_Reg table\n", name, calls
            }' "$f"
    done
}

cd "$HBDLAB_SOURCE_DIR" || exit 1
out=$(layering .)
check "the tree keeps the layering rules${out:+: $out}" [ -z "$out" ]

# Each rule catches a planted violation (in a copy of lua/ and core/).
mkdir -p "$TMP/tree"
cp -r lua core "$TMP/tree/"
T=$TMP/tree
# plant FILE LINE...: appends the lines to FILE in the copy, returns layering's report, restores FILE
plant() {
    local f=$1
    shift
    cp "$T/$f" "$T/$f.orig"
    printf '%s\n' "$@" >> "$T/$f"
    layering "$T"
    mv "$T/$f.orig" "$T/$f"
}
check "copy is clean" [ -z "$(layering "$T")" ]
r=$(plant lua/bind/l_coll.c '#include "sim_int.h"')
check "binding including an internal core header" contains "$r" 'l_coll.c includes "sim_int.h"'
r=$(plant lua/bind/l_coll.c '#include "../../core/src/sim_int.h"')
check "binding including a core header by relative path" contains "$r" 'no relative paths'
r=$(plant lua/bind/bind.h '#include "host.h"')
check "binding including a host header" contains "$r" 'bind.h includes "host.h"'
r=$(plant lua/host/main.c '#include "job_int.h"')
check "host including an internal core header" contains "$r" 'main.c includes "job_int.h"'
r=$(plant core/src/sim.c '#include <lua.h>')
check "core including lua.h" contains "$r" 'sim.c: the core includes a Lua header'
r=$(plant lua/bind/l_calib.c 'static void extra(lua_State *L)' '{' '    lua_pushcfunction(L, l_calibrate_fit);' \
    '    lua_setfield(L, -2, "fit_again");' '}')
check "function registered one by one" contains "$r" 'registers "fit_again" one by one'
r=$(plant lua/bind/l_calib.c '    lua_pushcfunction(L, l_calibrate_fit);' '    lua_setfield(L, -2, "__call");')
check "a metamethod set by name is allowed" [ -z "$r" ]
r=$(plant lua/bind/l_coll.c 'void hl_bind_coll2(lua_State *L)' '{' '    luaL_setfuncs(L, fns, 0);' '    luaL_setfuncs(L, more, 0);' '}')
check "two hl_bind_* in one file" contains "$r" 'l_coll.c: 2 hl_bind_* functions'
sed -i 's/^\(    luaL_setfuncs(L, fns, 0);\)$/\1\n    luaL_setfuncs(L, fns, 0);/' "$T/lua/bind/l_roofline.c"
r=$(layering "$T")
check "two luaL_setfuncs in hl_bind_*" contains "$r" 'l_roofline.c: hl_bind_* calls luaL_setfuncs 2 times'
finish
