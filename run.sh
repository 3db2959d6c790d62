#!/usr/bin/env bash
# ./run.sh [SCENARIO.yaml] [trnsim run options...]
# Installs what is missing, builds, and runs a scenario (default: scenarios/default.yaml).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/setup.sh" >&2

scenario="scenarios/default.yaml"   # relative to $root, as it prints
if [[ $# -gt 0 && "$1" != -* ]]; then
    scenario="$1"
    shift
fi
cd "$root"
exec "${TRNSIM_BUILD_DIR:-$root/build}/src/cli/trnsim" run "$scenario" "$@"
