# hl.sweep_to_csv draws the same progress bar as hl.sweep on a terminal (a pty
# from `script`), and neither draws one when stderr is not a terminal.
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1
cat > "$TMP/p.lua" <<LUA
local inputs = {}
for i = 1, 6000 do inputs[i] = 1000 + i end
local base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, output = 8 }
hl.sweep_to_csv { base = base, axes = { input = inputs }, out = "$TMP/p.csv" }
io.stderr:write("--between--\n")
hl.sweep { base = base, axes = { input = inputs } }
LUA
script -qec "'$HBDLAB' '$TMP/p.lua'" /dev/null > "$TMP/tty.out" 2>&1
check "runs under a pty" [ $? -eq 0 ]
csv_part=$(sed -n '1,/--between--/p' "$TMP/tty.out")
mem_part=$(sed -n '/--between--/,$p' "$TMP/tty.out")
check "sweep_to_csv draws the bar" contains "$csv_part" "100% 6000/6000"
check "hl.sweep draws the same bar" contains "$mem_part" "100% 6000/6000"
check "same format: points/s and ETA" contains "$csv_part" "points/s  ETA"
"$HBDLAB" "$TMP/p.lua" > "$TMP/pipe.out" 2>&1
check "no bar when stderr is not a terminal" sh -c "! grep -q 'points/s' '$TMP/pipe.out'"
check "the CSV holds every row" [ "$(wc -l < "$TMP/p.csv")" -eq 6001 ]
finish
