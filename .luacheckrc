-- luacheck configuration (Debian package lua-check), tuned to the code as
-- written; run by tools/lint.sh.
std = "lua54"
-- Lua lines here run long (tables of cases, format strings); 160 flags the outliers
max_line_length = 160
-- scripts, notebooks and tests run inside the hbdlab host, which defines `hl`
read_globals = { "hl" }
-- unused arguments are the Lua idiom for "not needed here" (callbacks, methods)
unused_args = false
-- `not (x > y)` is written on purpose: it is true for NaN, `x <= y` is not
ignore = { "581" }
-- the notebook runner captures a cell's output and exit by replacing io.write / os.exit
files["lua/hbdlab/notebook.lua"] = { ignore = { "122" } }
-- tables of cases, one case per line so that a failing case is found by grep
files["tests/lua/test_bad_input.lua"] = { max_line_length = false }
files["scripts/validate.lua"] = { max_line_length = false }
exclude_files = { "build/**", "build-*/**", "plots/out/**" }
