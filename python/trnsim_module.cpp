// trnsim from Python: `import trnsim` runs scenarios, sweeps and plans in the calling process
// and returns their results as pandas DataFrames, the same numbers `trnsim run`, `batch` and
// `plan` write to their HDF5 files (the report module assembles both).
//
//     import trnsim
//     r = trnsim.run("scenarios/default.yaml", {"workload.parallelism.tp": 32})
//     r.summary["step_time_s"]            # the /summary row as a dict
//     r.tables["/step/breakdown"]         # every table as a pandas DataFrame
//
// trnsim.fmt holds the command line's formatters (src/core/format.cpp): trnsim.fmt.seconds(2.1e6)
// is "24.3 d" as in the summary; analysis/trnsim_format.py is tested equal to them.
//
// Bad input raises trnsim.InputError (a ValueError) with the attributes file, line, column
// and key_path, before anything runs. Simulations release the GIL.
#include "trnsim/config/load.hpp"
#include "trnsim/config/study.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/engine/window_driver.hpp"
#include "trnsim/report/run_results.hpp"
#include "trnsim/report/study_results.hpp"
#include "trnsim/results/hdf5_writer.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/workload_kinds.hpp"
#include "trnsim/study/batch.hpp"
#include "trnsim/study/planner.hpp"
#include "trnsim/study/sweep.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

using namespace trnsim;

/// A results file in Python form.
struct Result {
    py::dict summary;   ///< the first /summary row: column -> value
    py::object runs;    ///< /summary as a DataFrame (one row per run, point or finalist)
    py::dict tables;    ///< every other table: dataset path -> DataFrame
    py::dict texts;     ///< text datasets: path -> str
    py::dict meta;      ///< /meta attributes
    std::string scenario; ///< the resolved scenario (or the base of a study)
};

py::object dataframe(const results::Table& t) {
    py::dict columns;
    for (const auto& c : t.columns()) {
        if (c.type == results::Table::Type::int64) {
            columns[py::str(c.name)] = py::array_t<std::int64_t>(
                static_cast<py::ssize_t>(c.ints.size()), c.ints.data());
        } else if (c.type == results::Table::Type::float64) {
            columns[py::str(c.name)] = py::array_t<double>(
                static_cast<py::ssize_t>(c.floats.size()), c.floats.data());
        } else {
            columns[py::str(c.name)] = py::cast(c.strings);
        }
    }
    py::list order;
    for (const auto& c : t.columns()) {
        order.append(c.name);
    }
    return py::module_::import("pandas").attr("DataFrame")(columns, py::arg("columns") = order);
}

py::object cell(const results::Table::Column& c, std::size_t row) {
    if (c.type == results::Table::Type::int64) {
        return py::int_(c.ints[row]);
    }
    if (c.type == results::Table::Type::float64) {
        return py::float_(c.floats[row]);
    }
    return py::str(c.strings[row]);
}

Result to_python(const results::ResultsFile& f) {
    Result r;
    if (f.summary.rows() > 0) {
        for (const auto& c : f.summary.columns()) {
            r.summary[py::str(c.name)] = cell(c, 0);
        }
    }
    r.runs = dataframe(f.summary);
    for (const auto& [path, table] : f.tables) {
        r.tables[py::str(path)] = dataframe(table);
    }
    for (const auto& [path, text] : f.texts) {
        r.texts[py::str(path)] = text;
    }
    r.meta["trnsim_version"] = f.meta.trnsim_version;
    r.meta["name"] = f.meta.name;
    r.meta["seed"] = f.meta.seed;
    r.meta["threads"] = f.meta.threads;
    r.meta["schema_version"] = results::kSchemaVersion;
    r.scenario = f.meta.scenario_yaml;
    return r;
}

/// "key=value" overrides from a dict (values as YAML: JSON text for lists and mappings,
/// true/false for booleans) or a list of "key=value" strings.
std::vector<std::string> overrides_of(const py::object& o) {
    std::vector<std::string> out;
    if (o.is_none()) {
        return out;
    }
    if (py::isinstance<py::dict>(o)) {
        const auto json = py::module_::import("json");
        for (const auto& [k, v] : o.cast<py::dict>()) {
            std::string value;
            if (py::isinstance<py::bool_>(v)) {
                value = v.cast<bool>() ? "true" : "false";
            } else if (v.is_none()) {
                value = "null";
            } else if (py::isinstance<py::str>(v)) {
                value = v.cast<std::string>();
            } else {
                value = json.attr("dumps")(v).cast<std::string>();
            }
            out.push_back(py::str(k).cast<std::string>() + "=" + value);
        }
        return out;
    }
    return o.cast<std::vector<std::string>>();
}

std::vector<std::string> with_threads(std::vector<std::string> o, const std::optional<int>& t) {
    if (t) {
        o.push_back("simulation.threads=" + std::to_string(*t));
    }
    return o;
}

int resolve(int threads) { return threads > 0 ? threads : engine::default_thread_count(); }

Result run(const std::string& path, const py::object& overrides, std::optional<int> threads,
           std::optional<std::string> output) {
    const config::ScenarioSpec spec =
        config::load_scenario(path, with_threads(overrides_of(overrides), threads));
    results::ResultsFile file;
    {
        py::gil_scoped_release free;
        const sim::ScenarioOutcome outcome = sim::run_scenario(spec);
        file = report::scenario_results(spec, outcome,
                                        {TRNSIM_VERSION, resolve(spec.simulation.threads)});
        if (output) {
            results::write_hdf5(*output, file);
        }
    }
    return to_python(file);
}

Result batch(const std::string& path, std::optional<int> threads,
             std::optional<std::string> output) {
    const config::SweepSpec spec = config::load_sweep(path);
    const study::Sweep sweep = study::load(spec);
    const int n = resolve(threads.value_or(0));
    results::ResultsFile file;
    {
        py::gil_scoped_release free;
        const auto points = study::prepare(sweep, n);
        std::vector<study::RunRecord> records;
        study::ListSource source(study::pending_runs(sweep, {}));
        study::execute_all(sweep, points, n, source, report::batch_run_values,
                           [&](study::RunRecord&& r) { records.push_back(std::move(r)); });
        study::sort_records(records);
        const config::ScenarioSpec base = config::load_scenario_with(sweep.base, spec.fixed);
        file = report::batch_results(sweep, base.resolved_yaml,
                                     report::batch_context(base.resolved_yaml, sweep.base_seed),
                                     records, {TRNSIM_VERSION, n});
        if (output) {
            results::write_hdf5(*output, file);
        }
    }
    return to_python(file);
}

Result plan(const std::string& path, std::optional<int> threads,
            std::optional<std::string> output) {
    const config::PlanSpec spec = config::load_plan(path);
    std::vector<config::Override> extra;
    if (spec.seed) {
        extra.push_back({"seed", std::to_string(*spec.seed), {}});
    }
    if (spec.replications) {
        extra.push_back({"simulation.replications", std::to_string(*spec.replications), {}});
    }
    const config::ScenarioSpec base = config::load_scenario_with(spec.base, extra);
    const int n = resolve(threads.value_or(0));
    results::ResultsFile file;
    {
        py::gil_scoped_release free;
        const study::PlanResult result = study::run_plan(spec, base, n);
        file = report::plan_results(spec, base, result, {TRNSIM_VERSION, n});
        if (output) {
            results::write_hdf5(*output, file);
        }
    }
    return to_python(file);
}

py::dict validate(const std::string& path, const py::object& overrides) {
    py::dict out;
    switch (config::file_kind(path)) {
    case config::FileKind::sweep: {
        const study::Sweep sweep = study::load(config::load_sweep(path));
        (void)study::prepare(sweep, resolve(0));
        out["kind"] = "sweep";
        out["points"] = sweep.points.size();
        out["runs"] = sweep.runs();
        break;
    }
    case config::FileKind::plan: {
        const config::PlanSpec spec = config::load_plan(path);
        const config::ScenarioSpec base = config::load_scenario_with(spec.base, {});
        out["kind"] = "plan";
        out["candidates"] = study::candidate_count(spec, base);
        break;
    }
    case config::FileKind::scenario: {
        const config::ScenarioSpec spec = config::load_scenario(path, overrides_of(overrides));
        if (spec.workload_type == config::WorkloadType::training) {
            try {
                const workload::Plan p = sim::make_plan(spec);
                out["chips"] = p.cluster.chips();
                out["ranks"] = p.ranks;
                out["tp"] = p.tp;
                out["pp"] = p.pp;
                out["dp"] = p.dp;
                out["memory_per_rank_bytes"] = p.memory.worst.total().count();
            } catch (const InputError& e) {
                throw e.located(spec.sources);
            }
        }
        out["kind"] = "scenario";
        out["scenario"] = spec.resolved_yaml;
        break;
    }
    }
    return out;
}

} // namespace

PYBIND11_MODULE(trnsim, m) {
    m.doc() = "trnsim: run Trainium cluster scenarios, sweeps and plans from Python";
    m.attr("__version__") = TRNSIM_VERSION;

    static py::exception<InputError> input_error(m, "InputError", PyExc_ValueError);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) {
                std::rethrow_exception(p);
            }
        } catch (const InputError& e) {
            py::object type = py::reinterpret_borrow<py::object>(input_error.ptr());
            py::object exc = type(e.what());
            exc.attr("file") = e.location().file;
            exc.attr("line") = e.location().line;
            exc.attr("column") = e.location().column;
            exc.attr("key_path") = e.key_path();
            exc.attr("message") = e.message();
            PyErr_SetObject(input_error.ptr(), exc.ptr());
        } catch (const UsageError& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        }
    });

    py::class_<Result>(m, "Result", "A results file: summary, tables and texts (pandas).")
        .def_readonly("summary", &Result::summary, "the first /summary row as a dict")
        .def_readonly("runs", &Result::runs, "/summary as a DataFrame")
        .def_readonly("tables", &Result::tables, "dataset path -> DataFrame")
        .def_readonly("texts", &Result::texts, "dataset path -> str")
        .def_readonly("meta", &Result::meta, "/meta attributes")
        .def_readonly("scenario", &Result::scenario, "the resolved scenario (YAML)")
        .def("__repr__", [](const Result& r) {
            return "<trnsim.Result " + py::str(r.meta["name"]).cast<std::string>() + ": " +
                   std::to_string(py::len(r.tables)) + " tables>";
        });

    m.def("run", &run, py::arg("scenario"), py::arg("overrides") = py::none(),
          py::arg("threads") = py::none(), py::arg("output") = py::none(),
          "Runs a scenario file with overrides ({'key.path': value} or ['key.path=value']); "
          "writes the HDF5 file too when output is given.");
    m.def("batch", &batch, py::arg("sweep"), py::arg("threads") = py::none(),
          py::arg("output") = py::none(), "Runs every point of a sweep file.");
    m.def("plan", &plan, py::arg("plan"), py::arg("threads") = py::none(),
          py::arg("output") = py::none(), "Runs a plan file's search.");
    py::module_ f = m.def_submodule(
        "fmt", "The command line's formatters of quantities (src/core/format.cpp).");
    f.def("fixed", &fmt::fixed, py::arg("v"), py::arg("decimals"), "printf %.*f, C locale");
    f.def("count", &fmt::count, py::arg("v"), "8.03B, 15.0T, 512, 1.23M");
    f.def("integer", &fmt::integer, py::arg("v"), "1,024 (an int64)");
    f.def("bytes", py::overload_cast<double>(&fmt::bytes), py::arg("b"), "512 B, 24.0 GiB");
    f.def("bandwidth", [](double v) { return fmt::bandwidth(Bandwidth::bytes_per_s(v)); },
          py::arg("bytes_per_s"), "25.0 GB/s, 2.90 TB/s");
    f.def("flop_rate", [](double v) { return fmt::flop_rate(FlopRate::per_s(v)); },
          py::arg("per_s"), "667 TFLOP/s");
    f.def("seconds", &fmt::seconds, py::arg("s"), "850 ns, 4.56 ms, 12.5 min, 61.2 d");
    f.def("money", [](double v) { return fmt::money(Money::usd(v)); }, py::arg("usd"),
          "$1,234,567 (cents below $1,000)");
    f.def("percent", &fmt::percent, py::arg("fraction"), "43.2% of 0.432");

    m.def("validate", &validate, py::arg("file"), py::arg("overrides") = py::none(),
          "Checks a scenario, sweep or plan file without running it; returns what it found.");
}
