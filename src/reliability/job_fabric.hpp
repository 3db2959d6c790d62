// The run simulation's view of the scale-out fabric (private to the reliability module): the
// degraded network elements (NICs, leaves, spines, cores that are down but do not stop the
// job), which of them carry the job's traffic on the domains it holds now, and the share of
// its EFA bandwidth left (layout.hpp describes the blast radius of each element).
//
// The factor is the product of what is left on the job's worst rail set (an instance with k
// of its r rails down keeps (r - k) / r), in its worst pod's spines ((s - k) / s) and, when
// the job spans pods, in the cores; elements outside the job's traffic count but do not slow
// it (the job may move onto them).
#pragma once

#include "trnsim/engine/event.hpp"
#include "trnsim/reliability/layout.hpp"

#include "job_domains.hpp"

#include <cstdint>
#include <map>

namespace trnsim::reliability::detail {

class JobFabric {
public:
    explicit JobFabric(const Layout& layout) : layout_(layout) {}

    /// A network element went down (delta +1) or came back (-1).
    void change(engine::EntityId element, int delta);
    /// The job's share of its EFA bandwidth on the domains `job` holds, in [0, 1].
    double factor(const JobDomains& job) const;
    /// Whether `element` carries the job's traffic (nic, leaf, spine, core); any other
    /// component: true.
    bool carries_job(engine::EntityId element, const JobDomains& job) const;

private:
    bool leaf_carries_job(std::int64_t leaf, const JobDomains& job) const;
    bool pod_carries_job(std::int64_t pod, const JobDomains& job) const;
    bool job_spans_pods(const JobDomains& job) const;

    const Layout& layout_;
    std::map<std::int64_t, int> rails_down_;  ///< by instance
    std::map<std::int64_t, int> spines_down_; ///< by pod
    int cores_down_ = 0;
};

} // namespace trnsim::reliability::detail
