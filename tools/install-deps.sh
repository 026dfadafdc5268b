#!/bin/sh
# Installs the Debian 12 packages hbdlab needs, only those missing. Idempotent:
# a second run installs nothing and says so. Works as root; uses sudo otherwise.
set -eu

# Build and runtime
PKGS="gcc make cmake pkg-config liblua5.4-dev lua5.4 libcjson-dev libreadline-dev gnuplot-nox"
# Calibration: GSL nonlinear least squares (multifit_nlinear)
PKGS="$PKGS libgsl-dev"
# Fonts the figures name (Liberation Sans) and a fallback, so figures render text on a bare machine
PKGS="$PKGS fonts-liberation fonts-dejavu-core"
# Sweeps across processes: Open MPI (optional at build time: found -> the MPI mode is built; CI runs its test)
PKGS="$PKGS openmpi-bin libopenmpi-dev"
# Tests: cmocka (C unit tests), luajit (FFI test), tmux (drives the REPL in a pty)
PKGS="$PKGS libcmocka-dev luajit tmux"
# Tests: valgrind runs every C test program in CI (tests/valgrind.sh)
PKGS="$PKGS valgrind"
# Tests: fincore (util-linux-extra) reads how much of a written CSV the page cache holds (test_sweep_write_behind.sh)
PKGS="$PKGS util-linux-extra"
# Tests: clang builds the sanitizer configuration in CI (-fsanitize=float-cast-overflow) and the fuzz
# targets (libFuzzer's runtime is in libclang-rt-14-dev)
PKGS="$PKGS clang libclang-rt-14-dev"
# Tests: chromium renders the notebook report, imagemagick measures its screenshot
PKGS="$PKGS chromium imagemagick"
# Lint (tools/lint.sh): clang-format for C, luacheck for Lua
PKGS="$PKGS clang-format lua-check"

missing=""
for p in $PKGS; do
    if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        :
    else
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "install-deps: all $(echo $PKGS | wc -w) packages already installed; nothing to do"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-deps: need root or sudo to install:$missing" >&2
    exit 1
fi

echo "install-deps: installing:$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: installed:$missing"
