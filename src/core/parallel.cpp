#include "trnsim/core/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace trnsim {

void parallel_for(std::size_t n, int threads,
                  const std::function<void(std::size_t index, int worker)>& work,
                  std::size_t chunk) {
    if (n == 0) {
        return;
    }
    chunk = std::max<std::size_t>(chunk, 1);
    const std::size_t chunks = n / chunk + (n % chunk != 0 ? 1 : 0);
    const std::size_t team = std::min(static_cast<std::size_t>(std::max(threads, 1)), chunks);
    if (team <= 1) {
        for (std::size_t i = 0; i < n; ++i) {
            work(i, 0);
        }
        return;
    }

    std::atomic<std::size_t> next_chunk{0};
    std::atomic<bool> stop{false};
    std::mutex mutex;
    std::size_t failed_index = std::numeric_limits<std::size_t>::max();
    std::exception_ptr failure;
    const auto run = [&](int worker) {
        // A chunk, once taken, runs to its end or to its own exception: every index below a
        // failing one is thus run, and the lowest failing index is the sequential loop's.
        while (!stop.load(std::memory_order_relaxed)) {
            const std::size_t c = next_chunk.fetch_add(1, std::memory_order_relaxed);
            if (c >= chunks) {
                return;
            }
            const std::size_t first = c * chunk;
            const std::size_t last = std::min(n, first + chunk);
            for (std::size_t i = first; i < last; ++i) {
                try {
                    work(i, worker);
                } catch (...) {
                    const std::lock_guard<std::mutex> lock(mutex);
                    if (i < failed_index) {
                        failed_index = i;
                        failure = std::current_exception();
                    }
                    stop.store(true, std::memory_order_relaxed);
                    return;
                }
            }
        }
    };

    std::vector<std::thread> helpers;
    helpers.reserve(team - 1);
    for (std::size_t k = 1; k < team; ++k) {
        try {
            helpers.emplace_back(run, static_cast<int>(k));
        } catch (const std::system_error&) {
            break; // no more threads to be had: the ones started (and the caller) do it all
        }
    }
    run(0);
    for (std::thread& t : helpers) {
        t.join();
    }
    if (failure) {
        std::rethrow_exception(failure);
    }
}

} // namespace trnsim
