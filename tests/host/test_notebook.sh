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
"$HBDLAB" notebook notebooks/serving.md -o "$TMP/serving.md" 2> "$TMP/serving.err"
check "serving notebook runs" grep -q "7 of 7 cells ran, 0 failed" "$TMP/serving.err"
check "serving notebook prints no warning" sh -c "! grep -q 'warning' '$TMP/serving.err'"
att=$(sed -n 's/.*SLO attainment \([0-9.]*\)%.*/\1/p' "$TMP/serving.md" | head -n1)
check "serving notebook: the first traffic example is not overloaded (SLO attainment $att%)" \
    awk "BEGIN { exit !(${att:-0} >= 90) }"
check "quickstart points to the serving notebook" grep -q "notebooks/serving.md" notebooks/quickstart.md
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

# ---- issue 22: the renderer is linear and a first Ctrl-C stops it (before: 14 s for a 40 KB line
# of "[" in nested gsub patterns, minutes for 200 KB, and Ctrl-C waited for the whole gsub)
# interrupt_render NAME CMD...: CMD writes $TMP/ready when its render starts; one SIGINT then
interrupt_render() {
    local name=$1
    shift
    rm -f "$TMP/ready"
    timeout --foreground 120 "$@" > "$TMP/int.out" 2> "$TMP/int.err" &
    local pid=$! waited=0
    while [ ! -e "$TMP/ready" ] && [ "$waited" -lt 1200 ]; do sleep 0.05; waited=$((waited + 1)); done
    sleep 0.2
    kill -INT "$pid" 2> /dev/null
    wait "$pid"
    local rc=$?
    check "$name: one Ctrl-C stops the render (exit $rc, want 130)" [ "$rc" -eq 130 ]
    check "$name: says interrupted ($(head -c 300 "$TMP/int.err"))" grep -q "interrupted" "$TMP/int.err"
}
# 8 MB of "[" on one line (linear: a few seconds; quadratic: days)
interrupt_render "markdown_html" "$HBDLAB" -e "local s = ('['):rep(8 << 20); io.open('$TMP/ready', 'w'):close()
    require('hbdlab.notebook').markdown_html(s)"
{ printf '# big\n\n```lua\nio.open("%s/ready", "w"):close()\n```\n\n' "$TMP"
  head -c 8388608 /dev/zero | tr '\0' '['; printf '\n'; } > "$TMP/big.md"
interrupt_render "hbdlab notebook" "$HBDLAB" notebook "$TMP/big.md" -o "$TMP/big.html"
check "an interrupted notebook leaves no report" [ ! -e "$TMP/big.html" ]
# inline Markdown still renders as before, in one pass
res=$("$HBDLAB" -e 'io.write(require("hbdlab.notebook").markdown_html(
  "a `[x](y)` [**b** *c*](http://e/f) ![i](g.png) [j](javascript:k) **l *m** *n* * o* [p] (q) [](r) `` s"))')
want='<p>a <code>[x](y)</code> <a href="http://e/f"><strong>b</strong> <em>c</em></a> <img alt="i" src="g.png"> j *<em>l </em>m** <em>n</em> * o* [p] (q) [](r) `` s</p>'
check "inline markdown: code, links, images, strong, emphasis ($res)" [ "$res" = "$want" ]
res=$("$HBDLAB" -e 'io.write(require("hbdlab.notebook").markdown_html("- one\n  more 100%\n- two\n\n| a   |  b |\n|:--|--:|\n| 1 | 2 |"))')
want=$(printf '<ul>\n<li>one more 100%%</li>\n<li>two</li>\n</ul>\n<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody>\n<tr><td>1</td><td>2</td></tr></tbody></table>')
check "lists with continuation lines (a % in one) and tables ($res)" [ "$res" = "$want" ]
# fences: ~~~ and longer fences, ```Lua runs, a fence never closed is refused (it swallowed the rest)
printf '# f\n\n~~~Lua\nprint("tilde ran")\n~~~\n\n````lua\nprint("four ran")\n```\nstill code\n````\n' > "$TMP/f.md"
"$HBDLAB" notebook "$TMP/f.md" -o "$TMP/f.md.html" 2> /dev/null
check "a ~~~Lua fence runs" grep -q "tilde ran" "$TMP/f.md.html"
check "a four-backtick fence holds a three-backtick line" grep -q "four ran" "$TMP/f.md.html"
printf '# u\n\n```lua\nprint(1)\n\nprose that became code\n' > "$TMP/u.md"
res=$("$HBDLAB" notebook "$TMP/u.md" -o "$TMP/u.html" 2>&1)
rc=$?
check "an unclosed fence is refused (exit $rc)" [ "$rc" -eq 1 ]
check "an unclosed fence names its line: $res" contains "$res" "u.md:3: the code fence opened here is never closed"

# a cell raising an error object whose __tostring raises: the report was not written
printf '# e\n\n```lua\nerror(setmetatable({}, { __tostring = function() error("nope") end }))\n```\n' > "$TMP/eo.md"
"$HBDLAB" notebook "$TMP/eo.md" -o "$TMP/eo.html" 2> /dev/null
rc=$?
check "an unprintable error object: the cell fails (exit $rc)" [ "$rc" -eq 1 ]
check "an unprintable error object: the report is written and says so" grep -q "cannot be shown: its __tostring raised" "$TMP/eo.html"

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
