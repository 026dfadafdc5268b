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

finish
