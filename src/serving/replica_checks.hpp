// The checks of a replica's serving spec against its model and chip (private to serving).
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/serving/spec.hpp"
#include "trnsim/workload/model.hpp"

namespace trnsim::serving {

/// tp, ep, batch, context, prefill batch and the weights' storage (1-byte, microscaling,
/// structured-sparse) against the model and the chip at `lnc`; InputError at the
/// workload.serving key (or hardware.lnc) otherwise.
void check_replica(const workload::ModelSpec& model, const compute::ChipSpec& chip, int lnc,
                   const ServingSpec& s);

} // namespace trnsim::serving
