#include "job_fabric.hpp"

#include <algorithm>

namespace trnsim::reliability::detail {

void JobFabric::change(engine::EntityId element, int delta) {
    const Layout& l = layout_;
    const Layout::Located where = l.locate(element);
    const auto bump = [delta](std::map<std::int64_t, int>& m, std::int64_t key) {
        if ((m[key] += delta) == 0) {
            m.erase(key);
        }
    };
    switch (where.cls) {
    case ComponentClass::nic:
        bump(rails_down_, where.index / l.rails());
        break;
    case ComponentClass::leaf: {
        const std::int64_t block = where.index % l.leaves_per_rail();
        const std::int64_t instances = l.domains() * l.instances_per_domain();
        const std::int64_t first = block * l.instances_per_leaf();
        const std::int64_t last = std::min(first + l.instances_per_leaf(), instances);
        for (std::int64_t i = first; i < last; ++i) {
            bump(rails_down_, i);
        }
        break;
    }
    case ComponentClass::spine:
        bump(spines_down_, l.pod_of_spine(where.index));
        break;
    case ComponentClass::core:
        cores_down_ += delta;
        break;
    default:
        break;
    }
}

double JobFabric::factor(const JobDomains& job) const {
    // Degraded elements slow the job only where its traffic goes: its own instances' rails,
    // the spines of the pods it uses, the cores when it spans pods.
    const Layout& l = layout_;
    int worst_rails = 0;
    for (const auto& [instance, down] : rails_down_) {
        if (job.in_job(instance / l.instances_per_domain())) {
            worst_rails = std::max(worst_rails, down);
        }
    }
    int worst_spines = 0;
    for (const auto& [pod, down] : spines_down_) {
        if (pod_carries_job(pod, job)) {
            worst_spines = std::max(worst_spines, down);
        }
    }
    double f = static_cast<double>(l.rails() - std::min(worst_rails, l.rails())) /
               static_cast<double>(l.rails());
    if (worst_spines > 0) {
        f *= static_cast<double>(std::max<std::int64_t>(l.spines_per_pod() - worst_spines, 0)) /
             static_cast<double>(l.spines_per_pod());
    }
    if (cores_down_ > 0 && job_spans_pods(job)) {
        const std::int64_t cores = l.count(ComponentClass::core);
        f *= static_cast<double>(std::max<std::int64_t>(cores - cores_down_, 0)) /
             static_cast<double>(cores);
    }
    return f;
}

bool JobFabric::leaf_carries_job(std::int64_t leaf, const JobDomains& job) const {
    const auto [first, last] = layout_.domains_of_leaf(leaf);
    for (std::int64_t d = first; d < last; ++d) {
        if (job.in_job(d)) {
            return true;
        }
    }
    return false;
}

bool JobFabric::pod_carries_job(std::int64_t pod, const JobDomains& job) const {
    const Layout& l = layout_;
    const std::int64_t leaves = l.count(ComponentClass::leaf);
    for (std::int64_t leaf = pod * l.leaves_per_pod();
         leaf < std::min(leaves, (pod + 1) * l.leaves_per_pod()); ++leaf) {
        if (leaf_carries_job(leaf, job)) {
            return true;
        }
    }
    return false;
}

bool JobFabric::job_spans_pods(const JobDomains& job) const {
    const Layout& l = layout_;
    std::int64_t seen = -1;
    for (std::int64_t slot = 0; slot < job.slots(); ++slot) {
        const std::int64_t d = job.domain_of(slot);
        if (d < 0) {
            continue;
        }
        for (std::int64_t i = d * l.instances_per_domain(); i < (d + 1) * l.instances_per_domain();
             ++i) {
            for (std::int64_t r = 0; r < l.rails(); ++r) {
                const std::int64_t pod =
                    l.pod_of_leaf(r * l.leaves_per_rail() + i / l.instances_per_leaf());
                if (seen >= 0 && pod != seen) {
                    return true;
                }
                seen = pod;
            }
        }
    }
    return false;
}

bool JobFabric::carries_job(engine::EntityId element, const JobDomains& job) const {
    const Layout& l = layout_;
    const Layout::Located where = l.locate(element);
    switch (where.cls) {
    case ComponentClass::nic:
        return job.in_job(where.domain);
    case ComponentClass::leaf:
        return leaf_carries_job(where.index, job);
    case ComponentClass::spine:
        return pod_carries_job(l.pod_of_spine(where.index), job);
    case ComponentClass::core:
        return job_spans_pods(job);
    default:
        return true;
    }
}

} // namespace trnsim::reliability::detail
