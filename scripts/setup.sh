#!/usr/bin/env bash
# Shared by ./run.sh and ./test.sh: install missing Debian packages, then configure and build
# Release into build/. Idempotent: a second run only rebuilds what changed.
#
# Environment: TRNSIM_BUILD_DIR (default build), TRNSIM_JOBS (default: all cores),
# TRNSIM_CMAKE_ARGS (extra configure arguments).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${TRNSIM_BUILD_DIR:-$root/build}"
jobs="${TRNSIM_JOBS:-$(nproc)}"

# Every dependency, as Debian 12 packages.
packages=(
    g++ make cmake ninja-build ccache pkg-config
    libboost-graph-dev libboost-program-options-dev
    libhdf5-dev zlib1g-dev libyaml-cpp-dev libgtest-dev librandom123-dev libeigen3-dev nlohmann-json3-dev
    libopenmpi-dev openmpi-bin
    python3 python3-dev python3-h5py python3-pandas python3-matplotlib pybind11-dev
    chromium                # tests/analysis/test_browser.py renders the HTML reports
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if ((${#missing[@]} > 0)); then
    if [[ $(id -u) -eq 0 ]]; then
        echo "trnsim: installing Debian packages: ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "trnsim: missing Debian packages. Install them with:" >&2
        echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
        echo "then run this command again." >&2
        exit 1
    fi
fi

launcher=()
if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

if [[ ! -f "$build_dir/build.ninja" ]]; then
    # shellcheck disable=SC2086
    cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
        ${TRNSIM_CMAKE_ARGS:-} >/dev/null
fi
cmake --build "$build_dir" --parallel "$jobs"
