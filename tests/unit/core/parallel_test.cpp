#include "trnsim/core/parallel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace trnsim {
namespace {

using namespace std::chrono_literals;

TEST(ParallelFor, EveryIndexRunsExactlyOnce) {
    for (const std::size_t n : {0u, 1u, 2u, 3u, 7u, 64u, 1000u}) {
        for (const int threads : {-1, 0, 1, 2, 3, 8, 64}) {
            for (const std::size_t chunk : {0u, 1u, 3u, 16u, 5000u}) {
                std::vector<std::atomic<int>> runs(n);
                std::atomic<int> out_of_range{0};
                const int limit = std::max(threads, 1);
                parallel_for(
                    n, threads,
                    [&](std::size_t i, int worker) {
                        runs[i].fetch_add(1);
                        if (worker < 0 || worker >= limit) {
                            out_of_range.fetch_add(1);
                        }
                    },
                    chunk);
                for (std::size_t i = 0; i < n; ++i) {
                    ASSERT_EQ(runs[i].load(), 1)
                        << "index " << i << " of n " << n << ", threads " << threads
                        << ", chunk " << chunk;
                }
                EXPECT_EQ(out_of_range.load(), 0)
                    << "n " << n << ", threads " << threads << ", chunk " << chunk;
            }
        }
    }
}

TEST(ParallelFor, OneThreadRunsInlineInOrder) {
    const auto caller = std::this_thread::get_id();
    std::vector<std::size_t> order;
    bool elsewhere = false;
    parallel_for(50, 1, [&](std::size_t i, int worker) {
        order.push_back(i);
        elsewhere = elsewhere || worker != 0 || std::this_thread::get_id() != caller;
    });
    ASSERT_EQ(order.size(), 50u);
    for (std::size_t i = 0; i < order.size(); ++i) {
        EXPECT_EQ(order[i], i);
    }
    EXPECT_FALSE(elsewhere);
}

TEST(ParallelFor, RunsOnSeveralThreadsAtOnce) {
    // Every item waits for the others: only a team of four running together gets through.
    constexpr int kThreads = 4;
    std::atomic<int> arrived{0};
    std::atomic<int> timed_out{0};
    std::mutex mutex;
    std::map<int, std::thread::id> thread_of_worker;
    parallel_for(kThreads, kThreads, [&](std::size_t, int worker) {
        {
            const std::lock_guard<std::mutex> lock(mutex);
            thread_of_worker[worker] = std::this_thread::get_id();
        }
        arrived.fetch_add(1);
        const auto give_up = std::chrono::steady_clock::now() + 20s;
        while (arrived.load() < kThreads) {
            if (std::chrono::steady_clock::now() > give_up) {
                timed_out.fetch_add(1);
                return;
            }
            std::this_thread::yield();
        }
    });
    EXPECT_EQ(timed_out.load(), 0);
    ASSERT_EQ(thread_of_worker.size(), static_cast<std::size_t>(kThreads));
    EXPECT_EQ(thread_of_worker.at(0), std::this_thread::get_id()); // the caller is worker 0
    for (int a = 0; a < kThreads; ++a) {
        for (int b = a + 1; b < kThreads; ++b) {
            EXPECT_NE(thread_of_worker.at(a), thread_of_worker.at(b));
        }
    }
}

TEST(ParallelFor, NoTwoConcurrentCallsShareAWorker) {
    for (const int threads : {2, 3, 5}) {
        constexpr std::size_t kCount = 300;
        std::vector<std::atomic<bool>> busy(static_cast<std::size_t>(threads));
        std::atomic<int> clashes{0};
        std::mutex mutex;
        std::map<int, std::thread::id> thread_of_worker;
        std::atomic<int> moved{0};
        parallel_for(kCount, threads, [&](std::size_t i, int worker) {
            auto& flag = busy[static_cast<std::size_t>(worker)];
            if (flag.exchange(true)) {
                clashes.fetch_add(1);
            }
            {
                const std::lock_guard<std::mutex> lock(mutex);
                const auto [it, fresh] =
                    thread_of_worker.emplace(worker, std::this_thread::get_id());
                if (!fresh && it->second != std::this_thread::get_id()) {
                    moved.fetch_add(1); // one worker number, one thread
                }
            }
            if (i % 7 == 0) {
                std::this_thread::sleep_for(100us);
            }
            flag.store(false);
        });
        EXPECT_EQ(clashes.load(), 0) << threads << " threads";
        EXPECT_EQ(moved.load(), 0) << threads << " threads";
    }
}

TEST(ParallelFor, RethrowsTheLowestIndexAfterEveryThreadStops) {
    for (const int threads : {1, 2, 4}) {
        for (const std::size_t chunk : {1u, 4u}) {
            constexpr std::size_t kCount = 200;
            std::vector<std::atomic<int>> runs(kCount);
            std::atomic<int> active{0};
            std::string caught;
            int active_at_catch = -1;
            try {
                parallel_for(
                    kCount, threads,
                    [&](std::size_t i, int) {
                        active.fetch_add(1);
                        runs[i].fetch_add(1);
                        if (i == 30) {
                            // The lowest failure, thrown last: the later ones must wait for it.
                            std::this_thread::sleep_for(30ms);
                            active.fetch_sub(1);
                            throw std::runtime_error("30");
                        }
                        if (i == 31 || i == 45) {
                            active.fetch_sub(1);
                            throw std::runtime_error(std::to_string(i));
                        }
                        std::this_thread::sleep_for(200us);
                        active.fetch_sub(1);
                    },
                    chunk);
            } catch (const std::runtime_error& e) {
                caught = e.what();
                active_at_catch = active.load();
            }
            EXPECT_EQ(caught, "30") << threads << " threads, chunk " << chunk;
            EXPECT_EQ(active_at_catch, 0) << threads << " threads, chunk " << chunk;
            for (std::size_t i = 0; i <= 30; ++i) {
                EXPECT_EQ(runs[i].load(), 1) << "index " << i << ", " << threads << " threads";
            }
            int after = 0;
            for (std::size_t i = 0; i < kCount; ++i) {
                EXPECT_LE(runs[i].load(), 1);
                after += i > 46 ? runs[i].load() : 0;
            }
            // Handing out stops at the first failure: most of the tail never starts.
            EXPECT_LT(after, 100) << threads << " threads, chunk " << chunk;
            if (threads == 1) {
                EXPECT_EQ(after, 0);
                EXPECT_EQ(runs[31].load(), 0);
            }
            // Nothing runs once the call has returned.
            int total = 0;
            for (const auto& r : runs) {
                total += r.load();
            }
            std::this_thread::sleep_for(20ms);
            int later = 0;
            for (const auto& r : runs) {
                later += r.load();
            }
            EXPECT_EQ(total, later);
        }
    }
}

TEST(ParallelFor, AChunkTakenRunsToItsEndAfterAnotherFails) {
    // The caller's chunk [0, 8) is slow to start; the helper's chunk [8, 16) fails at once.
    // Indices 1 to 7 are below the failure: they still run, and index 3's exception wins.
    std::vector<std::atomic<int>> runs(64);
    std::string caught;
    try {
        parallel_for(
            runs.size(), 2,
            [&](std::size_t i, int) {
                runs[i].fetch_add(1);
                if (i == 0) {
                    std::this_thread::sleep_for(50ms);
                }
                if (i == 3 || i == 8) {
                    throw std::runtime_error(std::to_string(i));
                }
            },
            8);
    } catch (const std::runtime_error& e) {
        caught = e.what();
    }
    EXPECT_EQ(caught, "3");
    for (std::size_t i = 0; i <= 3; ++i) {
        EXPECT_EQ(runs[i].load(), 1) << "index " << i;
    }
    for (std::size_t i = 4; i < 8; ++i) {
        EXPECT_EQ(runs[i].load(), 0) << "index " << i << " follows the failure in its chunk";
    }
}

TEST(ParallelFor, NestedCallsRun) {
    constexpr std::size_t kOuter = 40;
    constexpr std::size_t kInner = 25;
    for (const int inner_threads : {1, 2}) {
        std::vector<std::atomic<int>> runs(kOuter * kInner);
        std::atomic<int> inline_elsewhere{0};
        parallel_for(kOuter, 3, [&](std::size_t i, int) {
            const auto outer_thread = std::this_thread::get_id();
            parallel_for(kInner, inner_threads, [&](std::size_t j, int worker) {
                runs[i * kInner + j].fetch_add(1);
                if (inner_threads == 1 &&
                    (worker != 0 || std::this_thread::get_id() != outer_thread)) {
                    inline_elsewhere.fetch_add(1);
                }
            });
        });
        for (std::size_t k = 0; k < runs.size(); ++k) {
            ASSERT_EQ(runs[k].load(), 1) << "item " << k << ", inner threads " << inner_threads;
        }
        EXPECT_EQ(inline_elsewhere.load(), 0);
    }
}

TEST(ParallelFor, NestedExceptionReachesTheOuterCaller) {
    EXPECT_THROW(parallel_for(10, 2,
                              [](std::size_t i, int) {
                                  parallel_for(5, 1, [i](std::size_t j, int) {
                                      if (i == 6 && j == 3) {
                                          throw std::logic_error("inner");
                                      }
                                  });
                              }),
                 std::logic_error);
}

TEST(ParallelFor, PerWorkerScratchSumsAreExact) {
    // The use the sweeps make of worker numbers: per-thread accumulators merged afterwards.
    constexpr std::size_t kCount = 10000;
    constexpr int kThreads = 3;
    std::vector<std::uint64_t> partial(static_cast<std::size_t>(kThreads), 0);
    parallel_for(
        kCount, kThreads,
        [&](std::size_t i, int worker) { partial[static_cast<std::size_t>(worker)] += i; }, 7);
    std::uint64_t sum = 0;
    for (const auto p : partial) {
        sum += p;
    }
    EXPECT_EQ(sum, kCount * (kCount - 1) / 2);
}

} // namespace
} // namespace trnsim
