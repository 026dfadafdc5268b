# What a newcomer from a clean clone hit (session 8): each subcommand's --help, the examples
# for the users' questions. Each check failed before its fix.
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1

# ---- `hbdlab SUB --help`: the usage and the fields the JSON takes, exit 0 ----
# calibrate read --help as a file name ("cannot read --help", exit 1), merge as a shard (exit 2);
# eval / serve / frontier / walkthrough printed a usage line that did not say which fields exist
help_has() { # SUB FIELD: --help exits 0, prints its usage and names FIELD, a field of its JSON
    "$HBDLAB" "$1" --help > "$TMP/help.out" 2> "$TMP/help.err"
    local rc=$?
    check "hbdlab $1 --help exits 0 (rc $rc: $(head -c 200 "$TMP/help.err"))" [ "$rc" -eq 0 ]
    check "hbdlab $1 --help prints its usage" grep -q "^usage: hbdlab $1" "$TMP/help.out"
    check "hbdlab $1 --help names the field '$2'" grep -qw -- "$2" "$TMP/help.out"
    check "hbdlab $1 --help writes nothing on stderr" test ! -s "$TMP/help.err"
}
help_has eval batch
help_has eval precision
help_has serve max_seqs
help_has serve token_budget
help_has frontier systems
help_has frontier tps_per_user
help_has walkthrough batch
help_has calibrate bounds
help_has merge ALL.csv
out=$("$HBDLAB" --help)
check "hbdlab --help says where a subcommand's fields are" contains "$out" "SUBCOMMAND --help"

finish
