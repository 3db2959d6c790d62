#!/usr/bin/env bash
# scripts/sanitize.sh [asan|tsan|all]
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer over the whole test suite (g++)
#   tsan  ThreadSanitizer over the engine tests and a PHOLD run on 2 and 4 threads (clang 14
#         with LLVM's OpenMP runtime: GCC's libgomp hands work to its threads in ways TSan
#         cannot see, which produces false reports)
# Builds into build-asan/ and build-tsan/ with the CMake presets of CMakePresets.json.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
what="${1:-all}"

"$root/scripts/setup.sh" >/dev/null # the Release build's packages (and a Release build)

need_tsan_packages() {
    local missing=()
    for p in clang-14 libomp-14-dev; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]} > 0)); then
        if [[ $(id -u) -eq 0 ]]; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                "${missing[@]}" >/dev/null
        else
            echo "sanitize: install first: sudo apt-get install -y ${missing[*]}" >&2
            exit 1
        fi
    fi
}

run_asan() {
    echo "== AddressSanitizer + UndefinedBehaviorSanitizer: whole suite"
    [[ -f build-asan/build.ninja ]] || cmake --preset asan >/dev/null
    cmake --build --preset asan --parallel "$(nproc)"
    ctest --preset asan --parallel "$(nproc)"
}

run_tsan() {
    echo "== ThreadSanitizer: engine tests and PHOLD on 2 and 4 threads"
    need_tsan_packages
    [[ -f build-tsan/build.ninja ]] || cmake --preset tsan >/dev/null
    cmake --build --preset tsan --parallel "$(nproc)"
    ctest --preset tsan --parallel "$(nproc)"
    export TSAN_OPTIONS="ignore_noninstrumented_modules=1:halt_on_error=1"
    # Every window shared with the helper threads, then as the sharing policy picks.
    for sharing in always adaptive; do
        for threads in 2 4; do
            TRNSIM_WINDOW_SHARING=$sharing build-tsan/tests/bench/phold_bench --entities 20000 \
                --events 2 --end 20000 --partitions 16 --threads "$threads" --repeat 1 \
                --queue calendar | tail -1
        done
    done
}

case "$what" in
asan) run_asan ;;
tsan) run_tsan ;;
all) run_asan && run_tsan ;;
*) echo "usage: scripts/sanitize.sh [asan|tsan|all]" >&2; exit 2 ;;
esac
echo "sanitize: $what passed"
