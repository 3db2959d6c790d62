#include "fields.hpp"
#include "tables.hpp"

namespace trnsim::config::detail {

using compute::ChipSpec;
using C = ChipSpec;

namespace {

constexpr std::int64_t kMaxBytes = std::int64_t{1} << 60;

Entry<C> bytes(std::string path, Ref<C, Bytes> ref, std::string def, std::string doc) {
    return quantity<C, Bytes>(std::move(path), std::move(ref), parse_bytes, "bytes",
                              std::move(def), Bytes(0), Bytes(kMaxBytes), true, "> 0",
                              std::move(doc));
}

Entry<C> bandwidth(std::string path, Ref<C, Bandwidth> ref, std::string def, std::string doc,
                   bool allow_zero = false) {
    return quantity<C, Bandwidth>(std::move(path), std::move(ref), parse_bandwidth, "bandwidth",
                                  std::move(def), Bandwidth::bytes_per_s(0.0),
                                  Bandwidth::bytes_per_s(1e18), !allow_zero,
                                  allow_zero ? ">= 0" : "> 0", std::move(doc));
}

Entry<C> duration(std::string path, Ref<C, Duration> ref, std::string def, std::string doc) {
    return quantity<C, Duration>(std::move(path), std::move(ref), parse_duration, "duration",
                                 std::move(def), Duration::zero(),
                                 Duration::from_ns(std::int64_t{1000} * 1'000'000'000), false,
                                 "0 to 1000s", std::move(doc));
}

Entry<C> frequency(std::string path, Ref<C, Frequency> ref, std::string def, std::string doc) {
    return quantity<C, Frequency>(std::move(path), std::move(ref), parse_frequency, "frequency",
                                  std::move(def), Frequency::hz(0.0), Frequency::hz(1e12), true,
                                  "> 0", std::move(doc));
}

Entry<C> flops(std::string path, Ref<C, FlopRate> ref, std::string doc) {
    return required(quantity<C, FlopRate>(std::move(path), std::move(ref), parse_flop_rate,
                                          "flop rate", "", FlopRate::per_s(0.0),
                                          FlopRate::per_s(1e21), true, "> 0", std::move(doc)));
}

void engine(Schema<C>& s, const std::string& name, Ref<C, compute::VectorEngineSpec> ref, const std::string& what, const char* per_cycle) {
    s.section("core." + name, what + ".");
    s.field(required(frequency("core." + name + ".clock",
                               [ref](C& c) -> Frequency& { return ref(c).clock; }, "",
                               "Engine clock.")));
    s.field(integer<C>("core." + name + ".elements_per_cycle",
                       [ref](C& c) -> int& { return ref(c).elements_per_cycle; }, per_cycle, 1,
                       65536, "Elements processed per cycle."));
    s.field(integer<C>("core." + name + ".instruction_overhead_cycles",
                       [ref](C& c) -> int& { return ref(c).instruction_overhead_cycles; }, "0", 0,
                       100000, "Fixed cycles per instruction."));
    if (name == "vector_engine") {
        s.field(integer<C>("core.vector_engine.perf_mode_elements_per_cycle",
                           [ref](C& c) -> int& { return ref(c).perf_mode_elements_per_cycle; },
                           "0", 0, 65536,
                           "Elements per cycle of single-input copies and scalar maps of "
                           "BF16/FP16 SBUF tiles (performance mode; 0: none)."));
    }
}

Schema<C> build() {
    Schema<C> s("Chip");
    s.field(required(text<C>("name", [](C& c) -> std::string& { return c.name; }, "",
                             "Preset name (trn2, trn1, inf2).")));
    s.field(text<C>("description", [](C& c) -> std::string& { return c.description; }, "\"\"",
                    "One line shown by describe chip."));

    s.section("cores", "NeuronCores and logical NeuronCore configuration (LNC).");
    s.field(required(integer<C>("cores.physical", [](C& c) -> int& { return c.physical_cores; },
                                "", 1, 1024, "Physical NeuronCores per chip.")));
    s.field(required(integer<C>("cores.lnc_default", [](C& c) -> int& { return c.lnc_default; },
                                "", 1, 64, "Physical cores per rank by default.")));
    s.field(required(integer_list<C>("cores.lnc_allowed",
                                     [](C& c) -> std::vector<int>& { return c.lnc_allowed; }, "",
                                     1, 64, "LNC values the runtime accepts.")));

    s.section("hbm", "High-bandwidth memory of the chip.");
    s.field(required(bytes("hbm.capacity", [](C& c) -> Bytes& { return c.hbm_capacity; }, "",
                           "HBM capacity.")));
    s.field(required(bandwidth("hbm.bandwidth", [](C& c) -> Bandwidth& { return c.hbm_bandwidth; },
                               "", "HBM bandwidth.")));
    s.field(quantity<C, Bytes>("hbm.runtime_reserve",
                               [](C& c) -> Bytes& { return c.hbm_runtime_reserve; }, parse_bytes,
                               "bytes", "0B", Bytes(0), Bytes(kMaxBytes), false, ">= 0",
                               "HBM per chip the runtime keeps (default of hardware.hbm_reserve)."));

    s.section("peak", "Dense peak compute of the chip as published (MFU denominator).");
    s.field(flops("peak.fp8", [](C& c) -> FlopRate& { return c.peak_fp8; }, "Dense FP8 peak."));
    s.field(flops("peak.bf16", [](C& c) -> FlopRate& { return c.peak_bf16; },
                  "Dense BF16/FP16 peak."));
    s.field(flops("peak.fp32", [](C& c) -> FlopRate& { return c.peak_fp32; }, "Dense FP32 peak."));
    s.field(quantity<C, FlopRate>(
        "peak.sparse", [](C& c) -> FlopRate& { return c.peak_sparse; }, parse_flop_rate,
        "flop rate", "0FLOPS", FlopRate::per_s(0.0), FlopRate::per_s(1e21), false, ">= 0",
        "Peak with structured-sparse weights (0: no sparse matmul)."));

    s.section("core", "One physical NeuronCore.");
    s.section("core.tensor_engine", "TensorE systolic array.");
    s.field(integer<C>("core.tensor_engine.rows", [](C& c) -> int& { return c.core.tensor.rows; },
                       "128", 1, 4096, "Rows (contraction / partition dimension)."));
    s.field(integer<C>("core.tensor_engine.cols", [](C& c) -> int& { return c.core.tensor.cols; },
                       "128", 1, 4096, "Columns (stationary free dimension)."));
    s.field(required(frequency("core.tensor_engine.clock",
                               [](C& c) -> Frequency& { return c.core.tensor.clock; }, "",
                               "TensorE clock.")));
    s.field(integer<C>("core.tensor_engine.moving_free_max",
                       [](C& c) -> int& { return c.core.tensor.moving_free_max; }, "512", 1,
                       65536, "Largest moving tile (columns per MultiplyMoving)."));
    s.field(integer<C>("core.tensor_engine.min_matmul_cycles",
                       [](C& c) -> int& { return c.core.tensor.min_matmul_cycles; }, "64", 1,
                       65536, "Minimum cycles of one MultiplyMoving."));
    s.field(boolean<C>("core.tensor_engine.mx_matmul",
                       [](C& c) -> bool& { return c.core.tensor.mx_matmul; }, "false",
                       "TensorE multiplies microscaling (MXFP8, MXFP4) matrices at the FP8 "
                       "rate (NeuronCore-v4)."));
    s.field(integer<C>("core.tensor_engine.fp8_rate_multiplier",
                       [](C& c) -> int& { return c.core.tensor.fp8_rate_multiplier; }, "2", 1, 16,
                       "FP8 contraction rows per BF16 row (double-row mode: 2)."));
    s.field(integer<C>("core.tensor_engine.fp32_rate_divisor",
                       [](C& c) -> int& { return c.core.tensor.fp32_rate_divisor; }, "4", 1, 64,
                       "FP32 matmul costs this many times BF16."));
    s.field(integer<C>("core.tensor_engine.load_stationary_speedup",
                       [](C& c) -> int& { return c.core.tensor.load_stationary_speedup; }, "4", 1,
                       64, "LoadStationary is this many times faster than a MultiplyMoving of "
                           "the same free size."));
    s.field(real<C>("core.tensor_engine.warmup_fraction",
                    [](C& c) -> double& { return c.core.tensor.warmup_fraction; }, "50%", 0.01,
                    1.0, "1% to 100%",
                    "Rate TensorE restarts at after idling (warm-up throttling; 100%: none)."));
    s.field(duration("core.tensor_engine.warmup_window",
                     [](C& c) -> Duration& { return c.core.tensor.warmup_window; }, "3us",
                     "Utilisation window of the warm-up throttle and length of its ramp."));
    engine(s, "vector_engine", [](C& c) -> compute::VectorEngineSpec& { return c.core.vector; },
           "VectorE", "128");
    engine(s, "scalar_engine", [](C& c) -> compute::VectorEngineSpec& { return c.core.scalar; },
           "ScalarE", "128");
    engine(s, "gpsimd_engine", [](C& c) -> compute::VectorEngineSpec& { return c.core.gpsimd; },
           "GpSimdE", "128");
    s.field(required(bytes("core.sbuf", [](C& c) -> Bytes& { return c.core.sbuf; }, "",
                           "State buffer (SBUF) capacity.")));
    s.field(boolean<C>("core.stochastic_rounding",
                       [](C& c) -> bool& { return c.core.stochastic_rounding; }, "false",
                       "The engines can round their outputs stochastically (lets the optimizer "
                       "keep no FP32 master copy: workload.optimizer.master_weights: none)."));
    s.field(integer<C>("core.sbuf_partitions", [](C& c) -> int& { return c.core.sbuf_partitions; },
                       "128", 1, 4096, "SBUF partitions."));
    s.field(required(bytes("core.psum", [](C& c) -> Bytes& { return c.core.psum; }, "",
                           "Partial-sum buffer (PSUM) capacity.")));
    s.field(integer<C>("core.psum_banks", [](C& c) -> int& { return c.core.psum_banks; }, "8", 1,
                       1024, "PSUM banks per partition."));
    s.field(integer<C>("core.dma_engines", [](C& c) -> int& { return c.core.dma_engines; }, "16",
                       1, 1024, "DMA engines (queues) per core."));
    s.field(required(bandwidth("core.dma_engine_bandwidth",
                               [](C& c) -> Bandwidth& { return c.core.dma_engine_bandwidth; }, "",
                               "Bandwidth of one DMA engine.")));
    s.field(required(duration("core.dma_setup_latency",
                              [](C& c) -> Duration& { return c.core.dma_setup_latency; }, "",
                              "Fixed cost of one DMA (descriptor and semaphore).")));
    s.field(duration("core.dma_descriptor_overhead",
                     [](C& c) -> Duration& { return c.core.dma_descriptor_overhead; }, "16ns",
                     "DMA engine time per descriptor (contiguous run) besides its bytes."));
    s.field(integer<C>("core.dma_generators", [](C& c) -> int& { return c.core.dma_generators; },
                       "2", 1, 64, "Descriptor generators shared by the DMA queues."));
    s.field(duration("core.dma_issue_time",
                     [](C& c) -> Duration& { return c.core.dma_issue_time; }, "0ns",
                     "Time a descriptor generator spends issuing one DMA."));

    s.section("interconnect", "Chip-to-chip links.");
    s.field(required(bandwidth(
        "interconnect.neuronlink_intra_instance",
        [](C& c) -> Bandwidth& { return c.neuronlink_intra_instance; }, "",
        "NeuronLink bandwidth per chip to the chips of its own instance.")));
    s.field(bandwidth("interconnect.neuronlink_inter_instance",
                      [](C& c) -> Bandwidth& { return c.neuronlink_inter_instance; }, "0B/s",
                      "NeuronLink bandwidth per chip to the other instances of its UltraServer.",
                      true));
    s.field(bandwidth("interconnect.neuronlink_inter_rack",
                      [](C& c) -> Bandwidth& { return c.neuronlink_inter_rack; }, "0B/s",
                      "NeuronLink bandwidth per chip over the direct links to the same position "
                      "in the other racks of its UltraServer (ultraserver.racks > 1).",
                      true));
    s.field(integer<C>("interconnect.neuronlink_ports",
                       [](C& c) -> int& { return c.neuronlink_ports; }, "4", 0, 64,
                       "NeuronLink ports per chip."));
    s.field(required(duration("interconnect.neuronlink_hop_latency",
                              [](C& c) -> Duration& { return c.neuronlink_hop_latency; }, "",
                              "Latency of one collective step over NeuronLink.")));
    s.field(required(duration("interconnect.on_chip_latency",
                              [](C& c) -> Duration& { return c.on_chip_latency; }, "",
                              "Latency of one collective step between ranks of one chip.")));
    s.field(duration("interconnect.efa_latency",
                     [](C& c) -> Duration& { return c.efa_latency; }, "0ns",
                     "HBM-to-HBM latency of one message over EFA (unused without EFA)."));

    s.section("training", "How training workloads run on the chip.");
    s.field(real<C>("training.engine_sync",
                    [](C& c) -> double& { return c.training.engine_sync; }, "0", 0.0, 1.0,
                    "0 to 1",
                    "Fraction of each kernel's non-bottleneck engine time that a compiled "
                    "training graph does not hide under its bottleneck (engine "
                    "synchronisation; fitted to published runs, docs/validation.md)."));

    s.section("serving",
              "Fixed costs of compiled inference graphs besides their kernels and collectives "
              "(docs/serving.md; absent: none). Fitted to published serving runs.");
    s.field(duration("serving.kernel_overhead",
                     [](C& c) -> Duration& { return c.serving.kernel_overhead; }, "0ns",
                     "Per kernel of a compiled inference graph: synchronisation and issue "
                     "between fused operators."));
    s.field(duration("serving.iteration_overhead",
                     [](C& c) -> Duration& { return c.serving.iteration_overhead; }, "0ns",
                     "Per graph execution (a prefill, a decode step, a draft step): host "
                     "dispatch, inputs, logits and sampling."));
    s.field(real<C>("serving.prefill_efficiency",
                    [](C& c) -> double& { return c.serving.prefill_efficiency; }, "1", 0.01, 1.0,
                    "0.01 to 1",
                    "Fraction of the TensorE peak that matmuls and attention reach at most "
                    "inside a compiled context-encoding (prefill) graph."));
    s.field(duration("serving.prefill_graph_overhead",
                     [](C& c) -> Duration& { return c.serving.prefill_graph_overhead; }, "0ns",
                     "Per context-encoding graph beyond iteration_overhead: switching the cores "
                     "to the prefill executable and preparing the prompt on the host."));

    s.section("collectives",
              "The runtime's collective engine: what the published nccom-test tables show beyond "
              "the links (docs/network.md; absent: the links alone). Fitted to named tables.");
    s.field(duration("collectives.launch",
                     [](C& c) -> Duration& { return c.collectives.launch; }, "0ns",
                     "Fixed cost of one collective launched alone (launch and the ranks' "
                     "handshake: nccom-test's floor); a compiled graph's collectives do not pay "
                     "it."));
    s.field(bandwidth("collectives.rank_bandwidth",
                      [](C& c) -> Bandwidth& { return c.collectives.rank_bandwidth; }, "0B/s",
                      "Rate at which one rank's collective transfers move its data (the DMA "
                      "rings of a collective); 0: the links alone.",
                      true));
    s.field(duration("collectives.efa_step_overhead",
                     [](C& c) -> Duration& { return c.collectives.efa_step_overhead; }, "0ns",
                     "Extra cost of each collective step that crosses EFA (per-message software "
                     "and protocol overhead)."));

    s.section("instance", "The instance type that holds the chips.");
    s.field(required(text<C>("instance.name", [](C& c) -> std::string& { return c.instance.name; },
                             "", "Instance type.")));
    s.field(required(integer<C>("instance.chips", [](C& c) -> int& { return c.instance.chips; }, "",
                                1, 4096, "Chips per instance.")));
    s.field(choice<C, ScaleUpKind>(
        "instance.scale_up", [](C& c) -> ScaleUpKind& { return c.instance.scale_up; },
        "torus",
        "How the chips of the instance and of its UltraServer meet: NeuronLink rings (torus) "
        "or NeuronLink switches, every chip to every chip (switched, Trn3)."));
    s.field(computed_default(
        integer_list<C>("instance.torus",
                        [](C& c) -> std::vector<int>& { return c.instance.torus; }, "", 1, 4096,
                        "NeuronLink torus shape inside the instance (absent when switched)."),
        "required for a torus"));
    s.field(integer<C>("instance.neuronswitches",
                       [](C& c) -> int& { return c.instance.neuronswitches; }, "0", 0, 64,
                       "NeuronLink switches inside one instance of a switched domain (failing "
                       "components, docs/reliability.md)."));
    s.field(integer<C>("instance.vcpus", [](C& c) -> int& { return c.instance.vcpus; }, "0", 0,
                       100000, "Host vCPUs."));
    s.field(quantity<C, Bytes>("instance.host_memory",
                               [](C& c) -> Bytes& { return c.instance.host_memory; }, parse_bytes,
                               "bytes", "0B", Bytes(0), Bytes(kMaxBytes), false, ">= 0",
                               "Host memory."));
    s.field(bandwidth("instance.efa_bandwidth",
                      [](C& c) -> Bandwidth& { return c.instance.efa_bandwidth; }, "0B/s",
                      "Total EFA bandwidth of the instance (0: no EFA, one instance per job, "
                      "as inf2).",
                      true));
    s.field(integer<C>("instance.efa_interfaces",
                       [](C& c) -> int& { return c.instance.efa_interfaces; }, "1", 1, 4096,
                       "EFA interfaces the bandwidth is split over."));
    s.field(required(quantity<C, Money>(
        "instance.price", [](C& c) -> Money& { return c.instance.price_per_hour; }, parse_money,
        "money", "", Money::usd(0.0), Money::usd(1e9), false, ">= 0",
        "On-demand price per instance-hour.")));
    s.field(quantity<C, Money>(
        "instance.price_reserved_1y",
        [](C& c) -> Money& { return c.instance.price_reserved_1y; }, parse_money, "money", "0USD",
        Money::usd(0.0), Money::usd(1e9), false, ">= 0",
        "Effective hourly price of a 1-year reservation (0: not sourced)."));
    s.field(quantity<C, Money>(
        "instance.price_reserved_3y",
        [](C& c) -> Money& { return c.instance.price_reserved_3y; }, parse_money, "money", "0USD",
        Money::usd(0.0), Money::usd(1e9), false, ">= 0",
        "Effective hourly price of a 3-year reservation (0: not sourced)."));
    s.field(quantity<C, Money>(
        "instance.price_capacity_block",
        [](C& c) -> Money& { return c.instance.price_capacity_block; }, parse_money, "money",
        "0USD", Money::usd(0.0), Money::usd(1e9), false, ">= 0",
        "Hourly price of an EC2 Capacity Block (0: not sourced)."));

    s.section("kernel_model",
              "Calibrated analytic kernel model, written by trnsim calibrate (absent: nominal "
              "coefficients; docs/compute.md).");
    for (compute::KernelClass k : compute::all_kernel_classes()) {
        const std::string name = compute::to_string(k);
        const std::string base = "kernel_model." + name;
        const auto fit = [k](C& c) -> compute::KernelFit& { return c.kernel_model.fit(k); };
        s.section(base, "The " + name + " closed form.");
        s.field(real_list<C>(base + ".coefficients",
                             [fit](C& c) -> std::vector<double>& { return fit(c).coefficients; },
                             "[]", 0.0, 1e6, "0 to 1e6",
                             "One non-negative coefficient per feature (docs/compute.md)."));
        s.field(real<C>(base + ".mape", [fit](C& c) -> double& { return fit(c).mape; }, "0%",
                        0.0, 100.0, ">= 0", "Held-out mean absolute percentage error."));
        s.field(real<C>(base + ".max_error", [fit](C& c) -> double& { return fit(c).max_error; },
                        "0%", 0.0, 100.0, ">= 0", "Held-out maximum relative error."));
        s.field(integer<C>(base + ".train_points",
                           [fit](C& c) -> int& { return fit(c).train_points; }, "0", 0, 1000000,
                           "Shapes the coefficients were fitted on."));
        s.field(integer<C>(base + ".held_out_points",
                           [fit](C& c) -> int& { return fit(c).held_out_points; }, "0", 0,
                           1000000, "Shapes the error was measured on."));
    }

    s.section("ultraserver", "Instances joined by NeuronLink into one domain (absent: none).");
    // Each key of the section creates the UltraServer (its other keys at their defaults).
    const auto ultraserver_count = [&s](const char* key, int compute::UltraServerSpec::*field,
                                        std::int64_t lo, std::int64_t hi, const char* default_doc,
                                        const char* doc) {
        const std::string range = std::to_string(lo) + " to " + std::to_string(hi);
        auto e = make_entry<C>(key, "integer", "", range, doc);
        e.default_doc = default_doc;
        e.apply = [field, lo, hi, range](C& c, const YAML::Node& n, const std::string& p,
                                         const SourceLocation& loc, const Context&) {
            const auto v = parse_checked<std::int64_t>(
                n, p, loc, parse_count, [lo, hi](std::int64_t x) { return x >= lo && x <= hi; },
                range);
            compute::UltraServerSpec u = c.ultraserver.value_or(compute::UltraServerSpec{});
            u.*field = static_cast<int>(v);
            c.ultraserver = u;
        };
        s.field(e);
    };
    ultraserver_count("ultraserver.instances", &compute::UltraServerSpec::instances, 1, 1024,
                      "none", "Instances per UltraServer.");
    ultraserver_count("ultraserver.racks", &compute::UltraServerSpec::racks, 1, 64, "1",
                      "Racks the instances fill in equal shares, the same chip position of "
                      "every rack joined by direct links (with ultraserver.instances).");
    ultraserver_count("ultraserver.neuronswitches", &compute::UltraServerSpec::neuronswitches, 0,
                      1024, "0",
                      "NeuronLink switches joining the instances, beyond the instances' own "
                      "(failing components, docs/reliability.md; with ultraserver.instances).");
    return s;
}

} // namespace

const Schema<C>& chip_schema() {
    static const Schema<C> s = build();
    return s;
}

} // namespace trnsim::config::detail
