#!/usr/bin/env bash
# ./test.sh [ctest options...]
# Installs what is missing, builds, and runs the whole test suite. Exits non-zero on any failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/setup.sh"
build_dir="${TRNSIM_BUILD_DIR:-$root/build}"
ctest --test-dir "$build_dir" --output-on-failure --parallel "${TRNSIM_JOBS:-$(nproc)}" "$@"
