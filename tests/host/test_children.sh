# Children and temp files (issue 22): a hung child (gnuplot, a spawned command) no longer blocks
# Ctrl-C or SIGTERM: the child and what it started are ended, no temp figure is left; temp files a
# killed hbdlab left are removed by the next write of the same file (ours, stale, only).
. "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 1
mkdir -p bin fig
# a gnuplot that hangs, with a child of its own; it notes both pids
cat > bin/gnuplot <<SH
#!/bin/sh
sleep 1000 &
echo \$! > "$TMP/child.pid"
echo \$\$ > "$TMP/gnuplot.pid"
wait
SH
chmod +x bin/gnuplot
# running: the process exists and is not a zombie (a killed child of a killed shell stays a zombie
# until its new parent reaps it)
alive() { [ -s "$1" ] && ps -o stat= -p "$(cat "$1")" 2> /dev/null | grep -qv Z; }
gone() { ! alive "$1"; }
for sig in INT TERM; do
    rm -f child.pid gnuplot.pid
    PATH="$TMP/bin:$PATH" timeout --foreground 60 "$HBDLAB" -e \
        'hl.plot.line { data = { { x = 1, y = 1 } }, x = "x", y = "y", out = "fig/f.png" }' > /dev/null 2> "err_$sig" &
    pid=$!
    for _ in $(seq 200); do [ -s child.pid ] && break; sleep 0.05; done
    kill -"$sig" "$pid"
    wait "$pid"
    rc=$?
    check "SIG$sig while gnuplot hangs: hbdlab ends (exit $rc, want 130)" [ "$rc" -eq 130 ]
    check "SIG$sig: says interrupted ($(head -c 200 "err_$sig"))" grep -q "interrupted" "err_$sig"
    sleep 0.3
    check "SIG$sig: the hung gnuplot is ended" gone gnuplot.pid
    check "SIG$sig: and the child it started" gone child.pid
    check "SIG$sig: no temp figure left" sh -c "! ls -a fig | grep -q tmp-"
    alive child.pid && kill "$(cat child.pid)"
done
# a hung spawned command, the same
"$HBDLAB" -e 'hl.core.spawn { "sh", "-c", "echo $$ > spawned.pid; exec sleep 1000" }' > /dev/null 2> err_spawn &
pid=$!
for _ in $(seq 200); do [ -s spawned.pid ] && break; sleep 0.05; done
kill -INT "$pid"
wait "$pid"
rc=$?
check "Ctrl-C while a spawned command hangs: exit $rc (want 130)" [ "$rc" -eq 130 ]
sleep 0.3
check "the spawned command is ended" gone spawned.pid

# ---- stale temp files: only ours (our naming, our user), only stale (writer gone, a minute old)
sh -c 'exit 0' &
dead=$!
wait "$dead"
printf 'x' > "out.csv.tmp-$dead-abcdef"       # a killed writer's, old: removed
touch -d '-2 minutes' "out.csv.tmp-$dead-abcdef"
printf 'x' > "out.csv.tmp-$dead-fresh1"       # a killed writer's, fresh: kept (a writer elsewhere may use it)
printf 'x' > "out.csv.tmp-$$-live12"          # a live process's: kept
touch -d '-2 minutes' "out.csv.tmp-$$-live12"
printf 'x' > "out.csv.tmp-other"              # not our naming: kept
touch -d '-2 minutes' "out.csv.tmp-other"
printf 'x' > "other.csv.tmp-$dead-abcdef"     # another file's: kept
touch -d '-2 minutes' "other.csv.tmp-$dead-abcdef"
"$HBDLAB" -e 'hl.rows.write_csv({ { a = 1 } }, "out.csv")'
check "the next write removes a stale temp of a killed writer" [ ! -e "out.csv.tmp-$dead-abcdef" ]
check "a fresh temp is kept" [ -e "out.csv.tmp-$dead-fresh1" ]
check "a live writer's temp is kept" [ -e "out.csv.tmp-$$-live12" ]
check "a file not of our naming is kept" [ -e "out.csv.tmp-other" ]
check "another file's temp is kept" [ -e "other.csv.tmp-$dead-abcdef" ]
check "and the file is written" [ "$(cat out.csv)" = "$(printf 'a\n1')" ]
# a SIGKILL during a streamed sweep: its temp file is removed by the next run of the same sweep
cat > big.lua <<'LUA'
local n = tonumber(arg[1])
local b = {}
for i = 1, n do b[i] = i end
hl.sweep_to_csv { base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, output = 4 },
  axes = { batch = b, input = { 128, 256, 512, 1024 } }, out = "big.csv", progress = false }
LUA
"$HBDLAB" big.lua 100000 2> /dev/null &
pid=$!
for _ in $(seq 200); do ls -a | grep -q 'big.csv.tmp-' && break; sleep 0.05; done
kill -KILL "$pid"
wait "$pid" 2> /dev/null
left=$(ls -a | grep 'big.csv.tmp-' | head -1)
check "a SIGKILL leaves the temp file ($left)" [ -n "$left" ]
[ -n "$left" ] && touch -d '-2 minutes' "$left"
"$HBDLAB" big.lua 2 2> /dev/null
check "the next run removes it" sh -c "! ls -a | grep -q 'big.csv.tmp-'"
check "and writes the file" [ "$(wc -l < big.csv)" -eq 9 ]
finish
