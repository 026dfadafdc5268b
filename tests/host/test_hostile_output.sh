# Hostile output paths and strings (issue 14): gnuplot never runs user text, figures and
# result files are replaced only when complete (full disk / file size limit keep the old
# file, leave no temp file), CSV cells are quoted per RFC 4180 and never cut, notebooks
# refuse to overwrite their input and keep their reports inert. docs/RELIABILITY.md.
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1
W=$TMP/w
mkdir -p "$W"
no_temps() { ! ls -a "$1" | grep -q '\.tmp-'; }
exists() { [ -e "$1" ]; }

# ---- gnuplot: user strings never run as commands ----
cat > "$TMP/inject.lua" <<LUA
local d = { { x = 1, y = 1 }, { x = 2, y = 3 } }
local W = "$W"
local function try(t) t.data, t.x, t.y = d, "x", "y"; return pcall(hl.plot.line, t) end
local ok, e = try { logx = '10; system("touch $W/PWNED_logx")', out = W .. "/a.png" }
assert(not ok and e:find("field 'logx' must be true or a number > 1", 1, true), tostring(e))
ok, e = try { logy = "2\nsystem('touch $W/PWNED_logy')", out = W .. "/b.png" }
assert(not ok and e:find("field 'logy'", 1, true), tostring(e))
ok, e = try { xtics = { '1); system("touch $W/PWNED_xtics"); set xtics (1' }, out = W .. "/c.png" }
assert(not ok and e:find("xtics[1] must be a finite number", 1, true), tostring(e))
-- a title and labels ending in a backslash, then a line that would run a command if joined
assert(try { title = "t\\\\", xlabel = "x\\\\", ylabel = "y\\\\", by = nil, out = W .. "/d.png" })
-- an output name with quotes and a command: a strange file name, nothing run
assert(try { out = W .. "/q'\"; system('touch $W/PWNED_out') #.png" })
ok, e = try { out = W .. "/n\nsystem('touch $W/PWNED_nl')\n.png" }
assert(not ok and e:find("contains a control character", 1, true), tostring(e))
-- a name ending in a backslash must not continue the .gp's first (comment) line
assert(try { out = W .. "/e\\\\.png" })
print("ok")
LUA
out=$("$HBDLAB" "$TMP/inject.lua" 2>&1)
check "hostile plot strings are refused or quoted: $out" contains "$out" ok
check "no command ran" sh -c "! ls '$W' | grep -q PWNED"
check "figure with a quoted name was drawn" exists "$W/q'\"; system('touch $W/PWNED_out') #.png"
check "backslash title figure drawn" exists "$W/d.png"
check "backslash-named figure drawn" exists "$W/e\\.png"
check "the .gp loads no style file" sh -c "! grep -q '^load' '$W/d.gp'"
check "the .gp embeds the style" grep -q "set linetype 1" "$W/d.gp"
check "the .gp reruns by itself" sh -c "cd '$W' && rm -f d.png && gnuplot d.gp && test -s d.png"

# a plots/style.gp in the current folder is never loaded (today it is, as gnuplot code)
mkdir -p "$TMP/cwd/plots"
echo "system('touch $W/PWNED_style')" > "$TMP/cwd/plots/style.gp"
(cd "$TMP/cwd" && HBDLAB_SOURCE_DIR=$TMP/cwd "$HBDLAB" -e "hl.plot.line { data = { { x = 1, y = 1 } }, x = 'x', y = 'y', out = '$W/s.png' }") > /dev/null 2>&1
check "a style.gp in the current folder is not run" sh -c "! test -e '$W/PWNED_style'"
check "figure drawn from another folder" exists "$W/s.png"

# ---- figures are atomic: a file size limit keeps the old figure and raises ----
cp "$W/d.png" "$TMP/d.before"
cat > "$TMP/fig.lua" <<LUA
local ok, e = pcall(hl.plot.line, { data = { { x = 1, y = 1 }, { x = 2, y = 3 } }, x = "x", y = "y", title = "t\\\\",
                    xlabel = "x\\\\", ylabel = "y\\\\", out = "$W/d.png" })
assert(not ok, "a figure over the size limit must fail")
io.stderr:write(e, "\n")
LUA
# 12 KiB: the .dat and .gp fit, the ~22 KB PNG does not
(ulimit -f 12; "$HBDLAB" "$TMP/fig.lua") 2> "$TMP/fig.err"
check "over the size limit: an error: $(cat "$TMP/fig.err")" grep -q "gnuplot failed\|not written completely" "$TMP/fig.err"
check "over the size limit: the old figure is kept" cmp -s "$W/d.png" "$TMP/d.before"
check "over the size limit: no temp file" no_temps "$W"

# ---- result files: a size limit raises, keeps the old file, leaves no temp ----
cat > "$TMP/rows.lua" <<LUA
local rows = {}
for i = 1, 4000 do rows[i] = { i = i, name = string.rep("x", 40) } end
local ok, e = pcall(hl.rows.write, rows, "$W/r.csv")
print(ok, e)
LUA
echo "old,file" > "$W/r.csv"
out=$( (ulimit -f 8; "$HBDLAB" "$TMP/rows.lua") 2>&1)
check "rows.write over the size limit raises: $out" contains "$out" "File too large"
check "rows.write over the size limit keeps the old file" grep -qx "old,file" "$W/r.csv"
check "rows.write over the size limit leaves no temp" no_temps "$W"

# sweep_to_csv under a size limit (SIGXFSZ would kill the process mid-file today)
cat > "$TMP/big_sweep.lua" <<LUA
local base = { model = "llama-3.1-8b", cluster = "hgx-h100", batch = 8, input = 512, output = 16, parallel = { tp = 8 } }
local b = {}
for i = 1, 3000 do b[i] = 8 end
print(pcall(hl.sweep_to_csv, { base = base, axes = { batch = b }, out = "$W/sw.csv" }))
LUA
echo "old,sweep" > "$W/sw.csv"
out=$( (ulimit -f 8; "$HBDLAB" "$TMP/big_sweep.lua") 2>&1); rc=$?
check "sweep_to_csv over the size limit: a clean error (rc $rc): $out" contains "$out" "cannot write"
# the cause is the write's own errno (it read "Inappropriate ioctl for device", overwritten later)
check "sweep_to_csv over the size limit names EFBIG: $out" contains "$out" "sw.csv: File too large"
check "sweep_to_csv over the size limit keeps the old file" grep -qx "old,sweep" "$W/sw.csv"
check "sweep_to_csv over the size limit leaves no temp" no_temps "$W"

# two processes writing one path never interleave: the result is one writer's whole file
cat > "$TMP/writer.lua" <<LUA
local tag = arg[1]
local rows = {}
for i = 1, 3000 do rows[i] = { writer = tag, i = i } end
for _ = 1, 15 do hl.rows.write(rows, "$W/shared.csv") end
LUA
"$HBDLAB" "$TMP/writer.lua" A & pa=$!
"$HBDLAB" "$TMP/writer.lua" B & pb=$!
wait $pa; wait $pb
lines=$(wc -l < "$W/shared.csv"); na=$(grep -c ',A$\|^A,' "$W/shared.csv"); nb=$(grep -c ',B$\|^B,' "$W/shared.csv")
check "two writers: one whole file ($lines lines, $na A, $nb B)" sh -c "[ $lines -eq 3001 ] && { [ $na -eq 3000 ] || [ $nb -eq 3000 ]; }"
check "two writers: no temp left" no_temps "$W"

# Ctrl-C (once, or twice: the second kills) while files are being written leaves no temp file
cat > "$TMP/loop.lua" <<LUA
local rows = {}
for i = 1, 20000 do rows[i] = { i = i, v = i * 0.5 } end
print("started"); io.stdout:flush()
while true do hl.rows.write(rows, "$W/loop.csv") end
LUA
for sig in "INT" "INT INT" "TERM"; do
    "$HBDLAB" "$TMP/loop.lua" > "$TMP/loop.out" 2>&1 & pid=$!
    for _ in $(seq 200); do grep -q started "$TMP/loop.out" 2>/dev/null && break; sleep 0.05; done
    sleep 0.3
    for s in $sig; do kill -"$s" "$pid" 2>/dev/null; done
    wait "$pid"
    check "SIG$sig while writing: no temp file" no_temps "$W"
done

# ---- sweep_to_csv: RFC 4180 cells, nothing cut ----
cat > "$TMP/csv.lua" <<LUA
local base = { model = "llama-3.1-8b", cluster = "hgx-h100", batch = 8, input = 512, output = 16, parallel = { tp = 2, dp = 4 } }
local long = hl.model("llama-3.1-8b"):with { name = string.rep("m", 60) }
local axes = { { "placement", { "tp,dp,pp", "dp,tp,pp" } }, { "model", { long, hl.model "llama-3.1-405b" } }, { "batch", { 8, 3 } } }
hl.sweep_to_csv { base = base, axes = axes, out = "$W/q.csv" }
local back, mem = hl.rows.read_csv "$W/q.csv", hl.sweep { base = base, axes = axes }
assert(#back == #mem and #mem == 8, "rows " .. #back)
local longest = 0
for i, r in ipairs(mem) do
  assert(back[i].placement == r.placement, "placement " .. tostring(back[i].placement))
  assert(back[i].model == r.model, "model name cut: " .. tostring(back[i].model))
  assert(back[i].error == r.error, "error cut: " .. tostring(back[i].error))
  if r.error and #r.error > longest then longest = #r.error end
end
assert(#long.name == 60 and longest > 119, "a long name and an error over 119 characters: " .. longest)
print("ok", longest)
LUA
out=$("$HBDLAB" "$TMP/csv.lua" 2>&1)
check "sweep_to_csv quotes and keeps names and errors whole: $out" contains "$out" ok

# a streamed sweep states its expected size above 10 GB (1e9 rows here) and is refused at once
cat > "$TMP/huge.lua" <<'LUA'
local a = {}
for i = 1, 1000 do a[i] = i end
print(pcall(hl.sweep_to_csv, { base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 } },
  axes = { input = a, output = a, batch = a }, out = os.getenv("HUGE_OUT") }))
LUA
# the folder is a plain file, so no run (not even as root, where /nonexistent could be made by
# anyone) can open the output and stream 10^9 rows
: > "$TMP/not_a_folder"
out=$(HUGE_OUT="$TMP/not_a_folder/huge.csv" timeout 60 "$HBDLAB" "$TMP/huge.lua" 2>&1)
check "sweep_to_csv states the expected size above 10 GB: $out" contains "$out" "1000000000 rows, about"
check "and is refused at once, the folder being a file: $out" contains "$out" "cannot write"

# ---- notebooks ----
printf '# nb\n\n```lua\nprint(1)\n```\n' > "$W/nb.md"
cp "$W/nb.md" "$TMP/nb.before"
"$HBDLAB" notebook "$W/nb.md" -o "$W/nb.md" > /dev/null 2> "$TMP/nb.err"; rc=$?
check "notebook -o equal to the input is refused (rc $rc)" sh -c "[ $rc -eq 2 ] && grep -q 'would overwrite the notebook' '$TMP/nb.err'"
check "notebook input untouched" cmp -s "$W/nb.md" "$TMP/nb.before"
"$HBDLAB" notebook "$W/nb.md" -o "$W/./nb.md" > /dev/null 2>&1; rc=$?
check "notebook -o naming the input another way is refused (rc $rc)" sh -c "[ $rc -eq 2 ] && cmp -s '$W/nb.md' '$TMP/nb.before'"
timeout 20 "$HBDLAB" notebook /dev/zero -o "$W/zero.html" > /dev/null 2> "$TMP/zero.err"; rc=$?
check "notebook of /dev/zero refused at once (rc $rc)" sh -c "[ $rc -eq 1 ] && grep -q 'not a regular file' '$TMP/zero.err'"
printf '# c\n\nbell \001 \0011\001 and \033[31m red\n\n```lua\nprint(2)\n```\n' > "$W/ctl.md"
"$HBDLAB" notebook "$W/ctl.md" -o "$W/ctl.html" > /dev/null 2> "$TMP/ctl.err"; rc=$?
check "control bytes in prose: report written (rc $rc) $(head -c 200 "$TMP/ctl.err")" sh -c "[ $rc -eq 0 ] && grep -q 'bell' '$W/ctl.html'"
check "control bytes in prose: none in the report" sh -c "! LC_ALL=C grep -q \$'[\\001\\033]' '$W/ctl.html'"
printf '# e\n\n```lua\nprint(\"before\")\nos.exit(3)\n```\n\n```lua\nprint(\"after\")\n```\n' > "$W/exit.md"
"$HBDLAB" notebook "$W/exit.md" -o "$W/exit.md.html" > /dev/null 2>&1; rc=$?
check "os.exit in a cell: report written, cell marked (rc $rc)" sh -c "[ $rc -eq 1 ] && grep -q 'called os.exit(3)' '$W/exit.md.html' && grep -q before '$W/exit.md.html'"
cat > "$W/inj.md" <<'MD'
# i

[click](javascript:alert(1)) and [ok](https://example.org) and ![x](data:text/html,boom)

```lua
print("```\n<script>alert(1)</script>\n```")
```
MD
"$HBDLAB" notebook "$W/inj.md" -o "$W/inj.md.out.md" > /dev/null 2>&1
"$HBDLAB" notebook "$W/inj.md" -o "$W/inj.html" > /dev/null 2>&1
check "no javascript: link in HTML" sh -c "! grep -qi 'href=\"javascript:' '$W/inj.html'"
check "no data: image from prose" sh -c "! grep -q 'src=\"data:text' '$W/inj.html'"
check "https links kept" grep -q 'href="https://example.org"' "$W/inj.html"
# in the .md report the script tag must stay inside a fence: the fence is longer than the output's
check "fenced output cannot close its fence" sh -c "grep -q '^\`\`\`\`text' '$W/inj.md.out.md'"

finish
