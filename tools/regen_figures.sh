#!/usr/bin/env bash
# Regenerates the figures of the docs (docs/figures/*.png) from the committed data and gnuplot
# scripts under plots/, as plots/figures.txt lists them; gnuplot is all it needs.
#   tools/regen_figures.sh [--refresh | --check] [--out DIR] [--plots DIR] [--hbdlab PATH]
#     --refresh      first re-run each figure's owning script (the "owner" lines, with
#                    `--set out=...` into a temp folder) and copy the .dat + .gp it wrote into
#                    plots/, so the figures follow the model, the scripts and plots/style.gp
#     --check        re-run the owners into a temp folder only, draw nothing, and list every
#                    committed .dat/.gp that differs from what they write now (exit 1 if any)
#     --out DIR      write the PNGs into DIR instead of docs/figures
#     --plots DIR    read (and with --refresh, rewrite) DIR/figures.txt and its sources instead
#                    of plots/ (a copy, for tests/host/test_figures.sh)
#     --hbdlab PATH  the hbdlab used by --refresh (default $HBDLAB, else build/hbdlab)
# Each .gp runs in a temp copy of its folder (it reads its .dat by a relative name), and a PNG
# replaces the old one only when gnuplot wrote it whole. Exit 0 when every figure was drawn;
# 1 when --check found stale sources; 2 on any error.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
refresh=0
check=0
out=$root/docs/figures
hbdlab=${HBDLAB:-$root/build/hbdlab}
plots=$root/plots
die() { echo "regen_figures: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --refresh) refresh=1 ;;
        --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift ;;
        --hbdlab) [ $# -ge 2 ] || die "--hbdlab needs a path"; hbdlab=$2; shift ;;
        --plots) [ $# -ge 2 ] || die "--plots needs a folder"; plots=$2; shift ;;
        --check) refresh=1; check=1 ;;
        -h | --help) sed -n '2,16s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) die "unknown argument '$1' (allowed: --refresh, --check, --out DIR, --plots DIR, --hbdlab PATH)" ;;
    esac
    shift
done
command -v gnuplot > /dev/null || die "gnuplot is required (tools/install-deps.sh installs gnuplot-nox)"
mkdir -p "$out"
out=$(cd "$out" && pwd)
case $hbdlab in /*) ;; *) hbdlab=$PWD/$hbdlab ;; esac
[ -d "$plots" ] || die "--plots: no folder $plots"
plots=$(cd "$plots" && pwd)
cd "$root" # the owners run from the source root (their default paths, scripts/hbd/study.lua)
manifest=$plots/figures.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The manifest: "owner DIR SCRIPT" and "figure NAME SOURCE" lines; names are plain paths.
owners=() figures=() sources=() stale=()
line_no=0
while IFS= read -r line || [ -n "$line" ]; do
    line_no=$((line_no + 1))
    case $line in '' | '#'*) continue ;; esac
    read -r kind a b rest <<< "$line"
    if [ -z "${b:-}" ] || [ -n "${rest:-}" ]; then
        die "$manifest:$line_no: expected 'owner DIR SCRIPT' or 'figure NAME SOURCE'"
    fi
    for v in "$a" "$b"; do
        [[ $v =~ ^[A-Za-z0-9_][A-Za-z0-9_./-]*$ && $v != *..* ]] || die "$manifest:$line_no: '$v' is not a plain relative path"
    done
    case $kind in
        owner) owners+=("$a $b") ;;
        figure) figures+=("$a"); sources+=("$b") ;;
        *) die "$manifest:$line_no: unknown entry '$kind' (allowed: owner, figure)" ;;
    esac
done < "$manifest"
[ ${#figures[@]} -gt 0 ] || die "$manifest lists no figure"

if [ "$refresh" = 1 ]; then
    [ -x "$hbdlab" ] || die "--refresh needs hbdlab: $hbdlab is not executable (build it, or pass --hbdlab)"
    for o in "${owners[@]}"; do
        read -r dir script <<< "$o"
        echo "regen_figures: $script -> plots/$dir/"
        "$hbdlab" "$script" --set "out=$tmp/fresh/$dir" > "$tmp/owner.log" 2>&1 ||
            { cat "$tmp/owner.log" >&2; die "$script failed"; }
    done
    for i in "${!figures[@]}"; do
        src=${sources[$i]}
        for ext in dat gp; do
            [ -f "$tmp/fresh/$src.$ext" ] || die "no owner wrote plots/$src.$ext (figure ${figures[$i]})"
        done
        if [ "$check" = 1 ]; then
            for ext in dat gp; do
                cmp -s "$tmp/fresh/$src.$ext" "$plots/$src.$ext" || stale+=("plots/$src.$ext")
            done
            continue
        fi
        mkdir -p "$plots/$(dirname "$src")"
        cp "$tmp/fresh/$src.dat" "$plots/$src.dat"
        cp "$tmp/fresh/$src.gp" "$plots/$src.gp"
    done
fi
if [ "$check" = 1 ]; then
    [ ${#stale[@]} -eq 0 ] && { echo "regen_figures: every source is what its owner writes now"; exit 0; }
    printf 'regen_figures: stale (differs from what its owner writes now): %s\n' "${stale[@]}"
    echo "regen_figures: run tools/regen_figures.sh --refresh and commit plots/ and docs/figures/"
    exit 1
fi

# Draws each figure: its .dat + .gp copied alone into a temp folder, gnuplot run there (the .gp
# names its default output, SOURCE's base name .png), the PNG checked whole, then moved into place.
for i in "${!figures[@]}"; do
    name=${figures[$i]} src=${sources[$i]}
    base=$(basename "$src")
    for ext in dat gp; do
        [ -f "$plots/$src.$ext" ] || die "plots/$src.$ext is missing (figure $name); run with --refresh"
    done
    work=$tmp/draw/$name
    mkdir -p "$work"
    cp "$plots/$src.dat" "$plots/$src.gp" "$work/"
    (cd "$work" && gnuplot "$base.gp") > "$tmp/gnuplot.log" 2>&1 ||
        { cat "$tmp/gnuplot.log" >&2; die "gnuplot failed on plots/$src.gp"; }
    png=$work/$base.png
    [ "$(tail -c 8 "$png" 2> /dev/null | od -An -tx1 | tr -d ' \n')" = 49454e44ae426082 ] ||
        die "plots/$src.gp did not write a complete $base.png"
    cp "$png" "$out/.$name.png.tmp"
    mv -f "$out/.$name.png.tmp" "$out/$name.png"
done
echo "regen_figures: ${#figures[@]} figures drawn into $out"
