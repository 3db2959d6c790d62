#include "trnsim/engine/window_driver.hpp"

#include "trnsim/engine/event.hpp"
#include "trnsim/engine/sharing_policy.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include <omp.h>

namespace trnsim::engine {

namespace {

/// Blocks of up to this many partitions are sorted busiest first before every window.
constexpr std::size_t kSortedBlock = 4096;
/// While the sharing policy expects windows too short to share, one in this many is timed.
constexpr std::uint32_t kUntimedStride = 16;

/// How long a waiting thread spins before it sleeps (in atomic::wait, a futex), in
/// nanoseconds: long enough to cover the gap between two phases of a window when both threads
/// are running, short enough that a thread whose partner was descheduled (a loaded machine)
/// gives its core back soon. Measured in time, since a pause instruction takes from about 10
/// to about 140 cycles depending on the processor.
constexpr std::int64_t kSpinNs = 20'000;

inline void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause(); // let a sibling hardware thread run
#endif
}

/// Waits until `word` differs from `old`: a spin of kSpinNs, then asleep.
inline std::uint32_t wait_change(const std::atomic<std::uint32_t>& word, std::uint32_t old) {
    using Clock = std::chrono::steady_clock;
    if (const std::uint32_t now = word.load(std::memory_order_acquire); now != old) {
        return now;
    }
    const auto until = Clock::now() + std::chrono::nanoseconds(kSpinNs);
    for (int spin = 1;; ++spin) {
        const std::uint32_t now = word.load(std::memory_order_acquire);
        if (now != old) {
            return now;
        }
        pause();
        if (spin % 32 == 0 && Clock::now() >= until) {
            break;
        }
    }
    std::uint32_t now = word.load(std::memory_order_acquire);
    while (now == old) {
        word.wait(old, std::memory_order_acquire);
        now = word.load(std::memory_order_acquire);
    }
    return now;
}

/// The leader's phases, run with whichever helper threads are awake. A phase is a set of
/// items (partitions to process or deliver, pieces of a window-edge hook) in lanes: a thread
/// takes the items of its own lane first (its home block: the same partitions every window,
/// for its cache), then those left in the others. The leader takes items too and never waits
/// for a helper that has not started one: a helper asleep or descheduled (a loaded machine)
/// just finds the phase done when it wakes. The leader waits only for items in progress.
///
/// Claiming: each lane has a cursor word (phase ticket << 32 | next item) and an end word
/// (ticket << 32 | items); a thread claims item i by a compare-and-swap of the cursor from
/// (t, i) to (t, i + 1) while both words carry the phase's ticket t. A phase's slot (work,
/// lanes) is reused two phases later, which the leader starts only once every item of the
/// phase is done, so a successful claim always sees its own phase. Items must not throw.
class Crew : public std::enable_shared_from_this<Crew> {
public:
    explicit Crew(int threads) : threads_(threads) {
        for (Slot& s : slots_) {
            s.cursor = std::vector<std::atomic<std::uint64_t>>(static_cast<std::size_t>(threads));
            s.end = std::vector<std::atomic<std::uint64_t>>(static_cast<std::size_t>(threads));
        }
    }

    /// Leader: runs work(item) for every item of `lanes` (nullptr: items 0 .. n - 1 in one
    /// lane) and returns when all are done.
    void run(const std::function<void(std::uint32_t)>& work,
             const std::vector<std::vector<std::uint32_t>>* lanes, std::uint32_t n) {
        start_helpers();
        const std::uint64_t t = ++ticket_;
        Slot& s = slots_[t & 1];
        s.work = &work;
        s.lanes = lanes;
        s.total = lanes != nullptr ? 0 : n;
        const std::size_t count = lanes != nullptr ? lanes->size() : 1;
        for (std::size_t l = 0; l < s.cursor.size(); ++l) {
            const std::uint64_t items =
                l >= count ? 0 : lanes != nullptr ? (*lanes)[l].size() : n;
            if (lanes != nullptr) {
                s.total += static_cast<std::uint32_t>(items);
            }
            s.cursor[l].store(t << 32, std::memory_order_relaxed);
            s.end[l].store((t << 32) | items, std::memory_order_relaxed);
        }
        s.done.store(0, std::memory_order_relaxed);
        current_.store(t, std::memory_order_release);
        wake_.fetch_add(1, std::memory_order_release);
        wake_.notify_all();
        take(0, t);
        // The items still in progress on other threads.
        for (std::uint32_t d = s.done.load(std::memory_order_acquire); d < s.total;
             d = s.done.load(std::memory_order_acquire)) {
            (void)wait_change(s.done, d);
        }
    }

    /// Helper `self`: runs the items of every phase it finds until stop().
    void serve(int self) {
        if (stop_.load(std::memory_order_acquire)) {
            return;
        }
        std::uint32_t seen = wake_.load(std::memory_order_acquire);
        while (!stop_.load(std::memory_order_acquire)) {
            const std::uint64_t t = current_.load(std::memory_order_acquire);
            if (t != 0) {
                take(self, t);
            }
            seen = wait_change(wake_, seen);
        }
    }

    /// Leader: the helpers return from serve().
    void stop() {
        stop_.store(true, std::memory_order_release);
        wake_.fetch_add(1, std::memory_order_release);
        wake_.notify_all();
    }

private:
    /// Before the first shared phase: the helper threads, detached, each holding the crew
    /// alive. A run that shares no phase starts none, and no run waits for its helpers to
    /// finish: after stop() each returns whenever it next gets a core (on a loaded machine
    /// that can take milliseconds, which a join at the end of the run would add to it). A
    /// helper that cannot be started is just absent: the leader takes every item itself.
    void start_helpers() {
        if (started_) {
            return;
        }
        started_ = true;
        for (int k = 1; k < threads_; ++k) {
            try {
                std::thread([crew = shared_from_this(), k] { crew->serve(k); }).detach();
            } catch (const std::system_error&) {
                break;
            }
        }
    }

    struct Slot {
        const std::function<void(std::uint32_t)>* work = nullptr;
        const std::vector<std::vector<std::uint32_t>>* lanes = nullptr;
        std::uint32_t total = 0;
        std::vector<std::atomic<std::uint64_t>> cursor;
        std::vector<std::atomic<std::uint64_t>> end;
        std::atomic<std::uint32_t> done{0};
    };

    /// Claims and runs items of phase `t`, lane `self` first.
    void take(int self, std::uint64_t t) {
        Slot& s = slots_[t & 1];
        const std::uint64_t tag = t << 32;
        for (int k = 0; k < threads_; ++k) {
            const auto l = static_cast<std::size_t>((self + k) % threads_);
            const std::uint64_t end = s.end[l].load(std::memory_order_acquire);
            if ((end & ~kIndex) != tag) {
                return; // the phase is over (its slot holds a later one)
            }
            std::uint64_t w = s.cursor[l].load(std::memory_order_acquire);
            while ((w & ~kIndex) == tag && (w & kIndex) < (end & kIndex)) {
                if (!s.cursor[l].compare_exchange_weak(w, w + 1, std::memory_order_acq_rel,
                                                       std::memory_order_acquire)) {
                    continue; // w holds the cursor's new value
                }
                // The slot is this phase's until this item is counted done: read what is
                // needed of it before (the leader may refill it for a later phase after).
                const auto i = static_cast<std::uint32_t>(w & kIndex);
                const std::uint32_t total = s.total;
                (*s.work)(s.lanes != nullptr ? (*s.lanes)[l][i] : i);
                if (s.done.fetch_add(1, std::memory_order_acq_rel) + 1 == total) {
                    s.done.notify_all();
                }
                w = s.cursor[l].load(std::memory_order_acquire);
            }
        }
    }

    static constexpr std::uint64_t kIndex = 0xffffffffULL;
    const int threads_;
    Slot slots_[2];
    std::uint64_t ticket_ = 0; ///< leader only
    bool started_ = false;     ///< leader only
    std::atomic<std::uint64_t> current_{0};
    std::atomic<std::uint32_t> wake_{0};
    std::atomic<bool> stop_{false};
};

/// The threads of a run, lent to the window-edge hook. Each parallel_for is shared with the
/// helpers (a phase of the crew) or run as a plain loop, decided apart from the window's own
/// mode: an edge's pieces (a fabric's shards, say) may be worth sharing in a window whose
/// partitions are not, and the other way round. The k-th call of an edge has its own policy
/// (the same call site, edge after edge, in a model that makes its calls in a fixed order):
/// its last time predicts its next.
class Team final : public EdgeTeam {
public:
    Team(Crew& crew, int threads, Sharing sharing)
        : crew_(crew), sharing_(sharing), threads_(threads) {
        for (int k = 0; k < kCallSites; ++k) {
            policies_.emplace_back(threads);
        }
    }

    void parallel_for(std::uint32_t n, const std::function<void(std::uint32_t)>& work) override {
        SharingPolicy& policy = policies_[static_cast<std::size_t>(std::min(call_, kCallSites - 1))];
        ++call_;
        errors_.assign(n, nullptr);
        const std::function<void(std::uint32_t)> guarded = [&](std::uint32_t i) {
            try {
                work(i);
            } catch (...) {
                errors_[i] = std::current_exception();
            }
        };
        // The hook's pieces (a fabric's shards) are few and large: adaptive shares them always
        // (measured: the 98k step 1.51x with the edges shared against 1.07x when each call
        // site chose by its own timing, which settled on inline). TRNSIM_EDGE_SHARING=adaptive
        // keeps the per-call-site policy for study.
        const bool adaptive = sharing_ == Sharing::adaptive && threads_ > 1 && n > 1 &&
                              edge_adaptive();
        const auto start = std::chrono::steady_clock::now();
        const bool share = threads_ > 1 && n > 1 &&
                           (adaptive ? policy.share() : sharing_ != Sharing::never);
        if (share) {
            crew_.run(guarded, nullptr, n);
        } else {
            for (std::uint32_t i = 0; i < n; ++i) {
                guarded(i);
            }
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (adaptive) {
            policy.record(seconds);
        }
        seconds_ += seconds;
        for (const auto& e : errors_) {
            if (e) {
                std::rethrow_exception(e);
            }
        }
    }

    /// Before an edge: its calls count from the first call site again.
    void begin_edge() {
        call_ = 0;
        seconds_ = 0.0;
    }
    /// Wall seconds in parallel_for since begin_edge().
    double seconds() const { return seconds_; }

private:
    static bool edge_adaptive() {
        static const bool on = [] {
            const char* env = std::getenv("TRNSIM_EDGE_SHARING");
            return env != nullptr && std::string(env) == "adaptive";
        }();
        return on;
    }
    static constexpr int kCallSites = 8; ///< calls past the 8th of an edge share a policy
    Crew& crew_;
    Sharing sharing_;
    int threads_ = 1;
    std::vector<SharingPolicy> policies_;
    int call_ = 0;
    double seconds_ = 0.0;
    std::vector<std::exception_ptr> errors_;
};

/// The configured sharing, or TRNSIM_WINDOW_SHARING's when the configuration says adaptive.
Sharing sharing_of(const DriverConfig& config) {
    if (config.sharing != Sharing::adaptive) {
        return config.sharing;
    }
    const char* env = std::getenv("TRNSIM_WINDOW_SHARING");
    if (env == nullptr || *env == '\0') {
        return Sharing::adaptive;
    }
    const std::string v = env;
    if (v == "adaptive") {
        return Sharing::adaptive;
    }
    if (v == "always") {
        return Sharing::always;
    }
    if (v == "never") {
        return Sharing::never;
    }
    throw std::invalid_argument("engine: TRNSIM_WINDOW_SHARING must be adaptive, always or never, not '" +
                                v + "'");
}

} // namespace

int default_thread_count() { return std::max(1, omp_get_max_threads()); }

DriverStats run_windows(WindowedModel& model, const DriverConfig& config) {
    if (config.lookahead.ns() <= 0) {
        throw std::invalid_argument("engine: the lookahead must be positive");
    }
    const Sharing sharing = sharing_of(config);
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
    const auto crew_ptr = std::make_shared<Crew>(threads);
    Crew& crew = *crew_ptr;
    struct StopHelpers { // however the run ends, its helpers return
        Crew& crew;
        ~StopHelpers() { crew.stop(); }
    } stop_helpers{crew};
    Team team(crew, threads, sharing);

    // Each thread has a home block of contiguous partitions (a lane of the crew's phases),
    // which it processes and delivers itself window after window when it is awake (their
    // queues and entities stay in its cache); a thread done with its own block helps with the
    // others'. Within a block, the busiest partitions of the last window go first, so that the
    // pieces left to share at the end are small. This only decides which thread runs what,
    // never the results.
    std::vector<std::vector<std::uint32_t>> blocks(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) {
        const auto tt = static_cast<std::uint64_t>(t);
        for (auto p = static_cast<std::uint32_t>(tt * partitions / static_cast<std::uint64_t>(threads));
             p < (tt + 1) * partitions / static_cast<std::uint64_t>(threads); ++p) {
            blocks[static_cast<std::size_t>(t)].push_back(p);
        }
    }
    std::vector<std::uint64_t> handled(partitions, 0);

    const auto guarded = [&](std::uint32_t p, auto&& work) {
        try {
            work(p);
        } catch (...) {
            errors[p] = std::current_exception();
            failed.store(true, std::memory_order_relaxed);
        }
    };
    const std::function<void(std::uint32_t)> process = [&](std::uint32_t p) {
        guarded(p, [&](std::uint32_t q) { handled[q] = model.process(q, window_end); });
    };
    const std::function<void(std::uint32_t)> deliver = [&](std::uint32_t p) {
        guarded(p, [&](std::uint32_t q) { next[q] = model.deliver(q); });
    };
    const auto edge = [&]() {
        team.begin_edge();
        if (failed.load(std::memory_order_relaxed)) {
            return;
        }
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
    };

    // Thread 0 leads: it runs the serial steps, and each window either alone (inline) or as
    // phases of the crew that the helpers, waiting in Crew::serve, join when they are awake.
    SharingPolicy policy(threads);
    std::uint32_t untimed = 0;
    const auto lead = [&]() {
        while (true) {
            const std::int64_t t_min = *std::min_element(next.begin(), next.end());
            if (failed.load(std::memory_order_relaxed) || t_min == kNever ||
                t_min >= config.until.ns()) {
                break;
            }
            window_end = t_min > config.until.ns() - config.lookahead.ns()
                             ? config.until.ns()
                             : t_min + config.lookahead.ns();
            ++stats.windows;
            // While windows are too short to share, only every kUntimedStride-th is timed (the
            // clock's two reads cost more than such a window's work beside it): the others run
            // inline, as the policy would have them. Only who runs what depends on it.
            const bool adaptive = sharing == Sharing::adaptive && threads > 1 &&
                                  (!policy.expects_inline() || ++untimed % kUntimedStride == 0);
            const bool parallel =
                threads > 1 && (adaptive ? policy.share()
                                         : sharing == Sharing::always);
            const auto start = adaptive ? std::chrono::steady_clock::now()
                                        : std::chrono::steady_clock::time_point{};
            if (parallel) {
                ++stats.shared_windows;
                for (auto& order : blocks) {
                    // (a sort per window stays cheap beside the window's own work up to a few
                    // thousand partitions a block; beyond, index order)
                    if (order.size() <= kSortedBlock) {
                        std::sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
                            return handled[x] > handled[y] || (handled[x] == handled[y] && x < y);
                        });
                    }
                }
                crew.run(process, &blocks, partitions);
                if (model.sent_remote()) {
                    crew.run(deliver, &blocks, partitions);
                } else {
                    for (std::uint32_t p = 0; p < partitions; ++p) {
                        deliver(p); // only each queue's next time: not worth a phase
                    }
                }
                edge();
            } else {
                for (std::uint32_t p = 0; p < partitions; ++p) {
                    process(p);
                }
                for (std::uint32_t p = 0; p < partitions; ++p) {
                    deliver(p);
                }
                edge();
            }
            if (adaptive) {
                // The window's own work: the hook's parallel_for calls are measured apart.
                policy.record(std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                            start)
                                  .count() -
                              team.seconds());
            }
        }
        crew.stop();
    };

    lead(); // on the calling thread; helpers start at the first shared phase

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
