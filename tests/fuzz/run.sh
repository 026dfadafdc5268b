#!/usr/bin/env bash
# Fuzzes each libFuzzer target for SECONDS (default 60) with clang's
# -fsanitize=fuzzer,address,undefined,float-cast-overflow (undefined behaviour stops the run: a finding).
# Needs clang and libclang-rt-14-dev
# (Debian). New interesting inputs land in build-fuzz/corpus/<target>; copy
# the ones worth keeping into tests/fuzz/corpus/<target> (CI replays those).
#   tests/fuzz/run.sh [SECONDS] [TARGET...]     targets: json_config json_text hf_config sim lua_presets serve
# FUZZ_OUT=DIR builds and keeps corpora in DIR (default build-fuzz), so two campaigns can run at once.
# Each campaign prints libFuzzer's final stats and the number of new corpus units.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
shift || true
targets=${*:-json_config json_text hf_config sim lua_presets serve}
cc=${CC_FUZZ:-clang}
command -v "$cc" > /dev/null || { echo "run.sh: clang is required (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }
out=${FUZZ_OUT:-build-fuzz}
mkdir -p "$out"
# the core, built once with the fuzzing instrumentation
objs=()
for src in core/src/*.c; do
    o="$out/$(basename "${src%.c}").o"
    "$cc" -std=c11 -D_POSIX_C_SOURCE=200809L -DHBDLAB_VERSION='"fuzz"' -O1 -g -fsanitize=fuzzer-no-link,address,undefined,float-cast-overflow -fno-sanitize-recover=all \
        -Icore/include -Icore/src -Ibuild/generated -c "$src" -o "$o"
    objs+=("$o")
done
cmake -DOUT="$PWD/$out/presets_data.c" -DSYMBOL=hl_embedded_presets -DBASE="$PWD/core/presets" \
      "-DFILES=$(ls core/presets/*/*.json | sed "s|^|$PWD/|" | paste -sd'|')" -P cmake/embed.cmake
"$cc" -O1 -g -fsanitize=fuzzer-no-link,address -Icore/src -c "$out/presets_data.c" -o "$out/presets_data.o"
objs+=("$out/presets_data.o")
# the Lua bindings and the embedded Lua library, for lua_presets
lua_objs=()
case " $targets " in *" lua_presets "* | *" serve "*)
    luaflags=$(pkg-config --cflags lua5.4)
    for src in lua/bind/l_*.c; do
        o="$out/bind_$(basename "${src%.c}").o"
        # the bindings' include path (CMakeLists.txt): their own tree and the public core headers
        # shellcheck disable=SC2086
        "$cc" -std=c11 -D_POSIX_C_SOURCE=200809L -O1 -g -fsanitize=fuzzer-no-link,address,undefined,float-cast-overflow -fno-sanitize-recover=all $luaflags \
            -Ilua/bind -Icore/include -c "$src" -o "$o"
        lua_objs+=("$o")
    done
    # the embedded library as the build makes it (sources and precompiled chunks, cmake/lua_chunks.c)
    # shellcheck disable=SC2046
    "$cc" -O1 $(pkg-config --cflags lua5.4) cmake/lua_chunks.c $(pkg-config --libs lua5.4) -o "$out/lua_chunks"
    # shellcheck disable=SC2046
    "$out/lua_chunks" "$PWD/$out/lua_data.c" "$PWD/lua" $(ls lua/hbdlab/*.lua | sed "s|^|$PWD/|") --text hbdlab/plot_style.lua "$PWD/plots/style.gp"
    "$cc" -O1 -g -fsanitize=fuzzer-no-link,address -Ilua/bind -c "$out/lua_data.c" -o "$out/lua_data.o"
    lua_objs+=("$out/lua_data.o")
    ;;
esac
for t in $targets; do
    corpus_src=tests/fuzz/corpus/${t%_config}
    [ "$t" = json_config ] && corpus_src=tests/fuzz/corpus/json
    [ "$t" = json_text ] && corpus_src=tests/fuzz/corpus/json
    [ "$t" = hf_config ] && corpus_src=tests/fuzz/corpus/hf
    [ "$t" = sim ] && corpus_src=tests/fuzz/corpus/sim
    [ "$t" = lua_presets ] && corpus_src=tests/fuzz/corpus/lua_presets
    [ "$t" = serve ] && corpus_src=tests/fuzz/corpus/serve
    work="$out/corpus/$t"
    mkdir -p "$work"
    cp -n "$corpus_src"/* "$work"/ 2> /dev/null || true
    extra=()
    [ "$t" = lua_presets ] || [ "$t" = serve ] && extra=("${lua_objs[@]}" $(pkg-config --cflags --libs lua5.4))
    "$cc" -std=c11 -D_POSIX_C_SOURCE=200809L -O1 -g -fsanitize=fuzzer,address,undefined,float-cast-overflow -fno-sanitize-recover=all -Icore/include \
        "tests/fuzz/fuzz_$t.c" "${objs[@]}" "${extra[@]}" -lcjson $(pkg-config --libs gsl 2> /dev/null || echo -lgsl -lgslcblas) -lm -lpthread -o "$out/fuzz_$t"
    before=$(ls "$work" | wc -l)
    echo "== fuzzing $t for ${secs}s"
    "$out/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$out/crash-$t-" "$work" 2>&1 | tee "$out/fuzz_$t.log" | grep -E "^#[0-9]+ +DONE|stat::|ERROR|crash" || true
    echo "== $t: corpus $before -> $(ls "$work" | wc -l) units; artifacts: $(ls "$out" | grep -c "^crash-$t-" || true)"
done
