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

finish
