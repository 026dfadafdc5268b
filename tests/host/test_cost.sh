# scripts/hbd/cost.lua: prints USD/Mtok and J/token for HBD 8..128 per precision
# and writes its three charts; the break-even scale-up price of HBD 8 is its own price.
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1
out=$("$HBDLAB" scripts/hbd/cost.lua --set out="$TMP/figs" 2>&1)
rc=$?
check "cost.lua exits 0" [ "$rc" -eq 0 ]
check "header names the prices used" contains "$out" "0.08 USD/kWh, PUE 1.30, 5-year amortisation"
check "columns" contains "$out" "usd_per_mtok  usd_per_mtok_in  usd_per_mtok_out  joules_per_token"
for p in fp16 fp8 fp4; do
    for h in 8 16 32 64 128; do
        n=$(printf '%s\n' "$out" | awk -v p=$p -v h=$h '$1 == p && $2 == h && $4 > 0 && $7 > 0' | wc -l)
        check "row $p HBD $h with positive USD/Mtok and J/token" [ "$n" -eq 1 ]
    done
    n=$(printf '%s\n' "$out" | awk -v p=$p '$1 == p && $2 == 8 && $3 == $10 && $9 == 1' | wc -l)
    check "$p HBD 8: break-even equals its own price, cost ratio 1" [ "$n" -eq 1 ]
done
for f in cost_usd_per_mtok cost_joules_per_token cost_breakeven; do
    check "$f.png written" [ -s "$TMP/figs/$f.png" ]
done
# A dearer kWh raises every cost and leaves J/token unchanged.
out2=$("$HBDLAB" scripts/hbd/cost.lua --set out="$TMP/figs" --set usd_per_kwh=0.16 --set quiet=true 2>&1)
a=$(printf '%s\n' "$out" | awk '$1 == "fp8" && $2 == 64 {print $4, $7}')
b=$(printf '%s\n' "$out2" | awk '$1 == "fp8" && $2 == 64 {print $4, $7}')
check "dearer electricity costs more per token ($a -> $b)" awk -v a="$a" -v b="$b" \
    'BEGIN { split(a, x, " "); split(b, y, " "); exit !(y[1] > x[1] && y[2] == x[2]) }'
finish
