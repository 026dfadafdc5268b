# Hostile files and streams, found by the attack pass (docs/RELIABILITY.md lists each case):
# broken shard CSVs given to `hbdlab merge`, standard output on a full disk, JSON nested
# deeper than the parser allows, code points above U+10FFFF.
. "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 1

# ---- hbdlab merge: a shard that is cut or broken must not be glued into the output ----
# merge_fails NAME EXPECTED SHARD0 SHARD1: merging the two shard texts exits 1 naming EXPECTED
# (each after a shard fingerprint line, as hbdlab --shard writes them; "f": filtered rows, not counted)
fp() { printf '#hbdlab-shard %s run=00000000000000a1 rows=%s file=%s\n' "$1" "$2" "$3"; }
merge_fails() {
    { fp 0/2 0-1/2f s.csv; printf '%b' "$3"; } > s_shard0of2.csv
    { fp 1/2 1-2/2f s.csv; printf '%b' "$4"; } > s_shard1of2.csv
    expect_fail "merge: $1" "$2" "$HBDLAB" merge s_shard0of2.csv s_shard1of2.csv -o all.csv
}
# the quote never closes: before, merged as is, exit 0
merge_fails "unterminated quoted cell" 's_shard1of2.csv: line 2: a quoted cell is not closed' 'a,b\n1,2\n' 'a,b\n"3,4\n'
check "merge: nothing written for a broken shard" [ ! -e all.csv ]
# no line end: before, "1,2" and "3,4" became "1,23,4"
merge_fails "last row without a line end" 's_shard0of2.csv: line 2 is cut short (no line end)' 'a,b\n1,2' 'a,b\n3,4\n'
merge_fails "a row narrower than the header" 's_shard0of2.csv: line 3 has 1 cells, the header 2' 'a,b\n1,2\n3\n' 'a,b\n3,4\n'
# shards that differ only in a byte-order mark or CRLF line ends: said so
same='has other columns than s_shard0of2.csv (the same names, but a byte-order mark or CRLF'
merge_fails "a BOM in one shard" "$same" '\0357\0273\0277a,b\n1,2\n' 'a,b\n3,4\n'
merge_fails "CRLF in one shard" "$same" 'a,b\r\n1,2\r\n' 'a,b\n3,4\n'
# the file name once: before, "cannot read x: x: cannot open"
expect_fail "merge: missing input named once" 'hbdlab merge: cannot read nope.csv: cannot open' \
    "$HBDLAB" merge s_shard1of2.csv nope.csv -o all.csv
check "merge: the missing file is not named twice" sh -c "! grep -q 'nope.csv: nope.csv' '$TMP/err'"
# -o twice: the first output was dropped without a word
{ fp 0/2 0-1/2 s.csv; printf 'a,b\n3,4\n'; } > s_shard0of2.csv
"$HBDLAB" merge s_shard0of2.csv -o o1.csv s_shard1of2.csv -o o2.csv 2> "$TMP/err"
rc=$?
check "merge: -o twice is a usage error (rc $rc)" [ "$rc" -eq 2 ]
check "merge: -o twice names both" grep -qF -- "-o is given twice (o1.csv, o2.csv)" "$TMP/err"
# attack pass 5: inputs that are not regular files, refused before reading, as every other input:
# /dev/zero was read without end (and SIGTERM did not stop it), a folder said "read error"
mkdir -p adir
expect_fail "merge: a folder" 'hbdlab merge: cannot read adir: not a regular file (a directory)' \
    "$HBDLAB" merge adir -o all.csv
expect_fail "merge: /dev/zero" 'hbdlab merge: cannot read /dev/zero: not a regular file (a character device)' \
    "$HBDLAB" merge /dev/zero -o all.csv
mkfifo afifo
expect_fail "merge: a FIFO without a writer" 'hbdlab merge: cannot read afifo: not a regular file (a FIFO)' \
    "$HBDLAB" merge afifo -o all.csv
# quoted cells holding commas, quotes and line ends (header too) merge byte for byte
{ fp 0/2 0-1/2 q.csv; printf 'a,"b\n,x"\n1,"2\n""q"",\n"\n'; } > q_shard0of2.csv
{ fp 1/2 1-2/2 q.csv; printf 'a,"b\n,x"\n"",""""\n'; } > q_shard1of2.csv
"$HBDLAB" merge q_shard0of2.csv q_shard1of2.csv -o q.csv
printf 'a,"b\n,x"\n1,"2\n""q"",\n"\n"",""""\n' > q_want.csv
check "merge: quoted cells with , \" and line ends kept byte for byte" cmp -s q.csv q_want.csv

# ---- standard output that cannot be written (a full disk): exit 1, not 0 with the output lost ----
if [ -w /dev/full ]; then
    printf '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "parallel": "auto"}\n' > cfg.json
    "$HBDLAB" eval cfg.json > /dev/full 2> "$TMP/err"
    rc=$?
    check "eval > /dev/full exits 1 (rc $rc)" [ "$rc" -eq 1 ]
    check "eval > /dev/full names the reason" grep -q "cannot write standard output: No space left on device" "$TMP/err"
    "$HBDLAB" -e 'print(("x"):rep(100000))' > /dev/full 2> "$TMP/err"
    rc=$?
    check "a script's print > /dev/full exits 1 (rc $rc)" [ "$rc" -eq 1 ]
    check "a script's print > /dev/full says so" grep -q "cannot write standard output" "$TMP/err"
    # attack pass 5: print flushes each line, so the failed write was print's, and the message
    # said "write error" without the reason
    "$HBDLAB" -e 'print(1)' > /dev/full 2> "$TMP/err"
    check "print > /dev/full names ENOSPC" grep -q "cannot write standard output: No space left on device" "$TMP/err"
fi

# ---- attack pass 5: a draft model given inline in JSON, as the model is ("expected a model object
# or preset name, got table": JSON has no model object); the same job as Lua's :with ----
printf '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 1, "gpus": 1}, "batch": 2, "input": 128, "output": 17, "spec_tokens": 2, "spec_accept": 0.8, "spec_draft_model": {"base": "llama-3.1-8b", "layers": 2}}\n' > draft.json
json=$("$HBDLAB" eval draft.json 2> "$TMP/err")
rc=$?
check "eval of an inline draft model runs (rc $rc): $(head -c 200 "$TMP/err")" [ "$rc" -eq 0 ]
got=$("$HBDLAB" -e 'print(string.format("%.17g", hl.core.json_decode(io.read("a")).tpot_s))' <<< "$json" 2>&1)
want=$("$HBDLAB" -e 'print(string.format("%.17g", hl.simulate{model = "llama-3.1-8b", cluster = "hgx-h100", parallel = {tp = 1, gpus = 1}, batch = 2, input = 128, output = 17, spec_tokens = 2, spec_accept = 0.8, spec_draft_model = hl.model{base = "llama-3.1-8b", layers = 2}}.tpot_s))' 2>&1)
check "the inline draft model's TPOT is Lua's ($got, $want)" [ "$got" = "$want" ]

# ---- hl.rows.read_csv of a file with a byte-order mark (as spreadsheets save "CSV UTF-8"): the
# mark was read as part of the first column's name, so row.a was nil ----
printf '\357\273\277a,b\n1,2\n' > bom.csv
out=$("$HBDLAB" -e 'local r = hl.rows.read_csv("bom.csv"); print(r[1].a, r[1].b)' 2>&1)
check "read_csv skips a byte-order mark: $out" [ "$out" = "$(printf '1\t2')" ]

# ---- results written to a FIFO or a device (-o /dev/null, /dev/stdout): written to, never
# replaced by a regular file (the temp file was renamed over the node: as root, over /dev/null) ----
mkfifo fifo.csv
timeout 10 cat fifo.csv > fifo.out &
reader=$!
"$HBDLAB" -e 'hl.rows.write_csv({ { a = 1 } }, "fifo.csv")' 2> "$TMP/err"
wait "$reader"
check "rows to a FIFO: still a FIFO" [ -p fifo.csv ]
check "rows to a FIFO: the reader got the CSV" [ "$(cat fifo.out)" = "$(printf 'a\n1')" ]
check "rows to a FIFO: no temp file left" sh -c "! ls | grep -q 'fifo.csv.tmp-'"
if mknod null.csv c 1 3 2> /dev/null; then # a /dev/null of our own (root only)
    { fp 0/1 0-1/1 n.csv; printf 'a,b\n1,2\n'; } > n_shard0of1.csv
    "$HBDLAB" merge n_shard0of1.csv -o null.csv
    rc=$?
    check "merge -o a device: exit 0 (rc $rc)" [ "$rc" -eq 0 ]
    check "merge -o a device: still a device" [ -c null.csv ]
    "$HBDLAB" -e 'hl.sweep_to_csv { base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 } },
        axes = { batch = { 1, 2 } }, out = "null.csv", progress = false }'
    check "sweep_to_csv to a device: still a device" [ -c null.csv ]
fi

# ---- JSON nested deeper than 1,000 levels: said so, not "malformed JSON" ----
awk 'BEGIN { for (i = 0; i < 100000; i++) printf "["; print "" }' > deep.json
expect_fail "eval: 100,000 nested arrays" 'deep.json:1:1001: JSON nested deeper than 1000 levels' "$HBDLAB" eval deep.json

# ---- U+110000 (F4 90 80 80) is no UTF-8: refused, not taken as text ----
printf '{"model": "\364\220\200\200"}' > above.json
expect_fail "eval: a code point above U+10FFFF" 'above.json: byte 11: invalid UTF-8' "$HBDLAB" eval above.json

finish
