# tools/check_and.awk: a test's `check NAME COND...` counts COND's status only; in
# `check NAME A && B` the shell runs B outside check, so B's failure is never counted
# (`check NAME A || diagnostics` is fine: check fails when A does). Prints every such
# line (continuation lines joined); quoted text, $(...) and comments are skipped. tools/lint.sh runs it.
function scan(s,    i, c, n, stack, top, out) {
    top = 0; stack[0] = "n"; out = ""
    n = length(s)
    for (i = 1; i <= n; i++) {
        c = substr(s, i, 1)
        st = stack[top]
        if (st == "s") { if (c == "'") top--; continue }
        if (c == "\\") { i++; continue }
        if (st == "d") {
            if (c == "\"") top--
            else if (c == "$" && substr(s, i + 1, 1) == "(") { stack[++top] = "p"; i++ }
            continue
        }
        # normal text or inside $(...)
        if (c == "'") { stack[++top] = "s"; continue }
        if (c == "\"") { stack[++top] = "d"; continue }
        if (c == "$" && substr(s, i + 1, 1) == "(") { stack[++top] = "p"; i++; continue }
        if (st == "p") { if (c == "(") stack[++top] = "p"; else if (c == ")") top--; continue }
        if (c == "#" && (i == 1 || substr(s, i - 1, 1) ~ /[ \t]/)) break
        out = out c
    }
    return out
}
{
    line = $0; start = FNR
    while (line ~ /\\$/ && (getline nxt) > 0) { sub(/\\$/, "", line); line = line " " nxt }
    if (line !~ /^[ \t]*check[ \t]/) next
    bare = scan(line)
    if (bare ~ /&&/) { print FILENAME ":" start ": `check NAME A && B` counts A only (write two checks): " line; bad = 1 }
}
END { exit bad }
