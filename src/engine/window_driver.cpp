#include "trnsim/engine/window_driver.hpp"

#include "trnsim/engine/event.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <omp.h>

namespace trnsim::engine {

namespace {

/// Blocks of up to this many partitions are sorted busiest first before every window.
constexpr std::size_t kSortedBlock = 4096;

/// A reusable barrier on std::atomic: spins briefly, then sleeps in atomic::wait. The last
/// thread to arrive releases the others by bumping the generation (release); waiters read it
/// with acquire, so everything written before the barrier is visible after it.
class Barrier {
public:
    explicit Barrier(int threads) : threads_(threads) {}

    void wait() {
        const std::uint32_t gen = generation_.load(std::memory_order_acquire);
        if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads_) {
            arrived_.store(0, std::memory_order_relaxed);
            generation_.fetch_add(1, std::memory_order_acq_rel);
            generation_.notify_all();
            return;
        }
        for (int spin = 0; spin < 4000; ++spin) {
            if (generation_.load(std::memory_order_acquire) != gen) {
                return;
            }
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause(); // let a sibling hardware thread run
#endif
        }
        while (generation_.load(std::memory_order_acquire) == gen) {
            generation_.wait(gen, std::memory_order_acquire);
        }
    }

private:
    const int threads_;
    std::atomic<int> arrived_{0};
    std::atomic<std::uint32_t> generation_{0};
};

/// The threads of a run, lent to the window-edge hook. The leader (thread 0) runs the hook;
/// the others wait in serve() for pieces of work until the barrier that starts the next window.
/// Each parallel_for costs two barriers; with one thread it is a plain loop.
class Team final : public EdgeTeam {
public:
    Team(int threads, Barrier& barrier) : threads_(threads), barrier_(barrier) {}

    void parallel_for(std::uint32_t n, const std::function<void(std::uint32_t)>& work) override {
        errors_.assign(n, nullptr);
        if (threads_ == 1 || n < 2) {
            for (std::uint32_t i = 0; i < n; ++i) {
                run(i, work);
            }
        } else {
            released_ = false;
            work_ = &work;
            n_ = n;
            cursor_.store(0, std::memory_order_relaxed);
            barrier_.wait(); // the pieces are posted
            take(work);
            barrier_.wait(); // every piece is done
            work_ = nullptr;
        }
        for (const auto& e : errors_) {
            if (e) {
                std::rethrow_exception(e);
            }
        }
    }

    /// Other threads: run posted pieces until the leader's next barrier outside a
    /// parallel_for (the one that starts the next window), which it marks with release().
    void serve() {
        while (true) {
            barrier_.wait();
            if (released_) {
                return;
            }
            take(*work_);
            barrier_.wait();
        }
    }

    /// Leader: the next barrier releases the serving threads.
    void release() { released_ = true; }

private:
    void run(std::uint32_t i, const std::function<void(std::uint32_t)>& work) {
        try {
            work(i);
        } catch (...) {
            errors_[i] = std::current_exception();
        }
    }
    void take(const std::function<void(std::uint32_t)>& work) {
        for (std::uint32_t i = cursor_.fetch_add(1, std::memory_order_relaxed); i < n_;
             i = cursor_.fetch_add(1, std::memory_order_relaxed)) {
            run(i, work);
        }
    }

    const int threads_;
    Barrier& barrier_;
    const std::function<void(std::uint32_t)>* work_ = nullptr;
    std::uint32_t n_ = 0;
    std::atomic<std::uint32_t> cursor_{0};
    std::vector<std::exception_ptr> errors_;
    bool released_ = false;
};

} // namespace

int default_thread_count() { return std::max(1, omp_get_max_threads()); }

DriverStats run_windows(WindowedModel& model, const DriverConfig& config) {
    if (config.lookahead_ns <= 0) {
        throw std::invalid_argument("engine: the lookahead must be positive");
    }
    const std::uint32_t partitions = model.partition_count();
    const int threads = std::max(
        1, std::min(config.threads > 0 ? config.threads : default_thread_count(),
                    static_cast<int>(std::max<std::uint32_t>(partitions, 1))));
    DriverStats stats;
    stats.threads = threads;

    std::vector<std::int64_t> next(partitions, kNever);
    for (std::uint32_t p = 0; p < partitions; ++p) {
        next[p] = model.next_time(p);
    }
    std::vector<std::exception_ptr> errors(partitions);
    std::exception_ptr edge_error;
    std::atomic<bool> failed{false};
    std::int64_t window_end = 0;
    bool done = false;
    Barrier barrier(threads);
    Team team(threads, barrier);

    // Each thread has a home block of contiguous partitions, which it processes and delivers
    // itself window after window (their queues and entities stay in its cache); a thread done
    // with its own block helps with the others'. Within a block, the busiest partitions of the
    // last window go first, so that the pieces left to share at the end are small. This only
    // decides which thread runs what, never the results.
    struct Block {
        std::vector<std::uint32_t> order;
        std::atomic<std::uint32_t> process{0};
        std::atomic<std::uint32_t> deliver{0};
    };
    std::vector<Block> blocks(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) {
        const auto tt = static_cast<std::uint64_t>(t);
        for (auto p = static_cast<std::uint32_t>(tt * partitions / static_cast<std::uint64_t>(threads));
             p < (tt + 1) * partitions / static_cast<std::uint64_t>(threads); ++p) {
            blocks[static_cast<std::size_t>(t)].order.push_back(p);
        }
    }
    std::vector<std::uint64_t> handled(partitions, 0);

    // Runs `work` for every partition: thread `self` takes its own block's partitions, then
    // those left in the other blocks.
    const auto for_each_partition = [&](int self, bool processing, auto&& work) {
        for (int k = 0; k < threads; ++k) {
            Block& b = blocks[static_cast<std::size_t>((self + k) % threads)];
            std::atomic<std::uint32_t>& cursor = processing ? b.process : b.deliver;
            const auto n = static_cast<std::uint32_t>(b.order.size());
            for (std::uint32_t i = cursor.fetch_add(1, std::memory_order_relaxed); i < n;
                 i = cursor.fetch_add(1, std::memory_order_relaxed)) {
                const std::uint32_t p = b.order[i];
                try {
                    work(p);
                } catch (...) {
                    errors[p] = std::current_exception();
                    failed.store(true, std::memory_order_relaxed);
                }
            }
        }
    };

    // The window loop of one thread (`leader`: thread 0, which runs the serial steps). The
    // others spend the window edge in team.serve(), whose last barrier starts the next window.
    const auto work = [&](int self) {
        const bool leader = self == 0;
        barrier.wait(); // everything prepared above happens before the first window
        while (true) {
            if (leader) {
                const std::int64_t t_min = *std::min_element(next.begin(), next.end());
                done = failed.load(std::memory_order_relaxed) || t_min == kNever ||
                       t_min >= config.until_ns;
                if (!done) {
                    window_end = t_min > config.until_ns - config.lookahead_ns
                                     ? config.until_ns
                                     : t_min + config.lookahead_ns;
                    ++stats.windows;
                    for (Block& b : blocks) {
                        // (a sort per window stays cheap beside the window's own work up to a
                        // few thousand partitions a block; beyond, index order)
                        if (threads > 1 && b.order.size() <= kSortedBlock) {
                            std::sort(b.order.begin(), b.order.end(),
                                      [&](std::uint32_t x, std::uint32_t y) {
                                          return handled[x] > handled[y] ||
                                                 (handled[x] == handled[y] && x < y);
                                      });
                        }
                        b.process.store(0, std::memory_order_relaxed);
                        b.deliver.store(0, std::memory_order_relaxed);
                    }
                }
                team.release();
                barrier.wait();
            } else {
                team.serve();
            }
            if (done) {
                break;
            }
            for_each_partition(self, true, [&](std::uint32_t p) {
                handled[p] = model.process(p, window_end);
            });
            barrier.wait();
            for_each_partition(self, false, [&](std::uint32_t p) {
                next[p] = model.deliver(p);
            });
            barrier.wait();
            if (leader && !failed.load(std::memory_order_relaxed)) {
                try {
                    if (model.window_edge(window_end, team)) {
                        for (std::uint32_t p = 0; p < partitions; ++p) {
                            next[p] = model.next_time(p);
                        }
                    }
                } catch (...) {
                    edge_error = std::current_exception();
                    failed.store(true, std::memory_order_relaxed);
                }
            }
        }
        barrier.wait(); // everything written in the region happens before the caller reads it
    };

    if (threads == 1) {
        work(0); // the same algorithm, without an OpenMP region
    } else {
#pragma omp parallel num_threads(threads)
        work(omp_get_thread_num());
    }

    for (const auto& e : errors) {
        if (e) {
            std::rethrow_exception(e);
        }
    }
    if (edge_error) {
        std::rethrow_exception(edge_error);
    }
    return stats;
}

} // namespace trnsim::engine
