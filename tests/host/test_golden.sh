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
finish
