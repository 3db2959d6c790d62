// `mpirun -np N trnsim batch ...`: a sweep's runs spread over MPI ranks (only built with
// TRNSIM_WITH_MPI; mpi.h stays inside mpi_batch.cpp).
//
// Every rank reads the sweep and validates every point (the same work everywhere, so a bad
// point stops every rank with exit code 2 and nothing written, with no message passing). Rank 0
// then owns the work queue: a server thread answers requests for the next run and collects the
// records, while rank 0's own worker threads take runs from the same queue. Each thread of the
// other ranks asks rank 0 for a run when it is free (dynamic load balancing: a run takes
// milliseconds or minutes) and sends its record back. Rank 0 writes the one results file.
// Records are a function of (sweep, point, replicate) only, so the file's datasets equal those
// of a single-process run of the same sweep (tests/integration/mpi_test.cpp).
//
// MPI calls are serialised by a mutex per process (MPI_THREAD_SERIALIZED).
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/study/batch.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace trnsim::cli {

class MpiSession {
public:
    /// Initialises MPI (with MPI_THREAD_SERIALIZED). Throws std::runtime_error when the MPI
    /// library cannot provide it.
    MpiSession();
    ~MpiSession();
    MpiSession(const MpiSession&) = delete;
    MpiSession& operator=(const MpiSession&) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }
    /// True on every rank when `ok` is true on every rank (a collective call).
    bool all(bool ok) const;
    /// Ends every rank with `code` (after an internal error on one of them).
    [[noreturn]] void abort(int code) const;

private:
    int rank_ = 0;
    int size_ = 1;
};

/// Runs the runs of `pending` (rank 0's list; ignored elsewhere) over every rank with
/// `threads` threads each. On rank 0, `done` receives every record (from any rank), one call
/// at a time; other ranks return when the queue is empty. A collective call.
void run_distributed(const MpiSession& mpi, const study::Sweep& sweep,
                     const std::vector<config::ScenarioSpec>& points, int threads,
                     const std::vector<std::int64_t>& pending,
                     const std::function<void(study::RunRecord&&)>& done);

} // namespace trnsim::cli
