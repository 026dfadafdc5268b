# Attack pass 7 (docs/RELIABILITY.md): output paths of hl.sweep_to_csv and hl.rows.write that are
# FIFOs or symbolic link loops. Each check failed before its fix: a FIFO with no reader waited for
# one until Ctrl-C, a symbolic link loop was replaced by the file.
. "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 1

SWEEP="hl.sweep_to_csv { base = { model = 'llama-3.1-8b', cluster = 'hgx-h100', parallel = { tp = 8 } },
    axes = { batch = { 1, 2 } }, progress = false, out = arg[1] }"

mkfifo fifo.csv
expect_fail "sweep_to_csv into a FIFO with no reader is refused (it waited for ever)" \
    "cannot write fifo.csv: it is a FIFO with no reader (none opened it within 5 s" \
    "$HBDLAB" -e "arg = {'fifo.csv'} $SWEEP"
expect_fail "rows.write into a FIFO with no reader is refused" "cannot write fifo.csv: it is a FIFO with no reader" \
    "$HBDLAB" -e "hl.rows.write({ { a = 1 } }, 'fifo.csv')"
check "the FIFO is still a FIFO" test -p fifo.csv
# with a reader the rows go through the FIFO, as to a pipe (/dev/stdout in a pipeline)
timeout 20 cat fifo.csv > got.csv &
reader=$!
sleep 0.3
check "sweep_to_csv into a FIFO with a reader runs" timeout 20 "$HBDLAB" -e "arg = {'fifo.csv'} $SWEEP"
wait "$reader"
check "the reader got the header and 2 rows" sh -c "[ \$(grep -c . got.csv) -eq 3 ] && head -1 got.csv | grep -q '^batch,'"

ln -s loop.csv loop.csv
expect_fail "sweep_to_csv onto a symbolic link loop is refused" "cannot write loop.csv: Too many levels of symbolic links" \
    "$HBDLAB" -e "arg = {'loop.csv'} $SWEEP"
expect_fail "rows.write onto a symbolic link loop is refused" "cannot write loop.csv: Too many levels of symbolic links" \
    "$HBDLAB" -e "hl.rows.write({ { a = 1 } }, 'loop.csv')"
check "the link is not replaced by a file" test -L loop.csv
check "no temp file is left" sh -c "! ls | grep -q '\.tmp-'"

# ---- an output that is a symbolic link is written through, as a shell's '>' does: rows.write to
# link.csv put a file in the link's place and left its target; as root, out = "/dev/stdout" with
# standard output in a file made a temp file in /dev and renamed it over the /dev/stdout link (a
# link in this folder to /proc/self/fd/1 stands for /dev/stdout here: the same path through the code) ----
echo old > real.csv
ln -s real.csv link.csv
check "rows.write through a link" "$HBDLAB" -e "hl.rows.write({ { a = 1 } }, 'link.csv')"
check "the link stays a link" test -L link.csv
check "and its target holds the rows" sh -c "[ \"\$(cat real.csv)\" = \"\$(printf 'a\\n1')\" ]"
ln -s /proc/self/fd/1 stdout_link
"$HBDLAB" -e "print('before') arg = {'stdout_link'} $SWEEP print('after')" > through.txt 2>&1
check "a link to this process's standard output is written through it, in order" \
    sh -c "[ \"\$(head -1 through.txt)\" = before ] && sed -n 2p through.txt | grep -q '^batch,' && [ \"\$(tail -1 through.txt)\" = after ] && [ \$(wc -l < through.txt) -eq 5 ]"
check "and stays a link" test -L stdout_link
"$HBDLAB" -e "arg = {'/dev/fd/1'} $SWEEP" > fd1.txt 2>&1
check "/dev/fd/1 (its temp file could not be made in /proc)" sh -c "[ \$(grep -c . fd1.txt) -eq 3 ]"

# ---- the REPL fed from a pipe (hbdlab -i < cmds): readline echoed and redrew every byte (a 1 MB line
# took 3 s, 8 MB 40 s) and wrote the piped lines into ~/.hbdlab_history; plain lines now, read whole ----
mkdir -p home
printf 'print(1 + 1)\n' | HOME="$TMP/home" "$HBDLAB" -i > repl.out 2>&1
check "piped REPL runs the line" grep -q '^hbdlab> 2$' repl.out
check "piped REPL keeps no history" test ! -e home/.hbdlab_history
long=$(head -c 6000 /dev/zero | tr '\0' a)
printf 'print(#"%s")\n' "$long" | HOME="$TMP/home" "$HBDLAB" -i > repl.out 2>&1
check "a 6,000-byte line runs as one chunk" grep -q '^hbdlab> 6000$' repl.out
printf 'print(#"%s")\nprint("next")\n' "$long" | HOME="$TMP/home" HBDLAB_MAX_INPUT_BYTES=1000 "$HBDLAB" -i > repl.out 2>&1
check "a line over the input limit is skipped, named" grep -q 'a line longer than the input limit of 1000 bytes' repl.out
check "and the next line runs" grep -q 'next' repl.out

# ---- notebook -o: "-o" without a name wrote nb.html as if none were given; "-o r.txt" wrote a page
# to r.txt; a report name that is a folder's ("x.md./") made the folder "x.md." before the refusal ----
printf '# nb\n\n```lua\nprint(1)\n```\n' > nb.md
expect_fail_2() { # NAME EXPECTED CMD...: exit 2 (a usage error) with EXPECTED on stderr
    local name=$1 want=$2
    shift 2
    timeout 20 "$@" > out.txt 2> err.txt
    local rc=$?
    if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" err.txt; then bad "$name: rc $rc: $(head -c 300 err.txt)"; else ok; fi
}
expect_fail_2 "notebook -o without a name" "notebook: -o needs a file name" "$HBDLAB" notebook nb.md -o
check "and no nb.html is written" test ! -e nb.html
expect_fail_2 "notebook -o r.txt" "notebook: -o 'r.txt' is not a report name" "$HBDLAB" notebook nb.md -o r.txt
check "and no r.txt is written" test ! -e r.txt
expect_fail "a result file named like a folder makes no folder" "the name is a folder's" \
    "$HBDLAB" -e "hl.trace.write(hl.simulate { model = 'llama-3.1-8b', cluster = 'hgx-h100', parallel = { tp = 8 } }, 'x.json./')"
check "no folder x.json. is left" test ! -e x.json.

finish
