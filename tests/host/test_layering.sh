# The layering rules of the source tree (docs/ARCHITECTURE.md "Lua side"):
#   - a binding (lua/bind) includes only public core headers (core/include) and lua/bind headers;
#   - the host (lua/host) includes only its own, the bindings' and the public core headers;
#   - the core never includes a Lua header;
#   - each binding library (lua/bind/l_*.c) registers its functions in hbdlab.core through one
#     luaL_Reg table: its hl_bind_* function calls luaL_setfuncs once, and no file sets a function
#     by name with lua_pushcfunction + lua_setfield (metamethods "__*" excepted);
#   - the core's files form no cycle: neither through their internal headers (X.c or X_int.h
#     including Y_int.h makes X depend on Y) nor through their calls (X.o using a symbol Y.o defines,
#     read from libhbdlab.a with nm), so each file can be read knowing only those below it.
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

# module_edges_includes ROOT: "X Y" when core/src/X.c or X_int.h includes "Y_int.h" (X != Y)
module_edges_includes() {
    local f inc from to
    for f in "$1"/core/src/*.c "$1"/core/src/*_int.h; do
        from=$(basename "$f")
        from=${from%.c}
        from=${from%_int.h}
        for inc in $(quoted_includes "$f"); do
            case "$inc" in *_int.h) to=${inc%_int.h} ;; *) continue ;; esac
            [ "$to" != "$from" ] && echo "$from $to"
        done
    done
}

# module_edges_symbols LIB: "X Y" when X.o of the archive uses a symbol Y.o defines (X != Y)
module_edges_symbols() {
    nm -A "$1" 2> /dev/null | awk '
        { n = split($1, p, ":"); f = p[n - 1]; sub(/\.c\.o$/, "", f); sub(/\.o$/, "", f) }
        NF == 3 && $2 ~ /^[TDBRCGS]$/ { def[$3] = f }
        $(NF - 1) == "U" { use[++u] = f " " $NF }
        END { for (i = 1; i <= u; i++) { split(use[i], a, " ");
                  if ((a[2] in def) && def[a[2]] != a[1]) print a[1], def[a[2]] } }' | sort -u
}

# cycles EDGES...: prints the modules of a cycle in the "X Y" edges (nothing when there is none)
cycles() { printf '%s\n' "$@" | tsort 2>&1 > /dev/null | sed -n 's/^tsort: //p' | grep -v 'input contains a loop' | tr '\n' ' '; }

# core_cycles ROOT LIB: one line per kind of cycle found in the core at ROOT and its archive LIB
core_cycles() {
    local c
    c=$(cycles "$(module_edges_includes "$1")")
    [ -n "$c" ] && echo "core/src include cycle: $c"
    c=$(cycles "$(module_edges_symbols "$2")")
    [ -n "$c" ] && echo "core call cycle: $c"
    true
}

cd "$HBDLAB_SOURCE_DIR" || exit 1
LIB=$HBDLAB_BUILD_DIR/libhbdlab.a
check "the core archive is built ($LIB)" [ -f "$LIB" ]
check "the core's modules have call edges" [ -n "$(module_edges_symbols "$LIB")" ]
out=$(core_cycles . "$LIB")
check "the core has no include or call cycle${out:+: $out}" [ -z "$out" ]
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
cp "$T/core/src/memory.c" "$T/memory.c.orig"
sed -i 's/#include "memory_int.h"/#include "sim_int.h"\n#include "memory_int.h"/' "$T/core/src/memory.c"
r=$(core_cycles "$T" "$LIB")
mv "$T/memory.c.orig" "$T/core/src/memory.c"
check "an include cycle (memory.c including sim_int.h)" contains "$r" 'include cycle'
check "the planted include cycle names its modules" contains "$r" 'memory'
mkdir -p "$TMP/ar"
printf 'int ping(int);\nint pong(int n) { return n ? ping(n - 1) : 0; }\n' > "$TMP/ar/pong.c"
printf 'int pong(int);\nint ping(int n) { return n ? pong(n - 1) : 1; }\nint main(void) { return ping(3); }\n' > "$TMP/ar/ping.c"
(cd "$TMP/ar" && cc -c pong.c ping.c && ar rcs libcyc.a pong.o ping.o)
r=$(core_cycles "$T" "$TMP/ar/libcyc.a")
check "a call cycle between two objects (ping.o, pong.o)" contains "$r" 'call cycle'
check "the planted call cycle names both" [ -n "$(contains "$r" ping && contains "$r" pong && echo y)" ]
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
