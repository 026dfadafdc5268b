# Warnings for silent defaults: a prompt + output beyond the model's context
# limit, and no `parallel` on a multi-GPU cluster (the mapping used is stated);
# once per message; hl.warnings(false) silences them.
. "$(dirname "$0")/lib.sh"
cd "$HBDLAB_SOURCE_DIR" || exit 1
err=$("$HBDLAB" -e 'for i = 1, 3 do hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 },
  input = 130000, output = 2000 } end' 2>&1 >/dev/null)
check "context warning" contains "$err" "warning: input + output = 132000 tokens is beyond llama-3.1-8b's context limit of 131072 tokens"
check "once per message" [ "$(printf '%s\n' "$err" | grep -c 'context limit')" -eq 1 ]
err=$("$HBDLAB" -e 'hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", batch = 8 }' 2>&1 >/dev/null)
check "no parallel on 8 GPUs: the mapping is stated" contains "$err" "'parallel' is not given for a 8-GPU cluster: mapped as tp 1, pp 1, ep 1, dp 8"
err=$("$HBDLAB" -e 'hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100" }' 2>&1)
check "a job that then fails still says why" contains "$err" "'parallel' is not given for a 8-GPU cluster"
err=$("$HBDLAB" -e 'hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 } }' 2>&1)
check "no warning when the mapping is given" [ -z "$err" ]
err=$("$HBDLAB" -e 'hl.simulate { model = "llama-3.1-8b", cluster = { gpu = "H100", gpus = 1 } }' 2>&1)
check "no warning on one GPU" [ -z "$err" ]
err=$("$HBDLAB" -e 'hl.warnings(false); hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", batch = 8, input = 200000 }' 2>&1)
check "hl.warnings(false) silences" [ -z "$err" ]
err=$("$HBDLAB" -e 'hl.warnings(0)' 2>&1)
check "hl.warnings(0) is refused (0 is true in Lua: it left the warnings on)" contains "$err" "hl.warnings: expected true or false, got number 0"
err=$("$HBDLAB" -e 'hl.sweep { base = { model = "llama-3.1-8b", cluster = "hgx-h100", batch = 8 }, axes = { input = { 1024 } } }' 2>&1)
check "a sweep base without parallel warns too" contains "$err" "'parallel' is not given"
err=$("$HBDLAB" -e 'hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, spec_accept = 0.7 }' 2>&1)
check "spec_accept without spec_tokens says it does nothing" contains "$err" "warning: spec_accept has no effect without spec_tokens >= 1"
err=$("$HBDLAB" -e 'hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, spec_accept = 0.7, spec_tokens = 1 }' 2>&1)
check "no warning with spec_tokens" [ -z "$err" ]
finish
