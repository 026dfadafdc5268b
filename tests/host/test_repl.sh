# Drives the REPL through a pseudo-terminal (tmux): printing without `return`,
# completion of globals and fields, multi-line chunks, error recovery, Ctrl-C.
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || { echo "tmux is required (tools/install-deps.sh installs it)"; exit 1; }

sock="$TMP/tmux.sock"
sess=repl
T() { tmux -S "$sock" "$@"; }
screen() { T capture-pane -p -t "$sess" -S -200; }
# wait_for TEXT: polls the screen for up to 5 s.
wait_for() {
    for _ in $(seq 100); do
        screen | grep -qF -- "$1" && return 0
        sleep 0.05
    done
    echo "--- screen ---" >&2; screen >&2
    return 1
}
T new-session -d -s "$sess" -x 160 -y 50 "env HOME=$TMP $HBDLAB"
trap 'T kill-server 2>/dev/null; rm -rf "$TMP"' EXIT

check "banner" wait_for "hl.help() lists the API"
T send-keys -t "$sess" '1 + 41' Enter
check "expression printed without return" wait_for "42"
T send-keys -t "$sess" '{b = 2, a = {1, 2}}' Enter
check "table pretty-printed with sorted keys" wait_for "{ a = { 1, 2 }, b = 2 }"
T send-keys -t "$sess" 'local lonely = 7' Enter 'lonely' Enter
check "a name declared local on an earlier line: nil with a hint" wait_for "lonely is nil here: \`local lonely\` lived only"
T send-keys -t "$sess" 'function sq(x)' Enter
check "continuation prompt" wait_for ">>"
T send-keys -t "$sess" 'return x * x end' Enter 'sq(12)' Enter
check "multi-line chunk defined a function" wait_for "144"
T send-keys -t "$sess" 'error("kaboom")' Enter
check "error reported" wait_for "kaboom"
T send-keys -t "$sess" 'print("still" .. "alive")' Enter
check "REPL survives an error" wait_for "stillalive"
T send-keys -t "$sess" 'hl.pre' Tab
check "completion of a field (hl.pre -> hl.pretty)" wait_for "hl.pretty"
T send-keys -t "$sess" '.form' Tab '({1})' Enter
check "completion of a nested field runs" wait_for '{ 1 }'
T send-keys -t "$sess" 'collectg' Tab '("count") > 0' Enter
check "completion of a global" wait_for "true"
T send-keys -t "$sess" 'g17 = hl.gpu("b200"); c17 = hl.cluster("hgx-h100")' Enter
T send-keys -t "$sess" 'g17:wi' Tab '{ eff_gemm = 0.5 }.eff_gemm' Enter
check "completion of an object method (g:wi -> g:with)" wait_for "0.5"
T send-keys -t "$sess" 'c17.gpu.eff_ge' Tab ' * 1000' Enter
check "completion of a field of an object's object (c.gpu.eff_ge -> eff_gemm)" wait_for "c17.gpu.eff_gemm * 1000"
T send-keys -t "$sess" 'c17.peer_c' Tab ' + 17' Enter
check "completion of an object's own field (c.peer_c -> peer_cost)" wait_for "c17.peer_cost + 17"
T send-keys -t "$sess" 'while true do end' Enter
sleep 0.3
T send-keys -t "$sess" C-c
check "Ctrl-C interrupts running code" wait_for "interrupted!"
T send-keys -t "$sess" 'print("after" .. "interrupt")' Enter
check "REPL survives Ctrl-C" wait_for "afterinterrupt"
T send-keys -t "$sess" C-d
sleep 0.3
check "history saved" grep -qF 'print("still" .. "alive")' "$TMP/.hbdlab_history"

# ---- issue 22: completion under a protected call; the history file opened safely, rewritten atomically
# repl NAME HOME [ULIMIT_F]: a fresh session with its own HOME
repl() {
    sess=$1
    T new-session -d -s "$sess" -x 160 -y 50 "${3:+ulimit -f $3; }env HOME=$2 $HBDLAB; echo REPL-EXIT-\$?; sleep 30"
}
mkdir -p "$TMP/h1"
repl r1 "$TMP/h1"
check "r1 banner" wait_for "hl.help() lists the API"
# an object whose __fields table has a __len that raises: Tab aborted the process (PANIC, exit 134)
T send-keys -t "$sess" 'o22 = setmetatable({}, { __fields = setmetatable({}, { __len = function() error("len fails") end }) })' Enter
T send-keys -t "$sess" 'o22.' Tab Tab
sleep 0.3
T send-keys -t "$sess" C-u 'print("survived" .. "tab")' Enter
check "Tab on an object whose __len raises: the REPL survives" wait_for "survivedtab"
check "... and did not abort" sh -c "! screen | grep -q 'PANIC\|REPL-EXIT'"
T send-keys -t "$sess" C-d
# a history file that is a symbolic link: its target was truncated in place
mkdir -p "$TMP/h2"
printf 'precious line\n' > "$TMP/h2/target"
ln -s target "$TMP/h2/.hbdlab_history"
repl r2 "$TMP/h2"
check "a linked history: said so" wait_for "is a symbolic link, not a regular file"
T send-keys -t "$sess" 'print(1 + 1)' Enter C-d
check "a linked history: the session runs" wait_for "REPL-EXIT-0"
check "a linked history: its target is untouched" [ "$(cat "$TMP/h2/target")" = "precious line" ]
check "a linked history: still a link" [ -L "$TMP/h2/.hbdlab_history" ]
# a FIFO as the history file blocked the start-up
mkdir -p "$TMP/h3"
mkfifo "$TMP/h3/.hbdlab_history"
repl r3 "$TMP/h3"
check "a FIFO history: the REPL starts and says so" wait_for "is a FIFO, not a regular file"
T send-keys -t "$sess" C-d
# a history rewrite over a file size limit lost lines (over 2,000 lines it was truncated in place): now the old file stays whole
mkdir -p "$TMP/h4"
for i in $(seq 2100); do echo "print($i) -- an old line of history"; done > "$TMP/h4/.hbdlab_history"
cp "$TMP/h4/.hbdlab_history" "$TMP/h4.before"
repl r4 "$TMP/h4" 8
check "r4 banner" wait_for "hl.help() lists the API"
T send-keys -t "$sess" 'print("over" .. "limit")' Enter
check "over a file size limit the REPL runs" wait_for "overlimit"
T send-keys -t "$sess" C-d
check "r4 exits" wait_for "REPL-EXIT-0"
check "over a file size limit: no line of history lost" cmp -s "$TMP/h4/.hbdlab_history" "$TMP/h4.before"
check "over a file size limit: no temp file left" sh -c "! ls -a '$TMP/h4' | grep -q tmp-"

finish
