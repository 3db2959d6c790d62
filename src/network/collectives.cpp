#include "trnsim/network/collectives.hpp"

#include "trnsim/topology/routing.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

namespace trnsim::network {

std::size_t CollectivePlan::total_phases() const {
    std::size_t n = 0;
    for (const auto& p : phases) {
        n += p.repeat;
    }
    return n;
}

double bus_bandwidth_factor(CollectiveOp op, std::size_t ranks) {
    const double n = static_cast<double>(ranks);
    switch (op) {
    case CollectiveOp::all_reduce:
        return n > 1 ? 2.0 * (n - 1) / n : 0.0;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all:
        return n > 1 ? (n - 1) / n : 0.0;
    case CollectiveOp::broadcast:
    case CollectiveOp::send_recv:
        return 1.0;
    }
    return 1.0;
}

namespace {

using Group = std::vector<std::uint32_t>;
using Groups = std::vector<Group>;

constexpr std::size_t kMaxFlowsPerPhase = 4'000'000;

std::uint64_t mix(std::uint64_t h, std::uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/// Equal for phases with the same flows in the same order.
std::uint64_t signature(const Phase& p) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const FlowSpec& f : p.flows) {
        h = mix(h, (std::uint64_t{f.src} << 32) | f.dst);
        h = mix(h, std::bit_cast<std::uint64_t>(f.bytes));
    }
    return mix(h, p.flows.size());
}

class Builder {
public:
    Builder(const topology::Fabric& f, const LocalCosts& local, CollectivePlan& plan,
            int moving_ranks)
        : f_(f), local_(local), plan_(plan), ranks_(moving_ranks) {}

    /// Appends a phase; `reduced` bytes per chip are summed on chip (at the ranks' reduce rate,
    /// or three HBM accesses a byte); each chip's outgoing bytes move at most at its ranks'
    /// collective rate; a phase with a flow between NeuronLink domains pays the EFA step
    /// overhead.
    void emit(std::vector<FlowSpec> flows, std::uint32_t repeat, double reduced,
              const std::string& stage) {
        if (flows.size() > kMaxFlowsPerPhase) {
            throw std::invalid_argument("collective: " + stage + " needs " +
                                        std::to_string(flows.size()) +
                                        " concurrent flows per phase; choose another algorithm");
        }
        if (repeat == 0) {
            return;
        }
        Phase p;
        p.flows = std::move(flows);
        p.repeat = repeat;
        const double r = ranks_;
        const double reduce_rate = local_.reduce_bandwidth.bytes_per_s();
        if (reduced > 0.0) {
            p.local_seconds = reduce_rate > 0.0 ? reduced / (r * reduce_rate)
                                                : 3.0 * reduced / local_.hbm.bytes_per_s();
        }
        const double rank_rate = local_.rank_bandwidth.bytes_per_s();
        bool crosses = false;
        if (rank_rate > 0.0 || local_.efa_step_overhead.ns() > 0) {
            // Bytes leaving each chip (flows are grouped by source in every builder).
            std::vector<std::pair<std::uint32_t, double>> out;
            for (const FlowSpec& fl : p.flows) {
                crosses = crosses || f_.domain_of(fl.src) != f_.domain_of(fl.dst);
                if (!out.empty() && out.back().first == fl.src) {
                    out.back().second += fl.bytes;
                } else {
                    out.push_back({fl.src, fl.bytes});
                }
            }
            if (rank_rate > 0.0) {
                double most = 0.0;
                for (const auto& [chip, bytes] : out) {
                    most = std::max(most, bytes);
                }
                p.local_seconds = std::max(p.local_seconds, most / (r * rank_rate));
            }
        }
        p.overhead_seconds = crosses ? local_.efa_step_overhead.seconds() : 0.0;
        p.stage = stage;
        p.signature = signature(p);
        plan_.phases.push_back(std::move(p));
    }

    /// On-chip combination of r ranks: `passes` reads and writes of (r - 1) / r of the buffer
    /// by each rank, all ranks sharing the chip's HBM.
    void on_chip(double bytes_per_rank, int r, double passes, const std::string& stage) {
        if (r <= 1) {
            return;
        }
        Phase p;
        // Through HBM, and at most at the ranks' collective rate: each rank moves (r - 1) / r
        // of its buffer per pass.
        const double rank_rate = local_.rank_bandwidth.bytes_per_s();
        const double hbm = passes * (r - 1) * bytes_per_rank / local_.hbm.bytes_per_s();
        // (bytes_per_rank carries every group the request stands for: ranks_ / r of them.)
        const double groups = static_cast<double>(ranks_) / r;
        const double dma = rank_rate > 0.0 ? passes * (r - 1) / static_cast<double>(r) *
                                                 bytes_per_rank / (groups * rank_rate)
                                           : 0.0;
        p.local_seconds = std::max(hbm, dma) + (r - 1) * local_.step_latency.seconds();
        p.stage = stage;
        p.signature = signature(p);
        plan_.phases.push_back(std::move(p));
    }

    /// Reduce-scatter of V bytes per chip inside every group, all groups at once.
    void reduce_scatter(const Groups& groups, double v, Algorithm a, const std::string& stage) {
        scatter_or_gather(groups, v, a, stage, true);
    }
    /// All-gather to V bytes per chip inside every group.
    void all_gather(const Groups& groups, double v, Algorithm a, const std::string& stage) {
        scatter_or_gather(groups, v, a, stage, false);
    }

    int moving_ranks() const { return ranks_; }

private:
    void scatter_or_gather(const Groups& groups, double v, Algorithm a, const std::string& stage,
                           bool reduce) {
        const std::size_t p = groups.front().size();
        if (p <= 1 || v <= 0.0) {
            return;
        }
        const std::string label = stage + " (" + to_string(a) + ")";
        const double chunk = v / static_cast<double>(p);
        std::vector<FlowSpec> flows;
        switch (a) {
        case Algorithm::ring:
            for (const Group& g : groups) {
                for (std::size_t i = 0; i < p; ++i) {
                    flows.push_back({g[i], g[(i + 1) % p], chunk});
                }
            }
            emit(std::move(flows), static_cast<std::uint32_t>(p - 1), reduce ? chunk : 0.0, label);
            return;
        case Algorithm::bidirectional_ring:
            for (const Group& g : groups) {
                for (std::size_t i = 0; i < p; ++i) {
                    flows.push_back({g[i], g[(i + 1) % p], chunk / 2});
                    flows.push_back({g[i], g[(i + p - 1) % p], chunk / 2});
                }
            }
            emit(std::move(flows), static_cast<std::uint32_t>(p - 1), reduce ? chunk : 0.0, label);
            return;
        case Algorithm::mesh:
            for (const Group& g : groups) {
                for (std::size_t i = 0; i < p; ++i) {
                    for (std::size_t j = 0; j < p; ++j) {
                        if (i != j) {
                            flows.push_back({g[i], g[j], chunk});
                        }
                    }
                }
            }
            emit(std::move(flows), 1, reduce ? chunk * static_cast<double>(p - 1) : 0.0, label);
            return;
        case Algorithm::rdh: {
            // Recursive halving (reduce-scatter) or doubling (all-gather) among the largest
            // power of two q <= p; the e = p - q extra chips first fold their data into
            // partners 0..e-1 and get their share back at the end (Thakur et al. 2005).
            std::size_t q = 1;
            while (q * 2 <= p) {
                q *= 2;
            }
            const std::size_t extra = p - q;
            const auto fold = [&](bool into_partners, double bytes, bool reduced) {
                if (extra == 0) {
                    return;
                }
                std::vector<FlowSpec> step;
                for (const Group& g : groups) {
                    for (std::size_t i = 0; i < extra; ++i) {
                        step.push_back(into_partners ? FlowSpec{g[q + i], g[i], bytes}
                                                     : FlowSpec{g[i], g[q + i], bytes});
                    }
                }
                emit(std::move(step), 1, reduced ? bytes : 0.0, label + " fold");
            };
            std::vector<std::size_t> distances;
            for (std::size_t d = q / 2; d >= 1; d /= 2) {
                distances.push_back(d);
            }
            if (reduce) {
                fold(true, v, true); // extras' whole buffers into their partners
            } else {
                fold(true, chunk, false); // extras' contributions to their partners
                std::reverse(distances.begin(), distances.end());
            }
            const double qd = static_cast<double>(q);
            for (std::size_t d : distances) {
                // One expression for both directions: a halving step and the doubling step at
                // the same distance move exactly the same bytes.
                const double bytes = v / qd * static_cast<double>(d);
                std::vector<FlowSpec> step;
                for (const Group& g : groups) {
                    for (std::size_t i = 0; i < q; ++i) {
                        step.push_back({g[i], g[i ^ d], bytes});
                    }
                }
                emit(std::move(step), 1, reduce ? bytes : 0.0, label);
            }
            if (reduce) {
                fold(false, chunk, false); // each extra gets its shard
            } else {
                fold(false, v, false); // each extra gets the whole result
            }
            return;
        }
        case Algorithm::torus_rings:
            torus_rings(groups, v, label, reduce);
            return;
        case Algorithm::automatic:
        case Algorithm::hierarchical:
            break;
        }
        throw std::logic_error("collective: unresolved algorithm");
    }

    /// Bidirectional rings along each dimension of a full NeuronLink domain: reduce-scatter
    /// along dimension 0 leaves 1/s0 of the buffer, then along dimension 1, and so on; the
    /// all-gather runs the dimensions in reverse.
    void torus_rings(const Groups& groups, double v, const std::string& label, bool reduce) {
        // chunk[d]: what one step along dimension d moves, V / s0 for dimension 0, then
        // V / (s0 s1), ...; the all-gather uses the same chunks in reverse order.
        const int dims = f_.torus_dims();
        std::vector<double> chunk(static_cast<std::size_t>(dims));
        double buffer = v;
        for (int d = 0; d < dims; ++d) {
            buffer /= f_.torus_size(d);
            chunk[static_cast<std::size_t>(d)] = buffer;
        }
        for (int k = 0; k < dims; ++k) {
            const int d = reduce ? k : dims - 1 - k;
            const double c = chunk[static_cast<std::size_t>(d)];
            std::vector<FlowSpec> flows;
            for (const Group& g : groups) {
                for (std::uint32_t chip : g) {
                    flows.push_back({chip, f_.torus_neighbour(chip, d, +1), c / 2});
                    flows.push_back({chip, f_.torus_neighbour(chip, d, -1), c / 2});
                }
            }
            emit(std::move(flows), static_cast<std::uint32_t>(f_.torus_size(d) - 1),
                 reduce ? c : 0.0, label + " dim " + std::to_string(d));
        }
    }

    const topology::Fabric& f_;
    const LocalCosts& local_;
    CollectivePlan& plan_;
    int ranks_;
};

/// Most flows a mesh may have per phase to be a candidate of `automatic` (the p (p - 1) flows
/// of every group together); larger meshes stay forceable up to kMaxFlowsPerPhase.
constexpr std::size_t kMaxAutoMeshFlows = 1'000'000;

/// `automatic` considers a mesh only for messages below this size per rank, inside a NeuronLink
/// domain and over EFA alike; a forced mesh runs at any size. Inside a domain the Neuron runtime
/// runs mesh only below 1 MB (CCI, shared/reference/trainium.md "Intra-node algorithm choice"):
/// its per-peer buffers and descriptors make it lose above. Between nodes the runtime keeps mesh
/// for small groups and small messages (CCX, "Inter-node algorithms"): every rank receives from
/// all its peers at once, so a little skew in start times congests the NICs and the upper
/// switch tiers, and it does not scale to large messages. CCX publishes no size, so the
/// intra-node one is used (docs/validation.md, "Levers"). Neither the skew nor the buffers is in
/// the phase estimate, which prices a large mesh over EFA like a ring (the NIC carries the same
/// bytes) and would pick it on the hash of its routes; a large mesh over many domains is also
/// one max-min component of p (p - 1) flows, the costliest thing the flow model can be asked.
constexpr double kMeshBelowBytes = 1024.0 * 1024.0;

/// How the chip-level stage runs: one algorithm over all chips, or hierarchical (an algorithm
/// inside each NeuronLink domain, another among the same-position chips of every domain).
struct Choice {
    bool hierarchical = false;
    Algorithm flat = Algorithm::ring; ///< when not hierarchical
    Algorithm inner = Algorithm::ring;
    Algorithm outer = Algorithm::ring;
};

/// The chips grouped by NeuronLink domain, in rank order.
struct Structure {
    Groups domain_groups;
    Groups efa_groups; ///< same-position chips of every domain (symmetric groups only)
    std::size_t domains = 0;
    std::size_t per = 0; ///< chips per domain (of the first domain)
    bool symmetric = false;
    bool full_domain = false;
};

Structure structure_of(const topology::Fabric& f, const Group& chips) {
    std::map<std::uint32_t, Group> by_domain;
    for (std::uint32_t c : chips) {
        by_domain[f.domain_of(c)].push_back(c);
    }
    Structure s;
    s.domains = by_domain.size();
    s.per = by_domain.begin()->second.size();
    s.symmetric = std::all_of(by_domain.begin(), by_domain.end(),
                              [&](const auto& kv) { return kv.second.size() == s.per; });
    for (auto& kv : by_domain) {
        s.domain_groups.push_back(kv.second);
    }
    s.full_domain = s.per == f.chips_per_domain();
    if (s.symmetric) {
        s.efa_groups.assign(s.per, {});
        for (const Group& g : s.domain_groups) {
            for (std::size_t k = 0; k < s.per; ++k) {
                s.efa_groups[k].push_back(g[k]);
            }
        }
    }
    return s;
}

bool can_be_hierarchical(const Structure& s) { return s.symmetric && s.domains > 1 && s.per > 1; }

/// The chip-level stage of a reduce-scatter, all-gather or all-reduce of V bytes per chip.
void chip_stage(Builder& b, CollectiveOp op, const Group& chips, const Structure& s, double v,
                const Choice& c, std::string& name) {
    const bool reduce = op != CollectiveOp::all_gather;
    const bool gather = op != CollectiveOp::reduce_scatter;
    if (!c.hierarchical) {
        if (reduce) {
            b.reduce_scatter({chips}, v, c.flat, "reduce-scatter");
        }
        if (gather) {
            b.all_gather({chips}, v, c.flat, "all-gather");
        }
        name = to_string(c.flat);
        return;
    }
    const double shard = v / static_cast<double>(s.per);
    if (reduce) {
        b.reduce_scatter(s.domain_groups, v, c.inner, "domain reduce-scatter");
    }
    if (reduce) {
        b.reduce_scatter(s.efa_groups, shard, c.outer, "EFA reduce-scatter");
    }
    if (gather) {
        b.all_gather(s.efa_groups, shard, c.outer, "EFA all-gather");
    }
    if (gather) {
        b.all_gather(s.domain_groups, v, c.inner, "domain all-gather");
    }
    name = std::string("hierarchical: ") + to_string(c.inner) + " + " + to_string(c.outer);
}

/// Transfer seconds already estimated, by phase signature (equal signatures, equal transfers).
using KnownTransfers = std::vector<std::pair<std::uint64_t, double>>;

/// Closed-form seconds of the phases of `plan` (without its launch), PhaseEstimate per phase.
/// `known` carries the transfers of phases estimated before on the same fabric (the candidates
/// of one choice share their fixed stages); it gains this plan's. The sum stops once it reaches
/// `bound` (the phases only add): a result >= bound says only that the plan costs at least it.
double phases_seconds(const topology::Fabric& f, const CollectivePlan& plan,
                      KnownTransfers& known,
                      double bound = std::numeric_limits<double>::infinity());

/// The cheapest choice by the closed-form estimate of its phases (estimate_plan_seconds), among
/// the flat algorithms (when `flat_allowed`) and the hierarchical ones the group allows. Ties go
/// to the first candidate in a fixed order, so the choice is deterministic. Each candidate's
/// estimate grows with V, so the cheapest does too.
Choice cheapest(const topology::Fabric& f, const LocalCosts& local, int moving_ranks,
                CollectiveOp op, const Group& chips, const Structure& s, double v,
                bool flat_allowed) {
    const std::size_t p = chips.size();
    // The candidates share phases (a hierarchical candidate keeps the other stage fixed, and
    // the best inner stage with the outer ring is estimated in both searches): each distinct
    // phase is estimated once per choice, with the same result as alone.
    // A candidate is only compared with the best so far (it wins when strictly cheaper), so
    // its estimate stops once it reaches that: the same choice, fewer phases routed (RDH's
    // many distinct steps are most of the work on large groups).
    KnownTransfers known;
    const double none = std::numeric_limits<double>::infinity();
    const auto cost = [&](const Choice& c, double bound) {
        CollectivePlan scratch;
        Builder b(f, local, scratch, moving_ranks);
        std::string name;
        chip_stage(b, op, chips, s, v, c, name);
        return phases_seconds(f, scratch, known, bound);
    };
    std::vector<Algorithm> flat = {Algorithm::ring, Algorithm::bidirectional_ring,
                                   Algorithm::rdh};
    if (p * (p - 1) <= kMaxAutoMeshFlows && v < kMeshBelowBytes) {
        flat.push_back(Algorithm::mesh);
    }
    if (s.symmetric && s.domains == 1 && s.full_domain && f.torus_dims() > 0) {
        flat.push_back(Algorithm::torus_rings);
    }
    Choice best;
    double best_s = 0.0;
    bool found = false;
    const auto consider = [&](const Choice& c, double seconds) {
        if (!found || seconds < best_s) {
            best = c;
            best_s = seconds;
            found = true;
        }
    };
    if (flat_allowed || !can_be_hierarchical(s)) {
        for (Algorithm a : flat) {
            Choice c;
            c.flat = a;
            consider(c, cost(c, found ? best_s : none));
        }
    }
    if (can_be_hierarchical(s)) {
        // The domain stages and the EFA stages run one after the other on disjoint phases:
        // the cheapest hierarchical choice pairs the cheapest inner with the cheapest outer.
        // Each is found with the other fixed (ring); the fixed part adds the same to all.
        std::vector<Algorithm> inner = {Algorithm::ring, Algorithm::bidirectional_ring,
                                        Algorithm::rdh};
        if (s.domains * s.per * (s.per - 1) <= kMaxAutoMeshFlows && v < kMeshBelowBytes) {
            inner.push_back(Algorithm::mesh);
        }
        if (s.full_domain && f.torus_dims() > 0) {
            inner.push_back(Algorithm::torus_rings);
        }
        std::vector<Algorithm> outer = {Algorithm::ring, Algorithm::bidirectional_ring,
                                        Algorithm::rdh};
        // The EFA stage moves a shard of V / per per rank.
        if (s.per * s.domains * (s.domains - 1) <= kMaxAutoMeshFlows &&
            v / static_cast<double>(s.per) < kMeshBelowBytes) {
            outer.push_back(Algorithm::mesh);
        }
        Choice h;
        h.hierarchical = true;
        double inner_s = 0.0;
        for (std::size_t i = 0; i < inner.size(); ++i) {
            Choice c = h;
            c.inner = inner[i];
            const double t = cost(c, i == 0 ? none : inner_s);
            if (i == 0 || t < inner_s) {
                inner_s = t;
                h.inner = inner[i];
            }
        }
        double outer_s = 0.0;
        Algorithm best_outer = Algorithm::ring;
        for (std::size_t i = 0; i < outer.size(); ++i) {
            Choice c = h;
            c.outer = outer[i];
            const double t = cost(c, i == 0 ? none : outer_s);
            if (i == 0 || t < outer_s) {
                outer_s = t;
                best_outer = outer[i];
            }
        }
        h.outer = best_outer;
        consider(h, outer_s);
    }
    return best;
}

} // namespace

CollectivePlan plan_collective(const topology::Fabric& f, const CollectiveRequest& req,
                               const LocalCosts& local) {
    const auto& chips = req.chips;
    if (chips.empty()) {
        throw std::invalid_argument("collective: empty group");
    }
    for (std::uint32_t c : chips) {
        if (c >= f.chips()) {
            throw std::invalid_argument("collective: no chip " + std::to_string(c));
        }
    }
    if (req.bytes < 0.0 || req.ranks_per_chip < 1) {
        throw std::invalid_argument("collective: negative size or no ranks");
    }
    CollectivePlan plan;
    plan.launch_seconds = req.op == CollectiveOp::send_recv ? 0.0 : local.launch.seconds();
    Builder b(f, local, plan, req.moving_ranks > 0 ? req.moving_ranks : req.ranks_per_chip);
    const std::size_t p = chips.size();
    const int r = req.ranks_per_chip;
    const double n = req.bytes;

    switch (req.op) {
    case CollectiveOp::send_recv:
        if (p != 2) {
            throw std::invalid_argument("collective: send_recv needs exactly two chips");
        }
        b.emit({{chips[0], chips[1], n}}, 1, 0.0, "send");
        plan.algorithm = "direct";
        return plan;
    case CollectiveOp::broadcast: {
        // Scatter from the root, then a ring all-gather (van de Geijn).
        const std::uint32_t root = chips.at(req.root);
        std::vector<FlowSpec> scatter;
        for (std::uint32_t c : chips) {
            if (c != root) {
                scatter.push_back({root, c, n / static_cast<double>(p)});
            }
        }
        b.emit(std::move(scatter), 1, 0.0, "scatter");
        b.all_gather({chips}, n, Algorithm::ring, "all-gather");
        b.on_chip(n, r, 1.0, "on-chip copy");
        plan.algorithm = "scatter + ring all-gather";
        return plan;
    }
    case CollectiveOp::all_to_all: {
        const double per_chip = n * r;
        std::vector<FlowSpec> flows;
        for (std::uint32_t a : chips) {
            for (std::uint32_t c : chips) {
                if (a != c) {
                    flows.push_back({a, c, per_chip / static_cast<double>(p)});
                }
            }
        }
        b.on_chip(n, r, 1.0, "on-chip exchange");
        b.emit(std::move(flows), 1, 0.0, "all-to-all (direct)");
        plan.algorithm = "direct";
        return plan;
    }
    case CollectiveOp::all_reduce:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_gather:
        break;
    }

    const bool reduce = req.op != CollectiveOp::all_gather;
    const bool gather = req.op != CollectiveOp::reduce_scatter;
    const double v = n; // per chip after the on-chip stage
    if (reduce) {
        b.on_chip(n, r, 1.0, "on-chip reduce-scatter");
    }
    const Structure s = structure_of(f, chips);
    Choice c;
    switch (req.algorithm) {
    case Algorithm::ring:
    case Algorithm::bidirectional_ring:
    case Algorithm::mesh:
    case Algorithm::rdh:
        c.flat = req.algorithm;
        break;
    case Algorithm::torus_rings:
        if (!s.full_domain || s.domains != 1) {
            throw std::invalid_argument("collective: torus_rings needs the group to be exactly "
                                        "one NeuronLink domain");
        }
        c.flat = Algorithm::torus_rings;
        break;
    case Algorithm::automatic:
    case Algorithm::hierarchical:
        // `hierarchical` keeps to the hierarchical choices where the group has them.
        c = cheapest(f, local, b.moving_ranks(), req.op, chips, s, v,
                     req.algorithm == Algorithm::automatic);
        break;
    }
    chip_stage(b, req.op, chips, s, v, c, plan.algorithm);
    if (gather) {
        b.on_chip(n, r, 1.0, "on-chip all-gather");
    }
    return plan;
}

namespace {

double phases_seconds(const topology::Fabric& f, const CollectivePlan& plan,
                      KnownTransfers& known, double bound) {
    // Transfers by phase signature: a repeated or reused set of flows is estimated once.
    std::vector<std::uint32_t> hops;
    // Bytes per link of the phase being estimated, and the links it touched (to read and
    // clear them); kept per thread, sized to the largest fabric seen, all zero between calls.
    thread_local std::vector<double> load;
    thread_local std::vector<std::uint32_t> touched;
    if (load.size() < f.capacity().size()) {
        load.resize(f.capacity().size(), 0.0);
    }
    double total = 0.0;
    for (const Phase& ph : plan.phases) {
        double transfer = -1.0;
        for (const auto& [sig, t] : known) {
            if (sig == ph.signature) {
                transfer = t;
            }
        }
        if (transfer < 0.0) {
            touched.clear();
            std::int64_t latency_ns = 0;
            for (std::size_t i = 0; i < ph.flows.size(); ++i) {
                const FlowSpec& fl = ph.flows[i];
                if (fl.src == fl.dst || fl.bytes <= 0.0) {
                    continue;
                }
                hops.clear();
                // The flow network's salt (the flow's index in its group): the same paths.
                topology::route(f, fl.src, fl.dst, i, hops);
                latency_ns = std::max(latency_ns,
                                      topology::route_latency_ns(f, hops.data(), hops.size()));
                for (const std::uint32_t l : hops) {
                    if (load[l] == 0.0) {
                        touched.push_back(l);
                    }
                    load[l] += fl.bytes;
                }
            }
            double most = 0.0; // seconds of the busiest link
            for (const std::uint32_t l : touched) {
                most = std::max(most, load[l] / f.capacity()[l]);
                load[l] = 0.0;
            }
            transfer = most + static_cast<double>(latency_ns) * 1e-9;
            known.emplace_back(ph.signature, transfer);
        }
        total += static_cast<double>(ph.repeat) *
                 std::max(transfer + ph.overhead_seconds, ph.local_seconds);
        if (total >= bound) {
            break;
        }
    }
    return total;
}

} // namespace

double estimate_plan_seconds(const topology::Fabric& fabric, const CollectivePlan& plan) {
    KnownTransfers known;
    return plan.launch_seconds + phases_seconds(fabric, plan, known);
}

} // namespace trnsim::network
