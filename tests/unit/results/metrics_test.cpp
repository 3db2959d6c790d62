// Metrics recorded during a parallel run reach the results file in one order, whatever the
// thread count and partitioning: the written datasets are identical.
#include "support/phold.hpp"

#include "trnsim/results/hdf5_writer.hpp"
#include "trnsim/results/metrics.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace trnsim::results {
namespace {

namespace fs = std::filesystem;

/// PHOLD that records, for every handled event, the entity's count of handled events and
/// whether the next event leaves the entity.
struct RecordingPhold {
    explicit RecordingPhold(const phold::Config& c, engine::MetricSink& sink)
        : inner(c), handled_id(sink.declare("handled", "events")),
          remote_id(sink.declare("remote", "bool")) {}
    phold::Model inner;
    engine::MetricId handled_id;
    engine::MetricId remote_id;

    template <class Q>
    void handle(engine::Context<Q>& ctx, const engine::Event& e) {
        const auto n = inner.react(ctx.self(), ctx.now_ns(), e.type);
        ctx.record(handled_id, inner.handled(ctx.self()));
        ctx.record(remote_id, n.target != ctx.self() ? 1.0 : 0.0);
        ctx.schedule_at_ns(n.target, n.time, 0);
    }
};

std::string run_and_write(std::uint32_t partitions, int threads, const fs::path& file) {
    phold::Config c;
    c.entities = 500;
    c.events_per_entity = 2;
    c.remote = 0.5;
    c.end_ns = 10'000;
    engine::MetricSink sink;
    RecordingPhold model(c, sink);
    engine::Simulator<RecordingPhold> sim(model, engine::PartitionMap::blocks(c.entities, partitions),
                                          Duration::from_ns(c.lookahead_ns), &sink);
    for (engine::EntityId e = 0; e < c.entities; ++e) {
        for (std::uint32_t k = 0; k < c.events_per_entity; ++k) {
            sim.schedule(e, SimTime::from_ns(model.inner.initial_time(e)), 0);
        }
    }
    sim.run(SimTime::from_ns(c.end_ns), threads);
    ResultsFile f;
    f.meta = {"test", "phold", "", static_cast<std::int64_t>(c.seed), 1};
    f.summary.add_int("events");
    f.summary.add_row({static_cast<std::int64_t>(model.inner.total_handled())});
    f.tables.emplace_back("/metrics", metrics_table(sink));
    write_hdf5(file.string(), f);
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

TEST(Metrics, MergedInEntityOrderWhateverTheThreads) {
    const fs::path dir = test::scratch_path("trnsim-metrics-test");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string reference = run_and_write(1, 1, dir / "ref.h5");
    ASSERT_FALSE(reference.empty());
    for (std::uint32_t partitions : {2u, 7u, 32u}) {
        for (int threads : {1, 2, 4}) {
            // Same metadata (threads are recorded by the caller, here fixed), same datasets:
            // the files are byte-identical.
            EXPECT_EQ(run_and_write(partitions, threads, dir / "x.h5"), reference)
                << partitions << " partitions, " << threads << " threads";
        }
    }
    const Table t = read_summary((dir / "ref.h5").string());
    EXPECT_GT(t.columns()[0].ints[0], 5000);
    fs::remove_all(dir);
}

TEST(Metrics, TableOrderAndColumns) {
    engine::MetricSink sink;
    const auto a = sink.declare("queue_depth", "events");
    const auto b = sink.declare("busy", "s");
    sink.set_partitions(2);
    sink.record(1, 5, a, 10, 1.0);
    sink.record(0, 7, b, 5, 2.0);
    sink.record(1, 5, b, 20, 3.0);
    sink.record(0, 2, a, 30, 4.0);
    const Table t = metrics_table(sink);
    ASSERT_EQ(t.rows(), 4u);
    EXPECT_EQ(t.columns()[0].ints, (std::vector<std::int64_t>{2, 5, 5, 7}));
    EXPECT_EQ(t.columns()[1].strings,
              (std::vector<std::string>{"queue_depth", "queue_depth", "busy", "busy"}));
    EXPECT_EQ(t.columns()[3].floats, (std::vector<double>{4.0, 1.0, 3.0, 2.0}));
    EXPECT_DOUBLE_EQ(t.columns()[2].floats[0], 30e-9);
}

} // namespace
} // namespace trnsim::results
