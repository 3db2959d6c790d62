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
// and key_path, before anything runs: a mistake in a file or an override, an argument of the
// wrong type or range, and an output that would replace an input or cannot be written (the
// command line's output contract, report/outputs.hpp). Simulations release the GIL.
#include "trnsim/config/load.hpp"
#include "trnsim/config/study.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/engine/window_driver.hpp"
#include "trnsim/report/outputs.hpp"
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

/// `text` with control characters but line breaks shown as \xNN (a message may quote a
/// file name or key that holds them).
std::string visible(const std::string& text) {
    std::string out;
    for (const char c : text) {
        const auto b = static_cast<unsigned char>(c);
        if ((b < 0x20 && c != '\n') || b == 0x7f) {
            const char* digits = "0123456789abcdef";
            out += std::string("\\x") + digits[b >> 4] + digits[b & 15];
        } else {
            out += c;
        }
    }
    return out;
}

/// Where a bad argument of a module function is reported: "trnsim.run(): threads: ...".
[[noreturn]] void bad_argument(const char* function, const std::string& argument,
                               const std::string& problem) {
    throw InputError(argument, problem, {std::string("trnsim.") + function + "()", 0, 0});
}

std::string type_name(const py::handle& o) {
    return py::str(py::type::of(o).attr("__name__")).cast<std::string>();
}

std::string repr_of(const py::handle& o) { return py::repr(o).cast<std::string>(); }

/// A file argument: a str or an os.PathLike (pathlib.Path), without NUL bytes.
std::string path_argument(const py::object& o, const char* function, const char* argument) {
    py::object p = o;
    if (!py::isinstance<py::str>(p) && py::hasattr(p, "__fspath__")) {
        p = py::module_::import("os").attr("fspath")(p);
    }
    if (!py::isinstance<py::str>(p)) {
        bad_argument(function, argument,
                     "is of type " + type_name(o) + "; give a file path (a str or os.PathLike)");
    }
    const std::string path = p.cast<std::string>();
    if (path.find('\0') != std::string::npos) {
        bad_argument(function, argument,
                     repr_of(p) + " holds a NUL character; a file path cannot hold one");
    }
    return path;
}

/// The threads argument as the command line's -j reads it: None or "auto" (all hardware
/// threads: 0) or a whole number from 1 to 4096 (an int, or an integer such as numpy.int64).
int threads_argument(const py::object& o, const char* function) {
    if (o.is_none()) {
        return 0;
    }
    if (py::isinstance<py::str>(o) && o.cast<std::string>() == "auto") {
        return 0;
    }
    // An int or anything that is one (numpy.int64), never a bool or a float.
    if (!py::isinstance<py::bool_>(o) && PyIndex_Check(o.ptr()) != 0) {
        const py::int_ n = py::module_::import("operator").attr("index")(o);
        if (n >= py::int_(1) && n <= py::int_(4096)) {
            return n.cast<int>();
        }
    }
    bad_argument(function, "threads",
                 "takes a number of threads from 1 to 4096 or 'auto', not " + repr_of(o));
}

/// The output argument: None (write nothing) or a file path; checked with the inputs before
/// anything runs (report::check_*), errors pointing at "trnsim.run(output='x.h5')".
std::optional<std::string> output_argument(const py::object& o, const char* function) {
    if (o.is_none()) {
        return std::nullopt;
    }
    return path_argument(o, function, "output");
}

SourceLocation output_origin(const py::object& o, const char* function) {
    return {std::string("trnsim.") + function + "(output=" + repr_of(o) + ")", 0, 0};
}

/// The overrides argument: a dict {"key.path": value} (values as YAML: JSON text for lists
/// and mappings, true/false for booleans, None for null) or a list of "key.path=value"
/// strings; anything else is an InputError naming the argument.
std::vector<config::Override> overrides_of(const py::object& o, const char* function) {
    std::vector<config::Override> out;
    if (o.is_none()) {
        return out;
    }
    const std::string where = std::string("trnsim.") + function + "() overrides";
    if (py::isinstance<py::dict>(o)) {
        const auto json = py::module_::import("json");
        for (const auto& [k, v] : o.cast<py::dict>()) {
            if (!py::isinstance<py::str>(k)) {
                bad_argument(function, "overrides",
                             "has the key " + repr_of(k) + " (of type " + type_name(k) +
                                 "); keys are key paths as strings, such as "
                                 "'workload.parallelism.tp'");
            }
            std::string value;
            if (py::isinstance<py::bool_>(v)) {
                value = v.cast<bool>() ? "true" : "false";
            } else if (v.is_none()) {
                value = "null";
            } else if (py::isinstance<py::str>(v)) {
                value = v.cast<std::string>();
            } else {
                try {
                    value = json.attr("dumps")(v).cast<std::string>();
                } catch (const py::error_already_set&) {
                    bad_argument(function, "overrides",
                                 "the value of " + repr_of(k) + " is of type " + type_name(v) +
                                     ", which has no YAML form; give a str, number, bool, "
                                     "None, list or dict");
                }
            }
            out.push_back(config::given_override(k.cast<std::string>(), value, where));
        }
        return out;
    }
    if (py::isinstance<py::str>(o) || !py::isinstance<py::sequence>(o)) {
        bad_argument(function, "overrides",
                     "is of type " + type_name(o) +
                         "; give a dict {'key.path': value} or a list of 'key.path=value' "
                         "strings");
    }
    for (const auto& item : o.cast<py::sequence>()) {
        if (!py::isinstance<py::str>(item)) {
            bad_argument(function, "overrides",
                         "holds " + repr_of(item) + " (of type " + type_name(item) +
                             "); a list of overrides holds 'key.path=value' strings");
        }
        const std::string text = item.cast<std::string>();
        const auto eq = text.find('=');
        if (eq == std::string::npos || eq == 0) {
            bad_argument(function, "overrides",
                         "holds " + repr_of(item) + "; each override reads 'key.path=value'");
        }
        out.push_back(config::given_override(text.substr(0, eq), text.substr(eq + 1), where));
    }
    return out;
}

int resolve(int threads) { return threads > 0 ? threads : engine::default_thread_count(); }

Result run(const py::object& scenario, const py::object& overrides, const py::object& threads,
           const py::object& output) {
    const std::string path = path_argument(scenario, "run", "scenario");
    std::vector<config::Override> all = overrides_of(overrides, "run");
    const int n = threads_argument(threads, "run");
    if (!threads.is_none()) {
        all.push_back({"simulation.threads", n == 0 ? "auto" : std::to_string(n),
                       {"trnsim.run(threads=" + repr_of(threads) + ")", 0, 0}});
    }
    const std::optional<std::string> out = output_argument(output, "run");
    if (out) {
        // As an override, as -o is: the stored scenario records where its results went.
        config::Override o = config::option_override("output.file", *out, "output=");
        o.origin = output_origin(output, "run");
        all.push_back(o);
    }
    const config::ScenarioSpec spec = config::load_scenario_with(path, all);
    if (out) {
        // The results file only (the module writes no timeline), against every input.
        report::check_scenario_outputs(spec, false);
    }
    results::ResultsFile file;
    {
        py::gil_scoped_release free;
        const sim::ScenarioOutcome outcome = sim::run_scenario(spec);
        file = report::scenario_results(spec, outcome,
                                        {TRNSIM_VERSION, resolve(spec.simulation.threads)});
        if (out) {
            results::write_hdf5(*out, file);
        }
    }
    return to_python(file);
}

Result batch(const py::object& sweep_file, const py::object& threads, const py::object& output) {
    const std::string path = path_argument(sweep_file, "batch", "sweep");
    const int n = resolve(threads_argument(threads, "batch"));
    const std::optional<std::string> out = output_argument(output, "batch");
    const config::SweepSpec spec = config::load_sweep(path);
    const study::Sweep sweep = study::load(spec);
    const auto points = study::prepare(sweep, n);
    if (out) {
        report::check_study_output(*out, output_origin(output, "batch"),
                                   report::sweep_inputs(path, points));
    }
    results::ResultsFile file;
    {
        py::gil_scoped_release free;
        std::vector<study::RunRecord> records;
        study::ListSource source(study::pending_runs(sweep, {}));
        study::execute_all(sweep, points, n, source, report::batch_run_values,
                           [&](study::RunRecord&& r) { records.push_back(std::move(r)); });
        study::sort_records(records);
        const config::ScenarioSpec base = config::load_scenario_with(sweep.base, spec.fixed);
        file = report::batch_results(sweep, base.resolved_yaml,
                                     report::batch_context(base.resolved_yaml, sweep.base_seed),
                                     records, {TRNSIM_VERSION, n});
        if (out) {
            results::write_hdf5(*out, file);
        }
    }
    return to_python(file);
}

Result plan(const py::object& plan_file, const py::object& threads, const py::object& output) {
    const std::string path = path_argument(plan_file, "plan", "plan");
    const int n = resolve(threads_argument(threads, "plan"));
    const std::optional<std::string> out = output_argument(output, "plan");
    const config::PlanSpec spec = config::load_plan(path);
    std::vector<config::Override> extra;
    if (spec.seed) {
        extra.push_back({"seed", std::to_string(*spec.seed), {}});
    }
    if (spec.replications) {
        extra.push_back({"simulation.replications", std::to_string(*spec.replications), {}});
    }
    const config::ScenarioSpec base = config::load_scenario_with(spec.base, extra);
    if (out) {
        report::check_study_output(*out, output_origin(output, "plan"),
                                   report::plan_inputs(spec, base));
    }
    results::ResultsFile file;
    {
        py::gil_scoped_release free;
        const study::PlanResult result = study::run_plan(spec, base, n);
        file = report::plan_results(spec, base, result, {TRNSIM_VERSION, n});
        if (out) {
            results::write_hdf5(*out, file);
        }
    }
    return to_python(file);
}

py::dict validate(const py::object& file, const py::object& overrides) {
    const std::string path = path_argument(file, "validate", "file");
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
        const config::ScenarioSpec spec =
            config::load_scenario_with(path, overrides_of(overrides, "validate"));
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
            // Built from the parts (what() is a C string: a NUL would end it), every part
            // with its control characters shown.
            const SourceLocation& at = e.location();
            const std::string text = (at.known() ? at.str() + ": " : std::string()) +
                                     (e.key_path().empty() ? "" : e.key_path() + ": ") +
                                     e.message();
            py::object type = py::reinterpret_borrow<py::object>(input_error.ptr());
            py::object exc = type(visible(text));
            exc.attr("file") = visible(at.file);
            exc.attr("line") = at.line;
            exc.attr("column") = at.column;
            exc.attr("key_path") = visible(e.key_path());
            exc.attr("message") = visible(e.message());
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
