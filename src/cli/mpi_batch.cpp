#include "mpi_batch.hpp"

#include "trnsim/report/study_results.hpp"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace trnsim::cli {

namespace {

// Message tags.
constexpr int kRequest = 1;  // worker -> 0: give me a run (no payload)
constexpr int kWork = 2;     // 0 -> worker: int64 run index, -1 when the queue is empty
constexpr int kResult = 3;   // worker -> 0: an encoded RunRecord
constexpr int kFinished = 4; // worker -> 0: every thread of the rank has stopped

void check(int status, const char* what) {
    if (status != MPI_SUCCESS) {
        throw std::runtime_error(std::string("MPI: ") + what + " failed");
    }
}

/// Runs handed out by rank 0, for the threads of another rank.
class RemoteSource final : public study::WorkSource {
public:
    explicit RemoteSource(std::mutex& mpi) : mpi_(mpi) {}
    std::optional<std::int64_t> next() override {
        const std::lock_guard<std::mutex> lock(mpi_);
        check(MPI_Send(nullptr, 0, MPI_BYTE, 0, kRequest, MPI_COMM_WORLD), "send a request");
        std::int64_t run = -1;
        check(MPI_Recv(&run, 1, MPI_INT64_T, 0, kWork, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "receive work");
        return run < 0 ? std::nullopt : std::optional<std::int64_t>(run);
    }

private:
    std::mutex& mpi_;
};

} // namespace

MpiSession::MpiSession() {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        throw std::runtime_error("the MPI library does not support MPI_THREAD_SERIALIZED");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

bool MpiSession::all(bool ok) const {
    int mine = ok ? 1 : 0;
    int every = 0;
    check(MPI_Allreduce(&mine, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
    return every == 1;
}

void MpiSession::abort(int code) const {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::abort(); // MPI_Abort does not return
}

void run_distributed(const MpiSession& mpi, const study::Sweep& sweep,
                     const std::vector<config::ScenarioSpec>& points, int threads,
                     const std::vector<std::int64_t>& pending,
                     const std::function<void(study::RunRecord&&)>& done) {
    std::mutex mpi_lock; // MPI_THREAD_SERIALIZED: one MPI call at a time in this process
    if (mpi.rank() != 0) {
        RemoteSource source(mpi_lock);
        try {
            study::execute_all(sweep, points, threads, source, report::batch_run_values, [&](study::RunRecord&& r) {
                const std::string bytes = study::encode(r);
                const std::lock_guard<std::mutex> lock(mpi_lock);
                check(MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, kResult,
                               MPI_COMM_WORLD),
                      "send a result");
            });
        } catch (const std::exception& e) {
            std::cerr << "trnsim: internal error on MPI rank " << mpi.rank() << ": " << e.what()
                      << "\n";
            mpi.abort(1);
        }
        const std::lock_guard<std::mutex> lock(mpi_lock);
        check(MPI_Send(nullptr, 0, MPI_BYTE, 0, kFinished, MPI_COMM_WORLD), "send finished");
        return;
    }

    study::ListSource source(pending); // shared by the local threads and the server
    std::mutex sink_lock; // rank 0's own records and the remote ones reach `done` one at a time
    const auto deliver = [&](study::RunRecord&& r) {
        const std::lock_guard<std::mutex> lock(sink_lock);
        done(std::move(r));
    };
    std::atomic<bool> failed{false};
    std::string failure;
    std::thread server([&]() {
        try {
            int finished = 0;
            while (finished < mpi.size() - 1) {
                int flag = 0;
                MPI_Status status;
                std::unique_lock<std::mutex> lock(mpi_lock);
                check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status),
                      "probe");
                if (!flag) {
                    lock.unlock();
                    // Nothing to do: sleep rather than spin on a core the runs need.
                    std::this_thread::sleep_for(std::chrono::microseconds(500));
                    continue;
                }
                int bytes = 0;
                MPI_Get_count(&status, MPI_BYTE, &bytes);
                std::string buffer(static_cast<std::size_t>(bytes), '\0');
                check(MPI_Recv(buffer.data(), bytes, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                      "receive");
                if (status.MPI_TAG == kRequest) {
                    const std::optional<std::int64_t> run = source.next();
                    const std::int64_t reply = run ? *run : -1;
                    check(MPI_Send(&reply, 1, MPI_INT64_T, status.MPI_SOURCE, kWork,
                                   MPI_COMM_WORLD),
                          "send work");
                } else if (status.MPI_TAG == kResult) {
                    lock.unlock();
                    deliver(study::decode(buffer));
                } else if (status.MPI_TAG == kFinished) {
                    ++finished;
                }
            }
        } catch (const std::exception& e) {
            failure = e.what();
            failed = true;
        }
    });
    try {
        study::execute_all(sweep, points, threads, source, report::batch_run_values, deliver);
    } catch (const std::exception& e) {
        std::cerr << "trnsim: internal error on MPI rank 0: " << e.what() << "\n";
        mpi.abort(1);
    }
    server.join();
    if (failed) {
        std::cerr << "trnsim: internal error on MPI rank 0: " << failure << "\n";
        mpi.abort(1);
    }
}

} // namespace trnsim::cli
