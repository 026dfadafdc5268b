# cmake --install into a temporary prefix, then build a C program against it
# with pkg-config and with find_package(hbdlab), and run both.
. "$(dirname "$0")/lib.sh"
prefix="$TMP/prefix"
cmake --install "$HBDLAB_BUILD_DIR" --prefix "$prefix" > "$TMP/install.log" 2>&1
check "cmake --install succeeds" [ $? -eq 0 ]
for f in bin/hbdlab include/hbdlab/hbdlab.h share/hbdlab/hbdlab_cdef.h; do
    check "installed $f" [ -e "$prefix/$f" ]
done
libdir=$(ls -d "$prefix"/lib*/pkgconfig | head -n1); libdir=${libdir%/pkgconfig}
check "installed libhbdlab.so" [ -e "$libdir/libhbdlab.so" ]
check "installed libhbdlab.a" [ -e "$libdir/libhbdlab.a" ]
check "installed Lua module" [ -e "$libdir/lua/5.4/hbdlab.so" ]
check "installed CMake config" [ -e "$libdir/cmake/hbdlab/hbdlabConfig.cmake" ]

flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs hbdlab)
# the build's compiler and its sanitizer flags (a clang-instrumented library needs clang's runtime)
cc=${HBDLAB_CC:-cc}
# shellcheck disable=SC2086
"$cc" -std=c11 -pedantic ${HBDLAB_SAN_FLAGS:-} -Wall -Wextra -Werror "$HBDLAB_SOURCE_DIR/tests/install/consumer.c" $flags -o "$TMP/consumer"
check "consumer builds with pkg-config" [ $? -eq 0 ]
# no LD_LIBRARY_PATH: the pkg-config flags carry an rpath to the prefix's lib folder
out=$(env -u LD_LIBRARY_PATH LD_PRELOAD="${HBDLAB_PRELOAD:-}" "$TMP/consumer")
check "consumer runs without LD_LIBRARY_PATH (rpath)" contains "$out" "consumer ok"

mkdir -p "$TMP/cm"
cat > "$TMP/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(hbdlab REQUIRED)
add_executable(consumer $HBDLAB_SOURCE_DIR/tests/install/consumer.c)
target_link_libraries(consumer PRIVATE hbdlab::hbdlab)
CM
cmake -S "$TMP/cm" -B "$TMP/cm/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
      "-DCMAKE_C_FLAGS=${HBDLAB_SAN_FLAGS:-}" > "$TMP/cm.log" 2>&1 &&
    cmake --build "$TMP/cm/build" >> "$TMP/cm.log" 2>&1
check "consumer builds with find_package(hbdlab)" [ $? -eq 0 ] || cat "$TMP/cm.log"
out=$(env -u LD_LIBRARY_PATH LD_PRELOAD="${HBDLAB_PRELOAD:-}" "$TMP/cm/build/consumer")
check "find_package consumer runs without LD_LIBRARY_PATH (CMake's rpath)" contains "$out" "consumer ok"

out=$(env -u LD_LIBRARY_PATH "$prefix/bin/hbdlab" -e 'print(hl.version)')
check "installed hbdlab runs" [ -n "$out" ]
# the MPI plugin (loaded only under a launcher) is found from the installed executable's folder
if [ "$("$prefix/bin/hbdlab" -e 'io.write(tostring(hl.core.dist().have_mpi))')" = true ] && command -v mpirun > /dev/null; then
    check "installed MPI plugin" [ -e "$libdir/hbdlab/hbdlab_mpi.so" ]
    out=$(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 120 mpirun --allow-run-as-root \
        --oversubscribe -n 2 "$prefix/bin/hbdlab" -e 'io.write("ranks=", hl.core.dist().count, "\n")' 2>&1)
    check "installed hbdlab under mpirun loads the plugin (2 ranks)" contains "$out" "ranks=2"
fi
finish
