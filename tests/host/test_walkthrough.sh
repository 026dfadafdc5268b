# hl.walkthrough pages: the committed examples (docs/walkthrough) are what
# scripts/walkthrough_pages.lua writes; `hbdlab walkthrough` writes the same page from
# a JSON config; and in headless Chromium each example loads with no console message,
# every step's screenshot is non-blank and differs from the step before, and the numbers
# in the DOM equal hl.simulate's breakdown (tests/host/walkthrough_dom.lua).
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1
"$HBDLAB" scripts/walkthrough_pages.lua "$TMP" > /dev/null 2>&1
check "walkthrough_pages.lua runs" [ -s "$TMP/tp2pp2.html" ]
for f in tp2pp2 deepseek_v3_ep32; do
    check "docs/walkthrough/$f.html is up to date (regenerate: build/hbdlab scripts/walkthrough_pages.lua)" \
        cmp -s "$TMP/$f.html" "docs/walkthrough/$f.html"
    check "$f: nothing loaded from the network" sh -c "! grep -Eq '(src|href)=\"(https?:)?//' '$TMP/$f.html'"
done
cat > "$TMP/tp2pp2.json" <<'JSON'
{"model": "llama-3.1-8b", "cluster": {"gpu": "H100-SXM", "gpus": 4, "hbd": 2}, "precision": "bf16",
 "batch": 8, "input": 2048, "output": 256, "parallel": {"tp": 2, "pp": 2}}
JSON
"$HBDLAB" walkthrough "$TMP/tp2pp2.json" -o "$TMP/cli.html" 2> /dev/null
check "hbdlab walkthrough CONFIG -o: the same page as hl.walkthrough" cmp -s "$TMP/cli.html" "$TMP/tp2pp2.html"
"$HBDLAB" walkthrough - -o "$TMP/stdin.html" < "$TMP/tp2pp2.json" 2> /dev/null
check "hbdlab walkthrough - (stdin)" cmp -s "$TMP/stdin.html" "$TMP/tp2pp2.html"
"$HBDLAB" walkthrough "$TMP/tp2pp2.json" > "$TMP/usage.out" 2>&1; rc=$?
check "no -o: usage, exit 2 ($rc)" sh -c "[ $rc -eq 2 ] && grep -q 'usage: hbdlab walkthrough' '$TMP/usage.out'"
echo '{"model": "llama-3.1-8b", "cluster": "hgx-h100", "batch": -1}' > "$TMP/bad.json"
"$HBDLAB" walkthrough "$TMP/bad.json" -o "$TMP/bad.html" > "$TMP/bad.out" 2>&1; rc=$?
check "a bad config names the field ($rc)" sh -c "[ $rc -eq 1 ] && grep -q batch '$TMP/bad.out' && [ ! -e '$TMP/bad.html' ]"

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ] || ! command -v convert > /dev/null; then
    bad "chromium and imagemagick are required (tools/install-deps.sh installs them)"
    finish
    exit
fi
flags="--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --hide-scrollbars --user-data-dir=$TMP/chrome-profile
       --virtual-time-budget=4000 --enable-logging=stderr --v=0"
W=1400 H=1000 # CSS pixels per step; drawn at half scale (700 x 500 px per shot) to keep the test fast
# shellcheck disable=SC2086
chrome() { timeout 120 "$browser" $flags "$@"; }
# the console check catches an error: a page with a broken script logs it
sed 's|<script>(function|<script>nosuch();</script><script>(function|' "$TMP/tp2pp2.html" > "$TMP/broken.html"
chrome --dump-dom "file://$TMP/broken.html" > /dev/null 2> "$TMP/broken.err"
check "the console check sees a script error" grep -q 'CONSOLE.*nosuch' "$TMP/broken.err"
i=0
for f in tp2pp2 deepseek_v3_ep32; do
    i=$((i + 1))
    page="$TMP/$f.html"
    n=$(grep -o 'class="step" data-step=' "$page" | wc -l)
    check "$f: at least 6 steps ($n)" [ "$n" -ge 6 ]
    # the DOM after the script ran, opened at step 3 by its address
    chrome --dump-dom "file://$page#step=3" > "$TMP/$f.dom" 2> "$TMP/$f.err"
    check "$f: loads with no console message" sh -c "! grep -q ':CONSOLE' '$TMP/$f.err'"
    check "$f: #step=3 opens step 3" grep -q '<body data-step="3">' "$TMP/$f.dom"
    check "$f: step 3 shown, step 1 hidden" sh -c "grep -q 'class=\"step on\" data-step=\"3\"' '$TMP/$f.dom' &&
        grep -q 'class=\"step\" data-step=\"1\"' '$TMP/$f.dom'"
    golden=""
    [ "$f" = tp2pp2 ] && golden=tests/golden/walkthrough_tp2pp2.out
    # shellcheck disable=SC2086
    "$HBDLAB" tests/host/walkthrough_dom.lua "$TMP/$f.dom" "$i" $golden > "$TMP/$f.check" 2>&1
    check "$f: DOM numbers equal hl.simulate's ($(tail -n1 "$TMP/$f.check"))" grep -q " 0 failures" "$TMP/$f.check"
    # every step in one screenshot: the page once per step in stacked frames, then cut apart
    {
        echo "<!DOCTYPE html><html><body style=\"margin:0\">"
        s=1
        while [ "$s" -le "$n" ]; do
            echo "<iframe src=\"$f.html#step=$s\" style=\"display:block;border:0;width:${W}px;height:${H}px\"></iframe>"
            s=$((s + 1))
        done
        echo "</body></html>"
    } > "$TMP/${f}_steps.html"
    chrome --force-device-scale-factor=0.5 --window-size=$W,$((H * n)) --screenshot="$TMP/$f.png" "file://$TMP/${f}_steps.html" > /dev/null \
        2> "$TMP/${f}_shot.err"
    check "$f: the steps load with no console message" sh -c "! grep -q ':CONSOLE' '$TMP/${f}_shot.err'"
    convert "$TMP/$f.png" -crop "$((W / 2))x$((H / 2))" +repage "$TMP/${f}_step_%d.png"
    s=0
    while [ "$s" -lt "$n" ]; do
        shot="$TMP/${f}_step_$s.png"
        sd=$(convert "$shot" -colorspace Gray -format '%[fx:standard_deviation]' info: 2> /dev/null || echo 0)
        check "$f step $((s + 1)): screenshot not blank (stddev $sd)" awk "BEGIN { exit !($sd > 0.05) }"
        if [ "$s" -gt 0 ]; then
            diff=$(compare -metric AE "$TMP/${f}_step_$((s - 1)).png" "$shot" null: 2>&1 | cut -d' ' -f1)
            check "$f step $((s + 1)): differs from step $s ($diff pixels)" awk "BEGIN { exit !(${diff:-0} > 200) }"
        fi
        s=$((s + 1))
    done
    [ -n "${HBDLAB_KEEP_SHOTS:-}" ] && cp "$TMP/${f}"_step_*.png "$HBDLAB_KEEP_SHOTS/" 2> /dev/null
done
finish
