# The figures of the docs regenerate from plots/ with one command (tools/regen_figures.sh, issue
# 21): every image README.md and docs/*.md show is listed in plots/figures.txt with a committed
# .dat + .gp, is drawn into a temp folder as a whole 1000 x 620 PNG, and --refresh re-runs the
# owning scripts into a copy of plots/ (each listed source written by an owner; --check then
# finds them current, and names one changed after). The committed and
# the refreshed .gp files start from plots/style.gp and hold no control byte and no unquoted user
# text (tests/host/gp_check.lua, which must also refuse planted faults).
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1
command -v gnuplot > /dev/null || { echo "gnuplot missing"; exit 1; }
manifest=$HBDLAB_SOURCE_DIR/plots/figures.txt
listed() { awk '$1 == "figure" { print $2 }' "$manifest"; }
source_of() { awk -v n="$1" '$1 == "figure" && $2 == n { print $3 }' "$manifest"; }
gp_check() { "$HBDLAB" "$HBDLAB_SOURCE_DIR/tests/host/gp_check.lua" "$HBDLAB_SOURCE_DIR/plots/style.gp" "$@"; }

# ---- the manifest covers every figure the docs show, and only those in docs/figures ----
refs=$(grep -oh 'figures/[A-Za-z0-9_.-]*\.png' README.md docs/*.md | sed 's|.*/||; s|\.png$||' | sort -u)
check "the docs show figures" test -n "$refs"
for f in $refs; do
    check "docs/figures/$f.png (shown in the docs) is listed in $manifest" sh -c "awk '\$1 == \"figure\" { print \$2 }' $manifest | grep -qx '$f'"
done
for png in docs/figures/*.png; do
    f=$(basename "$png" .png)
    check "$png is listed in $manifest (no figure without its source)" sh -c "awk '\$1 == \"figure\" { print \$2 }' $manifest | grep -qx '$f'"
done
for f in $(listed); do
    s=$(source_of "$f")
    check "figure $f: plots/$s.dat is committed" test -s "plots/$s.dat"
    check "figure $f: plots/$s.gp is committed" test -s "plots/$s.gp"
    check "figure $f: plots/$s.gp reads its .dat by a relative name" grep -qx "datafile = \"$(basename "$s").dat\"" "plots/$s.gp"
done

# ---- the checker finds planted faults (so its passing below means something) ----
g=plots/gallery/line.gp
mkdir -p "$TMP/bad"
sed 's/^set title .*/set title Planted words/' "$g" > "$TMP/bad/bare.gp"
sed "s/^set title .*/set title 'planted'/" "$g" > "$TMP/bad/single.gp"
sed 's/^set title .*/set title "a`touch x`"/' "$g" > "$TMP/bad/backquote.gp"
sed 's/^set border 3 .*/set border 2/' "$g" > "$TMP/bad/style.gp"
{ cat "$g"; printf 'set title "a"\r\n'; } > "$TMP/bad/cr.gp"
{ cat "$g"; echo '!touch x'; } > "$TMP/bad/shell.gp"
printf '1\t2\0\n' > "$TMP/bad/nul.dat"
for f in "$TMP"/bad/*; do
    check "gp_check refuses $(basename "$f")" sh -c "! '$HBDLAB' tests/host/gp_check.lua plots/style.gp '$f' > /dev/null"
done

# ---- the committed .gp / .dat files ----
# shellcheck disable=SC2046
out=$(gp_check $(for f in $(listed); do s=$(source_of "$f"); echo "plots/$s.gp plots/$s.dat"; done) 2>&1)
check "committed .gp/.dat: style verbatim, no control byte, no unquoted text: $out" contains "$out" "ok "

# ---- one command redraws every figure ----
png_ok() { # PATH: a PNG signature, IHDR 1000 x 620, the IEND chunk last
    [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
        [ "$(od -An -tu1 -j16 -N8 "$1" | tr -s ' ' | sed 's/^ //; s/ $//')" = "0 0 3 232 0 0 2 108" ] &&
        [ "$(tail -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 49454e44ae426082 ]
}
out=$(tools/regen_figures.sh --out "$TMP/fig" 2>&1)
check "regen_figures.sh draws every figure: $out" contains "$out" "$(listed | wc -l) figures drawn"
for f in $(listed); do
    check "$f.png is a whole 1000 x 620 PNG" png_ok "$TMP/fig/$f.png"
done
check "nothing else is written" test "$(ls -A "$TMP/fig" | wc -l)" -eq "$(listed | wc -l)"

# ---- --refresh: the owners rewrite every source (into a copy of plots/) ----
mkdir -p "$TMP/plots"
cp "$manifest" "$TMP/plots/" # the manifest alone: every source must come from an owner
out=$(HBDLAB=$HBDLAB tools/regen_figures.sh --refresh --plots "$TMP/plots" --out "$TMP/fig2" 2>&1)
check "--refresh re-runs the owners and draws every figure: $out" contains "$out" "$(listed | wc -l) figures drawn"
for f in $(listed); do
    check "refreshed $f.png is a whole PNG" png_ok "$TMP/fig2/$f.png"
done
# shellcheck disable=SC2046
out=$(cd "$TMP/plots" && gp_check $(for f in $(listed); do s=$(source_of "$f"); echo "$s.gp $s.dat"; done) 2>&1)
check "refreshed .gp/.dat pass the same checks: $out" contains "$out" "ok "
# --check: the sources just refreshed are current; a changed one is named, exit 1
check "--check passes on freshly refreshed sources" sh -c "tools/regen_figures.sh --check --plots '$TMP/plots' > /dev/null"
first=$(source_of "$(listed | head -n1)")
echo "0 0" >> "$TMP/plots/$first.dat"
out=$(tools/regen_figures.sh --check --plots "$TMP/plots" 2>&1)
rc=$?
check "--check names a stale source and exits 1 (rc $rc): $out" test "$rc" -eq 1 -a -n "$(printf '%s' "$out" | grep -F "plots/$first.dat")"

# ---- hostile text in every plot kind stays quoted (the checker over plot.lua's output) ----
cat > "$TMP/hostile.lua" << 'LUA'
local d = arg[1]
local evil = "x\" `touch PWNED` 'q' @m #c ; \\ \0\n!id %s é"
local rows = { { x = 1, y = 2, s = evil }, { x = 2, y = 3, s = evil .. "2" } }
hl.plot.line { data = rows, x = "x", y = "y", by = "s", title = evil, xlabel = evil, ylabel = evil,
  xformat = evil, out = d .. "/line.png" }
hl.plot.bar { data = rows, x = "s", y = { "x", "y" }, labels = { x = evil }, title = evil, out = d .. "/bar.png" }
hl.plot.heatmap { data = rows, x = "s", y = "x", z = "y", zlabel = evil, out = d .. "/heat.png" }
hl.plot.tornado { data = { { p = evil, lo = 1, hi = 3 } }, name = "p", low = "lo", high = "hi", base = 2,
  low_label = evil, high_label = evil, out = d .. "/tornado.png" }
hl.plot.timeline { events = { { gpu = 0, ts_s = 0, dur_s = 1, kind = "op", name = evil } }, title = evil, out = d .. "/tl.png" }
hl.plot.roofline { gpu = "B200", ops = { { name = evil, flops = 1e12, bytes = 1e9, time_s = 1e-3 } }, title = evil,
  out = d .. "/roof.png" }
hl.plot.scatter { data = rows, x = "x", y = "y", by = "s", logx = 2, logy = true, yformat = evil, out = d .. "/scatter.png" }
hl.plot.frontier { points = { { system = evil, precision = "fp8", mode = evil, tps_per_user = 1, tps_per_gpu = 2 },
  { system = evil, precision = "fp8", mode = evil, tps_per_user = 2, tps_per_gpu = 1 } }, x = "tps_per_user",
  y = "tps_per_gpu", title = evil, out = d .. "/frontier.png" }
LUA
mkdir -p "$TMP/hostile"
out=$( (cd "$TMP/hostile" && "$HBDLAB" "$TMP/hostile.lua" "$TMP/hostile") 2>&1)
check "hostile figures drawn: $out" test -s "$TMP/hostile/frontier.png"
check "no planted command ran" sh -c "! find '$TMP/hostile' -name 'PWNED*' | grep -q ."
# shellcheck disable=SC2046
out=$(gp_check "$TMP"/hostile/*.gp "$TMP"/hostile/*.dat 2>&1)
check "hostile text is quoted in every .gp: $out" contains "$out" "ok "
finish
