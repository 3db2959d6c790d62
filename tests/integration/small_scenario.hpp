// The small training scenario the input and output contract tests run: one trn2 configuration
// that plans and runs in milliseconds, writing small.h5.
#pragma once

namespace trnsim::test {

inline constexpr const char* kSmallScenario = R"(name: small
hardware: {chip: trn2}
cluster: {ultraservers: 4}
workload:
  model: llama3-8b
  sequence_length: 4096
  global_batch: 256
  tokens: 10B
  parallelism: {tp: 4, pp: 1, zero: 1}
output: {file: small.h5}
)";

} // namespace trnsim::test
