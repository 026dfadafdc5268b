# Golden-output tests: scripts whose printed output is part of the contract.
# A change in the model that moves these numbers must update tests/golden/
# on purpose (HBDLAB_UPDATE_GOLDEN=1 rewrites them).
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1
golden() {
    local name=$1
    shift
    "$HBDLAB" "$@" > "$TMP/$name.out" 2>&1
    local rc=$?
    check "$name exits 0" [ "$rc" -eq 0 ]
    if [ "${HBDLAB_UPDATE_GOLDEN:-0}" = 1 ]; then
        cp "$TMP/$name.out" "tests/golden/$name.out"
    fi
    if diff -u "tests/golden/$name.out" "$TMP/$name.out" > "$TMP/$name.diff"; then
        ok
    else
        bad "$name output differs from tests/golden/$name.out"
        head -40 "$TMP/$name.diff" >&2
    fi
}
golden hbd_reproduce scripts/hbd/reproduce.lua --set quiet=true
golden walkthrough_tp2pp2 scripts/walkthrough_tp2pp2.lua
golden validate scripts/validate.lua
# README's "prints:" block is what its first command prints (it had gone stale: R1 41.3% where the
# run prints 43.9%); only the figures folder differs here
"$HBDLAB" scripts/hbd/reproduce.lua --set out="$TMP/hbd" 2> /dev/null | grep -v '^figures and data:' > "$TMP/readme_run.txt"
awk '/prints:$/ { f = 1; next } f && /^```$/ { if (g) exit; g = 1; next } g' README.md | grep -v '^figures and data:' > "$TMP/readme_block.txt"
check "README's reproduce output block has lines" [ -s "$TMP/readme_block.txt" ]
if diff -u "$TMP/readme_block.txt" "$TMP/readme_run.txt" > "$TMP/readme.diff"; then ok; else
    bad "README's printed block differs from scripts/hbd/reproduce.lua's output"; head -20 "$TMP/readme.diff" >&2; fi
finish
