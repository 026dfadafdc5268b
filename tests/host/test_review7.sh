# Review of session 7's reliability fixes (revfid): the piped REPL's plain line reader. A NUL byte
# inside a line ended the line for strlen but not for fgets: the rest of that line was lost and the
# next line was appended to its head, so `-- note<NUL>x` followed by `print("next")` ran as one
# comment and the second line never ran.
. "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 1
mkdir -p home
printf -- '-- note\000x\nprint("next")\n' | HOME="$TMP/home" "$HBDLAB" -i > repl.out 2>&1
check "the line after a line with a NUL byte runs" grep -q 'next' repl.out
check "the line with the NUL byte is named and skipped" grep -q 'a line with a NUL byte is skipped' repl.out
printf 'print("a\000b")\nprint(5)\nprint(6)\n' | HOME="$TMP/home" "$HBDLAB" -i > repl.out 2>&1
check "both lines after it run" sh -c "grep -q '> 5\$' repl.out && grep -q '> 6\$' repl.out"
# what ran before still runs: a line without a newline at the end of input, a long line
printf 'print(1 + 1)' | HOME="$TMP/home" "$HBDLAB" -i > repl.out 2>&1
check "a last line without a newline runs" grep -q '^hbdlab> 2$' repl.out
long=$(head -c 9000 /dev/zero | tr '\0' a)
printf 'print(#"%s")\nprint("after")\n' "$long" | HOME="$TMP/home" "$HBDLAB" -i > repl.out 2>&1
check "a 9,000-byte line runs as one chunk" grep -q '^hbdlab> 9000$' repl.out
check "and the next line runs" grep -q 'after' repl.out
printf 'print(#"%s")\nprint("next")\n' "$long" | HOME="$TMP/home" HBDLAB_MAX_INPUT_BYTES=1000 "$HBDLAB" -i > repl.out 2>&1
check "a line over the input limit is still skipped" grep -q 'a line longer than the input limit of 1000 bytes' repl.out
check "and the next line runs after it" grep -q 'next' repl.out
finish
