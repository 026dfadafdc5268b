# The notebook runner: quickstart into HTML and Markdown, a failing cell, and
# the HTML checked in headless Chromium (figures decode, screenshot not blank).
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1
out="$TMP/quickstart.html"
"$HBDLAB" notebook notebooks/quickstart.md -o "$out" 2> "$TMP/nb.err"
check "quickstart runs (exit 0)" [ $? -eq 0 ]
check "all cells ran" grep -q "8 of 8 cells ran, 0 failed" "$TMP/nb.err"
nfig=$(grep -o 'class="figure"' "$out" | wc -l)
check "figures inlined" [ "$nfig" -ge 2 ]
check "prose rendered" grep -q "<h2>2. One simulation</h2>" "$out"
check "printed output captured" grep -q "TTFT" "$out"
check "quickstart prints no warning" sh -c "! grep -q 'warning' '$TMP/nb.err'"
check "quickstart shows no raw SI float (7700000000000.0)" sh -c "! grep -Eq '[0-9]{10,}\.[0-9]' '$out'"
cat > "$TMP/warn.md" <<'MD'
# A warning in a cell

```lua
r = hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, input = 200000 }
```
MD
"$HBDLAB" notebook "$TMP/warn.md" -o "$TMP/warn.html" 2> /dev/null
check "a cell's warning is in the report" grep -q '<pre class="warning">warning: input + output = 200128 tokens' "$TMP/warn.html"
"$HBDLAB" notebook "$TMP/warn.md" -o "$TMP/warn_report.md" 2> /dev/null
check "and in the Markdown report" grep -q '^> \*\*warning:\*\* input + output' "$TMP/warn_report.md"

"$HBDLAB" notebook notebooks/quickstart.md -o "$TMP/quickstart.md" 2> /dev/null
check "markdown report" grep -q '!\[plots/out/quickstart_ttft.png\]' "$TMP/quickstart.md"

cat > "$TMP/bad.md" <<'MD'
# A failing notebook

```lua
x = 41
print("first cell ran")
```

```lua
error("deliberate failure in cell two")
```

```lua
print("third cell ran", x + 1)
```
MD
"$HBDLAB" notebook "$TMP/bad.md" -o "$TMP/bad.html" 2> "$TMP/bad.err"; rc=$?
check "failing cell exits non-zero" [ "$rc" -ne 0 ]
check "failing cell shown with its error" grep -q "deliberate failure in cell two" "$TMP/bad.html"
check "failing cell shown with a traceback" grep -q "stack traceback" "$TMP/bad.html"
check "later cells do not run" sh -c "! grep -q 'class=.output.>third cell ran' '$TMP/bad.html'"
check "stderr names the failed cell" grep -q "cell 2 failed" "$TMP/bad.err"
"$HBDLAB" notebook "$TMP/bad.md" -o "$TMP/bad2.html" --keep-going 2> /dev/null; rc=$?
check "--keep-going exits 0" [ "$rc" -eq 0 ]
check "--keep-going runs later cells" grep -q "third cell ran	42" "$TMP/bad2.html"

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    bad "chromium is required for the HTML check (tools/install-deps.sh installs it)"
else
    flags="--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
           --disable-component-update --disable-sync --user-data-dir=$TMP/chrome-profile --virtual-time-budget=5000"
    # shellcheck disable=SC2086
    timeout 120 "$browser" $flags --dump-dom "file://$out" > "$TMP/dom.html" 2> "$TMP/chrome.err"
    check "page loads in chromium" grep -q 'data-figures=' "$TMP/dom.html"
    loaded=$(sed -n 's/.*data-figures-loaded="\([0-9]*\)".*/\1/p' "$TMP/dom.html" | head -n1)
    check "every figure decodes in chromium ($loaded of $nfig)" [ "${loaded:-0}" -eq "$nfig" ]
    # shellcheck disable=SC2086
    timeout 120 "$browser" $flags --window-size=1200,2400 --screenshot="$TMP/shot.png" "file://$out" > /dev/null 2>&1
    check "screenshot written" [ -s "$TMP/shot.png" ]
    if command -v convert > /dev/null; then
        sd=$(convert "$TMP/shot.png" -colorspace Gray -format '%[fx:standard_deviation]' info:)
        check "screenshot is not blank (stddev $sd)" awk "BEGIN { exit !($sd > 0.05) }"
    else
        bad "imagemagick (convert) is required to check the screenshot"
    fi
fi
finish
