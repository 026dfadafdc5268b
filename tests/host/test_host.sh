# The hbdlab host: stdin, -e, script arguments, errors with tracebacks, Ctrl-C.
. "$(dirname "$0")/lib.sh"

out=$(echo 'print(1+1)' | "$HBDLAB")
check "stdin (non-tty) runs as a script" [ "$out" = "2" ]

out=$(echo 'print(...) print(arg[0])' | "$HBDLAB" -)
check "'-' runs stdin" [ "$out" = "$(printf '\n-')" ]

printf 'local a, b, c = ...\nprint(select("#", ...), a, b, c, arg[0], arg[1], arg[3])\n' > "$TMP/args.lua"
out=$("$HBDLAB" "$TMP/args.lua" a b c)
check "script args are ... and arg[]" [ "$out" = "$(printf '3\ta\tb\tc\t%s\ta\tc' "$TMP/args.lua")" ]

err=$("$HBDLAB" -e 'error("boom")' 2>&1); rc=$?
check "-e error exits 1" [ "$rc" -eq 1 ]
check "-e error names boom with position" contains "$err" "(command line):1: boom"
check "-e error has no traceback by default" sh -c "! printf '%s' \"\$1\" | grep -q 'stack traceback'" _ "$err"
err=$("$HBDLAB" --traceback -e 'error("boom")' 2>&1)
check "--traceback: the error has a traceback" contains "$err" "stack traceback:"

printf 'local function inner() error("deep failure") end\nlocal function outer() inner() end\nouter()\n' > "$TMP/fail.lua"
err=$("$HBDLAB" "$TMP/fail.lua" 2>&1); rc=$?
check "script error exits 1" [ "$rc" -eq 1 ]
check "script error is file:line: message" contains "$err" "$TMP/fail.lua:1: deep failure"
err=$("$HBDLAB" "$TMP/fail.lua" --traceback 2>&1)
check "--traceback after the script name: traceback names the caller" contains "$err" "in local 'outer'"
err=$(HBDLAB_TRACEBACK=1 "$HBDLAB" "$TMP/fail.lua" 2>&1)
check "HBDLAB_TRACEBACK=1: traceback" contains "$err" "stack traceback:"
# A user error inside the library: the user's line, no internal file:line, no traceback
printf 'local x = 1\nhl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, batch = -1 }\n' > "$TMP/user.lua"
err=$("$HBDLAB" "$TMP/user.lua" 2>&1)
check "library error placed at the user's line" [ "$err" = "hbdlab: $TMP/user.lua:2: job field 'batch': -1 is out of range (allowed: 1..1e+09)" ] || echo "$err" >&2
printf 'hl.cluster { gpus = 8 }\n' > "$TMP/user2.lua"
err=$("$HBDLAB" "$TMP/user2.lua" 2>&1)
check "no internal hbdlab/*.lua prefix" sh -c "! printf '%s' \"\$1\" | grep -q 'hbdlab/[a-z_]*\.lua:'" _ "$err"
check "and no traceback" sh -c "! printf '%s' \"\$1\" | grep -q 'stack traceback'" _ "$err"

err=$("$HBDLAB" "$TMP/missing.lua" 2>&1); rc=$?
check "missing script exits 1" [ "$rc" -eq 1 ]
check "missing script is named" contains "$err" "cannot open $TMP/missing.lua"
err=$("$HBDLAB" "$TMP/missing.lua" --set a=1 2>&1)
check "a script that cannot be loaded is named even with arguments (was: 'hbdlab: --set')" \
    contains "$err" "cannot open $TMP/missing.lua"

printf 'x = = 1\n' > "$TMP/syntax.lua"
err=$("$HBDLAB" "$TMP/syntax.lua" 2>&1); rc=$?
check "syntax error exits 1 ($rc)" [ "$rc" -eq 1 ]
check "syntax error names its position" contains "$err" "syntax.lua:1:"

out=$("$HBDLAB" -e 'x = 20' -e 'print(x + 1)')
check "-e chunks run in order in one state" [ "$out" = "21" ]

out=$("$HBDLAB" --version)
check "--version" contains "$out" "hbdlab "
out=$("$HBDLAB" --help)
check "--help shows usage" contains "$out" "usage: hbdlab"
err=$("$HBDLAB" --bogus 2>&1); rc=$?
check "unknown option is an error ($rc)" [ "$rc" -eq 1 ]
check "unknown option is named" contains "$err" "unrecognized option '--bogus'"

out=$("$HBDLAB" -e 'print(hl == require "hbdlab")')
check "hl global is the module" [ "$out" = "true" ]

# Ctrl-C stops a running script with status 130 and an "interrupted!" error.
"$HBDLAB" -e 'io.stdout:write("ready\n") io.stdout:flush() while true do end' > "$TMP/int.out" 2> "$TMP/int.err" &
pid=$!
for _ in $(seq 50); do [ -s "$TMP/int.out" ] && break; sleep 0.1; done
kill -INT "$pid"
wait "$pid"; rc=$?
check "Ctrl-C exits 130" [ "$rc" -eq 130 ]
check "Ctrl-C reports interrupted!" contains "$(cat "$TMP/int.err")" "interrupted!"

finish
