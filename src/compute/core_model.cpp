#include "trnsim/compute/core_model.hpp"

#include "trnsim/core/assert.hpp"

#include "instruction_costs.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <utility>
#include <vector>

namespace trnsim::compute {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::uint32_t kNone = 0xffffffffu;
constexpr std::size_t kComputeQueues = 4; // tensor, vector, scalar, gpsimd
constexpr std::size_t kComputeUnits = 5;  // tensor_load .. gpsimd
/// Instructions VectorE, ScalarE and GpSimdE look ahead to find a ready one.
constexpr std::size_t kScheduleWindow = 16;

/// Duration of `work` ns of full-rate work started `tau0` ns into a warm-up ramp that begins at
/// `fraction` of full rate and reaches it after `window` ns.
double ramp_duration(double tau0, double work, double fraction, double window) {
    if (tau0 >= window || fraction >= 1.0) {
        return work;
    }
    const double alpha = (1.0 - fraction) / (2.0 * window);
    const double to_full = fraction * (window - tau0) + alpha * (window * window - tau0 * tau0);
    if (work >= to_full) {
        return (window - tau0) + (work - to_full);
    }
    // fraction (tau1 - tau0) + alpha (tau1^2 - tau0^2) = work, for tau1 >= tau0.
    const double c = work + fraction * tau0 + alpha * tau0 * tau0;
    const double tau1 = (-fraction + std::sqrt(fraction * fraction + 4.0 * alpha * c)) /
                        (2.0 * alpha);
    return tau1 - tau0;
}

/// TensorE warm-up throttling (THR): the array's recent busy intervals and the current ramp.
class Warmup {
public:
    Warmup(double fraction, double window_ns) : fraction_(fraction), window_(window_ns) {}

    /// Starts `work` ns of full-rate array work at `t`; returns its duration.
    double start(double t, double work) {
        if (cold_) {
            cold_ = false;
            ramp_start_ = t;
        } else if (t - ramp_start_ >= window_ && busy_since(t - window_) < fraction_ * window_) {
            ramp_start_ = t;
        }
        const double dur = ramp_duration(t - ramp_start_, work, fraction_, window_);
        recent_.emplace_back(t, t + dur);
        recent_busy_ += dur;
        return dur;
    }

private:
    double busy_since(double from) {
        while (!recent_.empty() && recent_.front().second <= from) {
            recent_busy_ -= recent_.front().second - recent_.front().first;
            recent_.pop_front();
        }
        double b = recent_busy_;
        if (!recent_.empty() && recent_.front().first < from) {
            b -= from - recent_.front().first;
        }
        return b;
    }

    double fraction_;
    double window_;
    bool cold_ = true;
    double ramp_start_ = 0.0;
    std::deque<std::pair<double, double>> recent_;
    double recent_busy_ = 0.0;
};

/// A transfer moving through the DMA engines. Work is in engine-nanoseconds.
struct Transfer {
    std::uint32_t id = kNone;
    double remaining = 0.0;
    double cap = 0.0;  ///< engines it can use at most
    double rate = 0.0; ///< engines it has now
    double finish = kInf;
};

struct Issued {
    std::uint32_t id;
    double ready;
};

EngineKind engine_of(Unit u) {
    switch (u) {
    case Unit::tensor_load:
    case Unit::tensor_array:
        return EngineKind::tensor;
    case Unit::vector:
        return EngineKind::vector;
    case Unit::scalar:
        return EngineKind::scalar;
    case Unit::gpsimd:
        return EngineKind::gpsimd;
    default:
        return EngineKind::dma;
    }
}

/// One run: the state of every queue, unit and transfer.
class Run {
public:
    Run(const ChipSpec& chip, double dma_usable, const Program& p,
        std::vector<CoreSimulator::Span>* timeline)
        : p_(p), ins_(p.instructions), done_(ins_.size(), kInf), timeline_(timeline),
          started_(ins_.size(), 0),
          warmup_(chip.core.tensor.warmup_fraction,
                  static_cast<double>(chip.core.tensor.warmup_window.ns())),
          dma_usable_(dma_usable) {
        for (std::uint32_t i = 0; i < ins_.size(); ++i) {
            lists_[static_cast<std::size_t>(queue_of(ins_[i].unit))].push_back(i);
        }
        const auto& c = chip.core;
        ghz_[static_cast<std::size_t>(Unit::tensor_load)] = c.tensor.clock.hz() * 1e-9;
        ghz_[static_cast<std::size_t>(Unit::tensor_array)] = c.tensor.clock.hz() * 1e-9;
        ghz_[static_cast<std::size_t>(Unit::vector)] = c.vector.clock.hz() * 1e-9;
        ghz_[static_cast<std::size_t>(Unit::scalar)] = c.scalar.clock.hz() * 1e-9;
        ghz_[static_cast<std::size_t>(Unit::gpsimd)] = c.gpsimd.clock.hz() * 1e-9;
        if (timeline_ != nullptr) {
            timeline_->assign(ins_.size(), CoreSimulator::Span{});
        }
        current_.fill(kNone);
        end_.fill(0.0);
        generators_.assign(static_cast<std::size_t>(std::max(1, c.dma_generators)), 0.0);
        active_.fill(kNone);
        bytes_per_ns_ = c.dma_engine_bandwidth.bytes_per_s() * 1e-9;
        descriptor_ns_ = static_cast<double>(c.dma_descriptor_overhead.ns());
        issue_ns_ = static_cast<double>(c.dma_issue_time.ns());
        setup_ns_ = static_cast<double>(c.dma_setup_latency.ns());
        max_engines_ = static_cast<double>(c.dma_engines);
    }

    CoreRun execute() {
        const std::size_t n = ins_.size();
        std::size_t finished = 0;
        double t = 0.0;
        bool reshare_due = false;
        while (finished < n) {
            for (bool progress = true; progress;) {
                progress = false;
                for (std::size_t q = 0; q < kComputeQueues; ++q) {
                    progress |= start_compute(q, t);
                }
                for (std::size_t d = 0; d < static_cast<std::size_t>(kDmaQueues); ++d) {
                    progress |= issue_dma(d, t);
                    if (begin_transfer(d, t)) {
                        progress = true;
                        reshare_due = true;
                    }
                }
            }
            if (reshare_due) {
                reshare(t);
                reshare_due = false;
            }
            const double next = next_event(t);
            TRNSIM_CHECK(next < kInf, "the program waits for an instruction that never runs");
            advance_transfers(next - t);
            t = next;
            for (std::size_t u = 0; u < kComputeUnits; ++u) {
                if (current_[u] != kNone && end_[u] <= t) {
                    done_[current_[u]] = t;
                    current_[u] = kNone;
                    ++finished;
                    ++run_.events;
                }
            }
            for (std::size_t d = 0; d < static_cast<std::size_t>(kDmaQueues); ++d) {
                Transfer& x = transfers_[d];
                if (active_[d] != kNone && x.finish <= t) {
                    done_[x.id] = t;
                    if (timeline_ != nullptr) {
                        (*timeline_)[x.id].end = t * 1e-9;
                    }
                    active_[d] = kNone;
                    ++finished;
                    ++run_.events;
                    reshare_due = true;
                }
            }
        }
        run_.seconds = t * 1e-9;
        run_.tensor_cycles = t * ghz_[static_cast<std::size_t>(Unit::tensor_array)];
        for (auto& b : run_.busy_seconds) {
            b *= 1e-9;
        }
        run_.busy_seconds[static_cast<std::size_t>(EngineKind::dma)] /= dma_usable_;
        run_.flops = p_.flops;
        run_.hbm_bytes = p_.hbm_read_bytes + p_.hbm_write_bytes;
        return run_;
    }

private:
    bool deps_done(const Instruction& ins, double t) const {
        const std::uint32_t* d = p_.deps.data() + ins.dep_begin;
        for (std::uint16_t i = 0; i < ins.dep_count; ++i) {
            if (done_[d[i]] > t) {
                return false;
            }
        }
        return true;
    }

    bool start_compute(std::size_t q, double t) {
        const auto& list = lists_[q];
        std::size_t& head = head_[q];
        while (head < list.size() && started_[list[head]]) {
            ++head;
        }
        // TensorE issues in order; the other engines take the oldest ready instruction among
        // the next kScheduleWindow (a compiler's list schedule).
        const std::size_t window = q == static_cast<std::size_t>(Queue::tensor) ? 1 : kScheduleWindow;
        std::size_t seen = 0;
        for (std::size_t i = head; i < list.size() && seen < window; ++i) {
            const std::uint32_t id = list[i];
            if (started_[id]) {
                continue;
            }
            ++seen;
            const Instruction& ins = ins_[id];
            const auto u = static_cast<std::size_t>(ins.unit);
            if (current_[u] != kNone) {
                return false;
            }
            if (!deps_done(ins, t)) {
                continue;
            }
            const double full = ins.amount / ghz_[u];
            const double dur = ins.op == Op::multiply_moving ? warmup_.start(t, full) : full;
            current_[u] = id;
            end_[u] = t + dur;
            started_[id] = 1;
            if (timeline_ != nullptr) {
                (*timeline_)[id] = {t * 1e-9, (t + dur) * 1e-9};
            }
            if (ins.unit != Unit::tensor_load) {
                run_.busy_seconds[static_cast<std::size_t>(engine_of(ins.unit))] += dur;
            }
            ++run_.instructions[u];
            ++run_.events;
            return true;
        }
        return false;
    }

    /// The descriptor generator free soonest (lowest index on ties).
    std::size_t generator() const {
        return static_cast<std::size_t>(
            std::min_element(generators_.begin(), generators_.end()) - generators_.begin());
    }

    bool issue_dma(std::size_t d, double t) {
        const std::size_t q = kComputeQueues + d;
        const auto& list = lists_[q];
        const std::size_t g = generator();
        if (head_[q] == list.size() || t < generators_[g]) {
            return false;
        }
        const std::uint32_t id = list[head_[q]];
        if (!deps_done(ins_[id], t)) {
            return false;
        }
        issued_[d].push_back({id, t + issue_ns_ + setup_ns_});
        if (timeline_ != nullptr) {
            (*timeline_)[id].start = t * 1e-9;
        }
        generators_[g] = t + issue_ns_;
        ++run_.instructions[static_cast<std::size_t>(ins_[id].unit)];
        ++run_.events;
        ++head_[q];
        return true;
    }

    bool begin_transfer(std::size_t d, double t) {
        if (active_[d] != kNone || issued_[d].empty() || issued_[d].front().ready > t) {
            return false;
        }
        const Issued next = issued_[d].front();
        issued_[d].pop_front();
        const Instruction& ins = ins_[next.id];
        Transfer& x = transfers_[d];
        x.id = next.id;
        x.remaining = ins.descriptors * descriptor_ns_ + ins.amount / bytes_per_ns_;
        x.cap = std::min(max_engines_, static_cast<double>(ins.descriptors));
        active_[d] = next.id;
        ++run_.events;
        return true;
    }

    /// Progressive filling of the usable DMA engines over the transfers in flight.
    void reshare(double t) {
        std::array<std::size_t, kDmaQueues> order{};
        std::size_t k = 0;
        for (std::size_t d = 0; d < static_cast<std::size_t>(kDmaQueues); ++d) {
            if (active_[d] != kNone) {
                order[k++] = d;
            }
        }
        // Smallest cap first; ties by queue, so the result never depends on anything else.
        std::stable_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k),
                         [&](std::size_t a, std::size_t b) {
                             return transfers_[a].cap < transfers_[b].cap;
                         });
        double left = dma_usable_;
        for (std::size_t i = 0; i < k; ++i) {
            Transfer& x = transfers_[order[i]];
            x.rate = std::min(x.cap, left / static_cast<double>(k - i));
            left -= x.rate;
            x.finish = t + x.remaining / x.rate;
        }
    }

    void advance_transfers(double dt) {
        if (dt <= 0.0) {
            return;
        }
        double engines = 0.0;
        for (std::size_t d = 0; d < static_cast<std::size_t>(kDmaQueues); ++d) {
            if (active_[d] != kNone) {
                transfers_[d].remaining -= transfers_[d].rate * dt;
                engines += transfers_[d].rate;
            }
        }
        run_.busy_seconds[static_cast<std::size_t>(EngineKind::dma)] += engines * dt;
    }

    double next_event(double t) const {
        double next = kInf;
        for (std::size_t u = 0; u < kComputeUnits; ++u) {
            if (current_[u] != kNone) {
                next = std::min(next, end_[u]);
            }
        }
        for (std::size_t d = 0; d < static_cast<std::size_t>(kDmaQueues); ++d) {
            const std::size_t q = kComputeQueues + d;
            const double generator_free = generators_[generator()];
            if (head_[q] < lists_[q].size() && generator_free > t) {
                next = std::min(next, generator_free);
            }
            if (active_[d] != kNone) {
                next = std::min(next, transfers_[d].finish);
            } else if (!issued_[d].empty()) {
                next = std::min(next, std::max(t, issued_[d].front().ready));
            }
        }
        return next;
    }

    const Program& p_;
    const std::vector<Instruction>& ins_;
    std::vector<double> done_;
    std::vector<CoreSimulator::Span>* timeline_;
    std::vector<std::uint8_t> started_;
    std::array<std::vector<std::uint32_t>, kQueueCount> lists_;
    std::array<std::size_t, kQueueCount> head_{};
    std::array<double, kComputeUnits> ghz_{};
    std::array<std::uint32_t, kComputeUnits> current_{};
    std::array<double, kComputeUnits> end_{};
    std::vector<double> generators_; ///< when each descriptor generator is free
    std::array<std::deque<Issued>, kDmaQueues> issued_;
    std::array<std::uint32_t, kDmaQueues> active_{};
    std::array<Transfer, kDmaQueues> transfers_{};
    Warmup warmup_;
    double dma_usable_;
    double bytes_per_ns_ = 0.0;
    double descriptor_ns_ = 0.0;
    double issue_ns_ = 0.0;
    double setup_ns_ = 0.0;
    double max_engines_ = 0.0;
    CoreRun run_;
};

} // namespace

EngineKind CoreRun::bottleneck() const {
    std::size_t best = 0;
    for (std::size_t i = 1; i < kEngineKinds; ++i) {
        if (busy_seconds[i] > busy_seconds[best]) {
            best = i;
        }
    }
    return static_cast<EngineKind>(best);
}

CoreSimulator::CoreSimulator(const ChipSpec& chip) : chip_(&chip) {
    dma_usable_ = detail::dma_engines_usable(chip);
}

CoreRun CoreSimulator::run(const Program& p, std::vector<Span>* timeline) const {
    if (p.instructions.empty()) {
        return CoreRun{};
    }
    Run r(*chip_, dma_usable_, p, timeline);
    return r.execute();
}

} // namespace trnsim::compute
