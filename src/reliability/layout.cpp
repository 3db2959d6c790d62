#include "trnsim/reliability/layout.hpp"

#include <algorithm>
#include <stdexcept>

namespace trnsim::reliability {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

constexpr std::uint32_t kMaxPowerPartitions = 64;

} // namespace

bool Layout::domain_class(ComponentClass c) {
    return c != ComponentClass::power && !is_switch(c);
}

Layout::Layout(const cluster::ClusterShape& cluster, const HardwareFacts& hw,
               const FabricSpec& fabric, std::int64_t spare_domains,
               const std::array<bool, kClassCount>& present)
    : present_(present) {
    if (cluster.instances <= 0 || cluster.chips_per_instance <= 0) {
        throw std::invalid_argument("reliability: empty cluster");
    }
    ultraserver_domains_ = cluster.ultraserver_domains();
    instances_per_domain_ = cluster.instances_per_domain();
    job_domains_ = cluster.domains();
    spare_domains_ = spare_domains;
    chips_per_instance_ = cluster.chips_per_instance;
    const std::int64_t ipd = instances_per_domain_;
    const std::int64_t instances = domains() * ipd;

    // Components per domain.
    const auto set_domain = [&](ComponentClass c, std::int64_t n) {
        per_domain_[index(c)] = n;
        counts_[index(c)] = n * domains();
    };
    set_domain(ComponentClass::chip, chips_per_instance_ * ipd);
    set_domain(ComponentClass::hbm, chips_per_instance_ * ipd);
    set_domain(ComponentClass::host, ipd);
    set_domain(ComponentClass::software, ipd);
    set_domain(ComponentClass::nic, std::int64_t{hw.efa_interfaces} * ipd);
    set_domain(ComponentClass::neuronlink, cluster.neuronlink_cables_per_domain(hw.instance_torus, hw.switch_ports));
    set_domain(ComponentClass::neuronswitch,
               std::int64_t{hw.instance_switches} * ipd +
                   (ultraserver_domains_ ? hw.ultraserver_switches : 0));

    domains_per_power_ = std::max<std::int64_t>(1, ceil_div(fabric.power_domain_instances, ipd));
    power_domains_ = ceil_div(domains(), domains_per_power_);
    counts_[index(ComponentClass::power)] = power_domains_;

    // The fabric counts (header comment), from the cluster module.
    const cluster::ClosCounts clos =
        cluster::clos_counts(instances, hw.efa_interfaces, fabric.switch_radix);
    rails_ = static_cast<int>(clos.rails);
    instances_per_leaf_ = clos.instances_per_leaf;
    spines_per_pod_ = clos.spines_per_pod;
    leaves_per_rail_ = clos.leaves_per_rail;
    counts_[index(ComponentClass::leaf)] = clos.leaves;
    counts_[index(ComponentClass::spine)] = clos.spines;
    counts_[index(ComponentClass::core)] = clos.cores;

    // Entity arithmetic: only present classes get entities.
    domain_stride_ = 1;
    std::int64_t fabric_entities = 0;
    for (ComponentClass c : kAllClasses) {
        if (!present_[index(c)]) {
            continue;
        }
        if (domain_class(c)) {
            class_offset_[index(c)] = domain_stride_ - 1;
            domain_stride_ += per_domain_[index(c)];
        } else if (is_switch(c)) {
            class_offset_[index(c)] = fabric_entities;
            fabric_entities += counts_[index(c)];
        }
    }
    has_power_ = present_[index(ComponentClass::power)] ? 1 : 0;
    power_stride_ = has_power_ + domains_per_power_ * domain_stride_;
    const std::int64_t last_pd = power_domains_ - 1;
    const std::int64_t last_domains = domains() - last_pd * domains_per_power_;
    fabric_start_ = power_block_start(last_pd) + has_power_ + last_domains * domain_stride_;
    const std::int64_t total = fabric_start_ + fabric_entities;
    if (total >= engine::kMaxEntities) {
        throw std::invalid_argument("reliability: " + std::to_string(total) +
                                    " entities exceed the engine's limit of 2^26");
    }
    entities_ = static_cast<std::uint32_t>(total);

    partition_starts_.push_back(0);
    const std::int64_t parts = std::min<std::int64_t>(power_domains_, kMaxPowerPartitions);
    for (std::int64_t p = 0; p < parts; ++p) {
        partition_starts_.push_back(
            static_cast<std::uint32_t>(power_block_start(power_domains_ * p / parts)));
    }
    if (fabric_entities > 0) {
        partition_starts_.push_back(static_cast<std::uint32_t>(fabric_start_));
    }
}

std::pair<std::int64_t, std::int64_t> Layout::domains_of_leaf(std::int64_t leaf) const {
    const std::int64_t block = leaf % leaves_per_rail_;
    const std::int64_t instances = domains() * instances_per_domain_;
    const std::int64_t first = block * instances_per_leaf_;
    const std::int64_t last = std::min(first + instances_per_leaf_, instances);
    return {first / instances_per_domain_, ceil_div(last, instances_per_domain_)};
}

std::int64_t Layout::switches_carrying(ComponentClass c, std::int64_t job_domains) const {
    // The job's instances [0, job_domains x ipd) sit under leaf blocks [0, blocks) of every
    // rail.
    const std::int64_t blocks =
        std::min(ceil_div(job_domains * instances_per_domain_, instances_per_leaf_),
                 leaves_per_rail_);
    std::int64_t pods = 0;
    std::int64_t last_pod = -1;
    for (std::int64_t r = 0; r < rails_; ++r) {
        const std::int64_t first = pod_of_leaf(r * leaves_per_rail_);
        const std::int64_t last = pod_of_leaf(r * leaves_per_rail_ + blocks - 1);
        // Rails are numbered in order, so the pods of rail r start at or after those of r - 1.
        pods += last - std::max(first, last_pod + 1) + 1;
        last_pod = last;
    }
    switch (c) {
    case ComponentClass::leaf:
        return std::min(rails_ * blocks, count(c));
    case ComponentClass::spine:
        return std::min(pods * spines_per_pod_, count(c));
    case ComponentClass::core:
        return pods > 1 ? count(c) : 0;
    default:
        return 0;
    }
}

Impact Layout::impact(ComponentClass c, Effect e) const {
    switch (c) {
    case ComponentClass::software:
        return Impact::restart_only;
    case ComponentClass::power:
        return Impact::power;
    case ComponentClass::nic:
        return e == Effect::degrade ? Impact::fabric_degrade : Impact::replace_domain;
    case ComponentClass::leaf:
        if (e == Effect::automatic) {
            return rails_ > 1 ? Impact::fabric_degrade : Impact::fabric_interrupt;
        }
        return e == Effect::degrade ? Impact::fabric_degrade : Impact::fabric_interrupt;
    case ComponentClass::spine:
    case ComponentClass::core:
        if (e == Effect::automatic) {
            const std::int64_t tier =
                c == ComponentClass::spine ? spines_per_pod_ : count(ComponentClass::core);
            return tier > 1 ? Impact::fabric_degrade : Impact::fabric_interrupt;
        }
        return e == Effect::degrade ? Impact::fabric_degrade : Impact::fabric_interrupt;
    default:
        return Impact::replace_domain;
    }
}

std::string Layout::effect_problem(ComponentClass c, Effect e) const {
    if (e != Effect::degrade) {
        return {};
    }
    switch (c) {
    case ComponentClass::nic:
    case ComponentClass::leaf:
        if (rails_ < 2) {
            return std::string("a ") + to_string(c) +
                   " failure cannot be routed around: instances have one EFA interface";
        }
        return {};
    case ComponentClass::spine:
        return spines_per_pod_ > 1 ? std::string()
                                   : "a spine failure cannot be routed around: one spine per pod";
    case ComponentClass::core:
        return count(c) > 1 ? std::string()
                            : "a core failure cannot be routed around: fewer than two cores";
    default:
        return std::string("only nic, leaf, spine and core failures can degrade instead of "
                           "interrupting; a ") +
               to_string(c) + " failure stops its domain";
    }
}

engine::EntityId Layout::domain_entity(std::int64_t domain) const {
    const std::int64_t pd = domain / domains_per_power_;
    const std::int64_t local = domain % domains_per_power_;
    return static_cast<engine::EntityId>(power_block_start(pd) + has_power_ +
                                         local * domain_stride_);
}

engine::EntityId Layout::power_entity(std::int64_t power_domain) const {
    return static_cast<engine::EntityId>(power_block_start(power_domain));
}

engine::EntityId Layout::component(ComponentClass c, std::int64_t idx) const {
    if (c == ComponentClass::power) {
        return power_entity(idx);
    }
    if (is_switch(c)) {
        return static_cast<engine::EntityId>(fabric_start_ + class_offset_[index(c)] + idx);
    }
    const std::int64_t n = per_domain_[index(c)];
    return static_cast<engine::EntityId>(domain_entity(idx / n) + 1 + class_offset_[index(c)] +
                                         idx % n);
}

Layout::Located Layout::locate(engine::EntityId e) const {
    Located where;
    if (e == 0) {
        return where;
    }
    const std::int64_t id = e;
    if (id >= fabric_start_) {
        std::int64_t off = id - fabric_start_;
        for (ComponentClass c : {ComponentClass::leaf, ComponentClass::spine, ComponentClass::core}) {
            if (!present_[index(c)]) {
                continue;
            }
            if (off < counts_[index(c)]) {
                where.kind = EntityKind::component;
                where.cls = c;
                where.index = off;
                return where;
            }
            off -= counts_[index(c)];
        }
        throw std::out_of_range("reliability: no entity " + std::to_string(e));
    }
    const std::int64_t rel = id - 1;
    const std::int64_t pd = rel / power_stride_;
    std::int64_t off = rel % power_stride_;
    if (has_power_ && off == 0) {
        where.kind = EntityKind::power;
        where.cls = ComponentClass::power;
        where.index = pd;
        return where;
    }
    off -= has_power_;
    const std::int64_t domain = pd * domains_per_power_ + off / domain_stride_;
    std::int64_t k = off % domain_stride_;
    where.domain = domain;
    if (k == 0) {
        where.kind = EntityKind::domain;
        return where;
    }
    k -= 1;
    for (ComponentClass c : kAllClasses) {
        if (!present_[index(c)] || !domain_class(c)) {
            continue;
        }
        const std::int64_t n = per_domain_[index(c)];
        if (k < n) {
            where.kind = EntityKind::component;
            where.cls = c;
            where.index = domain * n + k;
            return where;
        }
        k -= n;
    }
    throw std::out_of_range("reliability: no entity " + std::to_string(e));
}

} // namespace trnsim::reliability
