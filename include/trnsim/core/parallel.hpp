#pragma once
// The one way work outside the engine's event loop runs on several threads: a loop over
// indices whose iterations are independent (replications, a sweep's runs and checks, a plan's
// candidates, calibration points, the step model's collective plans). The engine's window
// driver keeps its own crew (src/engine/window_driver.cpp); everything else comes here.
//
// Results stay independent of the thread count as long as `work` writes what index i
// produces to slot i (or to a per-worker scratch that is merged in a fixed order): which
// thread runs an index, and when, is not deterministic; which indices run is.

#include <cstddef>
#include <functional>

namespace trnsim {

/// Runs `work(index, worker)` once for every index in [0, n) on up to `threads` threads,
/// the calling thread being one of them; returns when every call has returned.
///
/// - Indices are handed out in increasing order, `chunk` at a time, to whichever thread is
///   free (dynamic scheduling: iterations may differ in cost by orders of magnitude).
/// - `worker` is in [0, threads) and no two calls running at the same time share one: it
///   indexes per-thread scratch. The caller is worker 0.
/// - If a call throws, no further chunk is handed out; the chunks already taken run to their
///   end (or to their own exception), and once every thread has stopped, the exception of the
///   lowest index is rethrown. Since every index below it was handed out first, that is the
///   exception a plain sequential loop would have thrown.
/// - With threads <= 1, or a single chunk, everything runs inline on the caller, in order.
///   A work item may itself call parallel_for (inline with threads = 1, or with a team of
///   its own).
///
/// Threads are started for each call and joined before it returns (no pool lives between
/// calls): the callers run work of milliseconds to hours per index, against tens of
/// microseconds to start a thread, and a call never waits for a pool another call holds.
void parallel_for(std::size_t n, int threads,
                  const std::function<void(std::size_t index, int worker)>& work,
                  std::size_t chunk = 1);

} // namespace trnsim
