#include "trnsim/reliability/spec.hpp"

namespace trnsim::reliability {

const char* to_string(ComponentClass c) {
    switch (c) {
    case ComponentClass::chip:
        return "chip";
    case ComponentClass::hbm:
        return "hbm";
    case ComponentClass::host:
        return "host";
    case ComponentClass::neuronlink:
        return "neuronlink";
    case ComponentClass::nic:
        return "nic";
    case ComponentClass::leaf:
        return "leaf";
    case ComponentClass::spine:
        return "spine";
    case ComponentClass::core:
        return "core";
    case ComponentClass::power:
        return "power";
    case ComponentClass::software:
        return "software";
    }
    return "?";
}

std::optional<ComponentClass> class_from_string(std::string_view name) {
    for (ComponentClass c : kAllClasses) {
        if (name == to_string(c)) {
            return c;
        }
    }
    return std::nullopt;
}

const char* to_string(LifetimeKind k) {
    switch (k) {
    case LifetimeKind::exponential:
        return "exponential";
    case LifetimeKind::weibull:
        return "weibull";
    case LifetimeKind::lognormal:
        return "lognormal";
    }
    return "?";
}

const char* to_string(Effect e) {
    switch (e) {
    case Effect::automatic:
        return "auto";
    case Effect::interrupt:
        return "interrupt";
    case Effect::degrade:
        return "degrade";
    }
    return "?";
}

const char* to_string(RecoveryScope s) {
    return s == RecoveryScope::job ? "job" : "replica";
}

const char* to_string(CheckpointMode m) {
    switch (m) {
    case CheckpointMode::sync:
        return "sync";
    case CheckpointMode::async:
        return "async";
    case CheckpointMode::memory:
        return "memory";
    }
    return "?";
}

const char* to_string(RepairDistribution d) {
    return d == RepairDistribution::fixed ? "fixed" : "exponential";
}

} // namespace trnsim::reliability
