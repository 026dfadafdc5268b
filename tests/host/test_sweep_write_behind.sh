# hl.sweep_to_csv's file gets the write-behind (core/src/write_behind.c, hbdlab/io.h): past 64 MiB
# its written pages are handed to the disk and dropped from the page cache, so a long CSV leaves
# at most about KEEP (32 MiB) plus a chunk (8 MiB) of itself in the cache. Worked by hand for the
# ~80 MB file below (write_behind.c's rule, as tests/c/test_write_behind.c works it): by 80 MiB the
# first 48 MiB are dropped, so at most ~33 MiB of ~80 stay resident, under 60% of the file;
# without the write-behind (session 12 found the Lua writer never called it) all of it stays.
# Checked with fincore (util-linux-extra) on a disk file system only: tmpfs pages cannot be dropped.
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1

fs=$(stat -f -c %T "$TMP")
if ! command -v fincore > /dev/null || [ "$fs" = tmpfs ]; then
    echo "skip: page-cache residency needs fincore and a disk file system ($TMP is $fs)"
    exit 0
fi
cat > "$TMP/wb.lua" <<LUA
local inputs = {}
for i = 1, 100000 do inputs[i] = 1024 + i end
local n = hl.sweep_to_csv { base = { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 8 },
  parallel = { tp = 8 }, batch = 8, output = 16 }, axes = { { "output", { 16, 32, 64, 128, 256 } }, { "input", inputs } },
  out = "$TMP/wb.csv" }
print("rows", n)
LUA
"$HBDLAB" "$TMP/wb.lua" > "$TMP/wb.out" 2>&1
check "the sweep wrote 500,000 rows" grep -q "rows	500000" "$TMP/wb.out"
size=$(stat -c %s "$TMP/wb.csv")
res=$(fincore -b -n -o RES "$TMP/wb.csv" | tr -d ' ')
check "the CSV is past 70 MB ($size bytes)" [ "$size" -gt 70000000 ]
check "at most 60% of it is in the page cache ($res of $size bytes resident)" [ "$res" -lt $((size * 6 / 10)) ]
finish
