#!/usr/bin/env bash
# scripts/run-study.sh scenarios/studies/NAME.yaml [trnsim options...]
#
# Runs one study and writes its report: `trnsim plan` for a plan file (one with a search
# section), `trnsim batch` for a sweep file, into results/studies/NAME.h5, then
# analysis/report.py into docs/studies/NAME/ (index.html and the PNGs the write-up
# docs/studies/NAME.md shows). Builds trnsim first when needed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ $# -lt 1 ]]; then
    echo "usage: scripts/run-study.sh scenarios/studies/NAME.yaml [trnsim options...]" >&2
    exit 2
fi
file="$1"
shift
name="$(basename "$file" .yaml)"
"$root/scripts/setup.sh" >/dev/null
trnsim="${TRNSIM_BUILD_DIR:-$root/build}/src/cli/trnsim"
command=batch
if grep -q '^search:' "$file"; then
    command=plan
fi
mkdir -p "$root/results/studies"
"$trnsim" "$command" "$file" -o "$root/results/studies/$name.h5" "$@"
/usr/bin/python3 "$root/analysis/report.py" "$root/results/studies/$name.h5" \
    -o "$root/docs/studies/$name" --dpi 70
