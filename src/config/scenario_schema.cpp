#include "fields.hpp"
#include "tables.hpp"

namespace trnsim::config::detail {

using S = ScenarioSpec;
using workload::ParallelismSpec;

namespace {

ParallelismSpec& par(S& s) { return s.training.parallelism; }

Schema<ChipSpeed> build_chip_speed() {
    Schema<ChipSpeed> s("ChipSpeed");
    s.field(count<ChipSpeed>("chip", [](ChipSpeed& x) -> std::int64_t& { return x.chip; }, "", 0,
                             std::int64_t{1} << 40, "One chip, by index."));
    s.field(integer_list<ChipSpeed>("chips", [](ChipSpeed& x) -> std::vector<int>& { return x.chips; },
                                    "", 0, (1 << 30), "An inclusive range of chips: [first, last]."));
    s.field(count<ChipSpeed>("instance", [](ChipSpeed& x) -> std::int64_t& { return x.instance; },
                             "", 0, std::int64_t{1} << 30, "Every chip of one instance."));
    s.field(count<ChipSpeed>("ultraserver",
                             [](ChipSpeed& x) -> std::int64_t& { return x.ultraserver; }, "", 0,
                             std::int64_t{1} << 30, "Every chip of one UltraServer."));
    s.exactly_one({"chip", "chips", "instance", "ultraserver"}, "");
    s.field(required(real<ChipSpeed>("speed", [](ChipSpeed& x) -> double& { return x.speed; }, "",
                                     0.01, 10.0, "0.01 to 10", "Its speed factor.")));
    return s;
}

const Schema<ChipSpeed>& chip_speed_schema() {
    static const Schema<ChipSpeed> s = build_chip_speed();
    return s;
}

Schema<S> build() {
    Schema<S> s("Scenario");
    constexpr std::int64_t kMaxCount = std::int64_t{1} << 53;

    s.field(computed_default(
        text<S>("name", [](S& x) -> std::string& { return x.name; }, "",
                "Scenario name, used in summaries and the default output file name."),
        "the file name without .yaml"));
    s.field(count<S>("seed", [](S& x) -> std::int64_t& { return x.seed; },
                     "1", 0, kMaxCount,
                     "Seed of every random stream of the run (stored in the results).",
                     "0 to 2^53"));

    s.section("hardware", "The accelerator.");
    {
        auto e = make_entry<S>("hardware.chip", "preset or file", "trn2",
                               "a preset in topologies/chips/ or a .yaml file",
                               "Chip preset (trn2, trn1, inf2) or a chip file path.");
        e.apply = [](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context& ctx) {
            x.hardware.chip_ref = scalar_text(n, p, loc);
            x.hardware.chip = load_chip_ref(x.hardware.chip_ref, ctx, p, loc);
        };
        s.field(e);
    }
    s.field(computed_default(integer<S>("hardware.lnc", [](S& x) -> int& { return x.hardware.lnc; },
                                        "", 1, 64,
                                        "Physical NeuronCores per rank (logical NeuronCore "
                                        "config); must be allowed by the chip."),
                             "the chip's cores.lnc_default"));
    s.field(computed_default(
        quantity<S, Bytes>("hardware.hbm_reserve",
                           [](S& x) -> Bytes& { return x.hardware.hbm_reserve; }, parse_bytes,
                           "bytes", "", Bytes(0), Bytes(std::int64_t{1} << 50), false, ">= 0",
                           "HBM per chip kept free of the training job (runtime, allocator "
                           "slack)."),
        "the chip's hbm.runtime_reserve"));

    s.section("hardware.speed",
              "Per-chip speed factors for stragglers in the step simulation (1 nominal, 0.5 "
              "twice as slow): drawn per chip from the seed, then explicit factors.");
    s.field(real<S>("hardware.speed.sd", [](S& x) -> double& { return x.hardware.speed.sd; }, "0",
                    0.0, 0.5, "0 to 0.5",
                    "Relative standard deviation of a normal spread of chip speeds around 1 "
                    "(clipped to 0.05 to 2)."));
    s.field(real<S>("hardware.speed.slow_fraction",
                    [](S& x) -> double& { return x.hardware.speed.slow_fraction; }, "0", 0.0, 1.0,
                    "0 to 1", "Fraction of chips that are slow (each chip drawn independently)."));
    s.field(real<S>("hardware.speed.slow_factor",
                    [](S& x) -> double& { return x.hardware.speed.slow_factor; }, "0.8", 0.01, 1.0,
                    "0.01 to 1", "Speed factor of a slow chip."));
    s.field(mapping_list<S, ChipSpeed>(
        "hardware.speed.chips",
        [](S& x) -> std::vector<ChipSpeed>& { return x.hardware.speed.chips; }, &chip_speed_schema,
        "[{chip: 17, speed: 0.5}, {ultraserver: 3, speed: 0.9}]",
        "Explicit speed factors of chosen chips, an instance or an UltraServer (override the drawn "
        "ones; later entries win)."));

    s.section("cluster", "How many chips: give exactly one of ultraservers or instances.");
    s.field(count<S>("cluster.ultraservers",
                     [](S& x) -> std::int64_t& { return x.cluster.ultraservers; }, "", 1, 1000000,
                     "Number of UltraServers (chips with an UltraServer, such as trn2)."));
    s.field(count<S>("cluster.instances", [](S& x) -> std::int64_t& { return x.cluster.instances; },
                     "", 1, 10000000, "Number of plain instances (no NeuronLink between them)."));
    s.exactly_one({"cluster.ultraservers", "cluster.instances"}, "cluster");
    {
        auto e = make_entry<S>("cluster.fabric", "preset or file", "",
                               "a fabric in topologies/ or a .yaml file",
                               "The fabric joining the chips (NeuronLink tori, EFA Clos); used by "
                               "the flow-level network (workload.type: collective, simulation.fidelity: step).");
        e.default_doc = "<chip>-ultracluster";
        e.apply = [](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context& ctx) {
            x.fabric_ref = scalar_text(n, p, loc);
            x.fabric = load_fabric_ref(x.fabric_ref, ctx, p, loc);
            x.has_fabric = true;
        };
        s.field(e);
    }

    s.section("workload", "What runs on the cluster.");
    s.field(choice<S, WorkloadType>(
        "workload.type", [](S& x) -> WorkloadType& { return x.workload_type; }, "training",
        "training: train a model; collective: time one collective per message size "
        "(workload.collective); inference: serve requests with replicas of the model "
        "(workload.serving, workload.requests, workload.slo)."));
    {
        auto e = make_entry<S>("workload.model", "preset, file or mapping", "",
                               "a preset in scenarios/models/, a .yaml file, or model keys",
                               "The model: a preset name (llama3-70b), a model file, or an inline "
                               "mapping of the model keys below (optionally with preset:).");
        e.default_doc = "required for training";
        e.apply = [](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context& ctx) {
            x.model_ref = n.IsScalar() ? n.Scalar() : "inline";
            x.training.model = load_model_node(n, p, loc, ctx, 0);
        };
        s.field(e);
    }
    s.field(computed_default(count<S>("workload.sequence_length",
                                      [](S& x) -> std::int64_t& {
                                          return x.training.sequence_length;
                                      },
                                      "", 1, std::int64_t{1} << 24, "Tokens per sequence.",
                                      "1 to 2^24"),
                             "required for training"));
    s.field(computed_default(count<S>("workload.global_batch",
                                      [](S& x) -> std::int64_t& {
                                          return x.training.global_batch;
                                      },
                                      "", 1, std::int64_t{1} << 30,
                                      "Sequences per training step.", "1 to 2^30"),
                             "required for training"));
    s.field(count<S>("workload.tokens", [](S& x) -> std::int64_t& { return x.training.tokens; }, "",
                     1, std::int64_t{1} << 60, "Tokens to train on (give tokens or steps).",
                     "1 to 2^60"));
    s.field(count<S>("workload.steps", [](S& x) -> std::int64_t& { return x.training.steps; }, "", 1,
                     std::int64_t{1} << 40, "Training steps to run (give tokens or steps).",
                     "1 to 2^40"));
    s.section("workload.collective", "The collective of workload.type: collective.");
    s.field(choice<S, network::CollectiveOp>(
        "workload.collective.op", [](S& x) -> network::CollectiveOp& { return x.collective.op; },
        "all_reduce",
        "The collective."));
    {
        auto e = make_entry<S>("workload.collective.sizes", "sizes", "1KiB:1GiB",
                               "FIRST:LAST (powers of two) or a comma list of bytes",
                               "Message sizes per rank.");
        e.apply = [](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context&) {
            try {
                x.collective.sizes = parse_size_list(scalar_text(n, p, loc));
            } catch (const UnitError& err) {
                throw InputError(p, err.what(), loc);
            }
        };
        s.field(e);
    }
    s.field(count<S>("workload.collective.ranks",
                     [](S& x) -> std::int64_t& { return x.collective.ranks; }, "0", 0,
                     std::int64_t{1} << 26, "Ranks taking part, the first ones (0: all)."));
    s.field(choice<S, network::Algorithm>(
        "workload.collective.algorithm",
        [](S& x) -> network::Algorithm& { return x.collective.algorithm; }, "auto",
        "Collective algorithm (auto: by size and group shape, as the Neuron runtime)."));
    s.field(choice<S, compute::Precision>(
        "workload.precision", [](S& x) -> compute::Precision& { return x.training.precision; },
        "bf16",
        "Matmul precision (training: optimizer state stays FP32; inference: activations, and the weights unless workload.serving.weights says otherwise)."));

    s.field(real<S>("workload.moe_imbalance",
                    [](S& x) -> double& { return x.training.moe_imbalance; }, "1", 1.0, 64.0,
                    "1 to 64",
                    "MoE routing imbalance: tokens the busiest expert-parallel rank receives "
                    "relative to the average; the all-to-all and the expert MLPs take as long as "
                    "on that rank (mixture-of-experts models only)."));

    add_serving_keys(s);

    s.section("workload.parallelism", "How the model is split over ranks (logical NeuronCores).");
    s.field(integer<S>("workload.parallelism.tp", [](S& x) -> int& { return par(x).tp; }, "1", 1,
                       65536, "Tensor parallel degree; must divide the attention heads."));
    s.field(integer<S>("workload.parallelism.cp", [](S& x) -> int& { return par(x).cp; }, "1", 1,
                       65536,
                       "Context parallel degree (ring attention): each rank of a CP group holds "
                       "sequence_length / cp tokens of every sequence (two chunks, for balanced "
                       "causal work) and the keys and values circulate in every layer; "
                       "2 x cp must divide sequence_length. Gradients are reduced over dp x cp "
                       "ranks."));
    s.field(integer<S>("workload.parallelism.pp", [](S& x) -> int& { return par(x).pp; }, "1", 1,
                       65536,
                       "Pipeline stages; at most the layers. Their layers: stage_layers, else "
                       "balance."));
    s.field(integer_list<S>(
        "workload.parallelism.stage_layers",
        [](S& x) -> std::vector<int>& { return par(x).stage_layers; }, "", 1, 100000,
        "Layers of each pipeline stage, first to last: pp entries summing to the model's "
        "layers, e.g. [7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7] for Llama 3 405B over "
        "16 stages. Not with balance."));
    s.field(choice<S, workload::StageBalance>(
        "workload.parallelism.balance",
        [](S& x) -> workload::StageBalance& { return par(x).balance; }, "even",
        "How the stages share the layers without stage_layers: even (layers / pp each; the "
        "remainder r one more each on stages 1 to r, so the first stage, and the last unless "
        "r = pp - 1, hold the fewer) or llama3 (the first and the last stage one layer fewer "
        "than the others, as Llama 3 405B was trained: (layers + 2) / pp must be whole). "
        "When pp does not divide the layers and neither key is given, even applies with a "
        "warning."));
    s.field(integer_or_auto<S>("workload.parallelism.dp", [](S& x) -> int& { return par(x).dp; },
                               "auto", 1, 1 << 30,
                               "Data parallel replicas; auto = ranks / (tp x cp x pp)."));
    s.field(integer<S>("workload.parallelism.ep", [](S& x) -> int& { return par(x).ep; }, "1", 1,
                       65536, "Expert parallel degree (MoE); divides dp and the experts."));
    s.field(integer<S>("workload.parallelism.zero", [](S& x) -> int& { return par(x).zero; }, "1",
                       0, 3, "ZeRO stage: 1 shards optimizer state, 2 also gradients, 3 also "
                             "parameters (FSDP)."));
    s.field(integer<S>("workload.parallelism.microbatch",
                       [](S& x) -> int& { return par(x).microbatch; }, "1", 1, 65536,
                       "Sequences per microbatch."));
    s.field(choice<S, workload::Schedule>(
        "workload.parallelism.schedule", [](S& x) -> workload::Schedule& { return par(x).schedule; },
        "1f1b",
        "Pipeline schedule."));
    s.field(integer<S>("workload.parallelism.virtual_stages",
                       [](S& x) -> int& { return par(x).virtual_stages; }, "1", 1, 1024,
                       "Model chunks per rank (interleaved schedule)."));
    s.field(choice<S, workload::Recompute>(
        "workload.parallelism.recompute",
        [](S& x) -> workload::Recompute& { return par(x).recompute; }, "selective",
        "Activation recomputation: none, the attention core, or whole layers."));
    {
        // A list of recomputed parts, each one of the RecomputePart names.
        std::string names;
        for (const auto& n : enum_names(workload::RecomputePart{})) {
            names += (names.empty() ? "" : ", ") + std::string(n.name);
        }
        auto e = make_entry<S>(
            "workload.parallelism.recompute_parts", "list of choices", "", names,
            "What recompute: selective recomputes, as the framework does (docs/workload.md): "
            "core_attention (Megatron-LM, NeMo, NxD CoreAttention), norm (NeMo on Neuron "
            "also checkpoints the layer norms), mlp_activation (NxD's act_fn(gate) * up), mlp "
            "(NxD's whole LlamaMLP, with its TP collectives).");
        e.default_doc = "[core_attention]";
        e.apply = [names](S& x, const YAML::Node& n, const std::string& p,
                          const SourceLocation& loc, const Context& ctx) {
            if (!n.IsSequence()) {
                throw InputError(p, "expected a list such as [core_attention, norm]", loc);
            }
            std::vector<workload::RecomputePart> parts;
            for (std::size_t i = 0; i < n.size(); ++i) {
                const std::string item_path = p + "[" + std::to_string(i) + "]";
                const SourceLocation item_loc = ctx.locate(p, n[i].Mark());
                const std::string v = scalar_text(n[i], item_path, item_loc.known() ? item_loc : loc);
                bool found = false;
                for (const auto& option : enum_names(workload::RecomputePart{})) {
                    if (v == option.name) {
                        parts.push_back(option.value);
                        found = true;
                    }
                }
                if (!found) {
                    throw InputError(item_path, "'" + v + "' is not one of: " + names,
                                     item_loc.known() ? item_loc : loc);
                }
            }
            par(x).recompute_parts = std::move(parts);
        };
        s.field(e);
    }
    s.field(boolean<S>("workload.parallelism.sequence_parallel",
                       [](S& x) -> bool& { return par(x).sequence_parallel; }, "true",
                       "Split norms and residuals along the sequence across TP ranks."));

    s.field(quantity<S, Bytes>(
        "workload.parallelism.grad_bucket",
        [](S& x) -> Bytes& { return par(x).grad_bucket; }, parse_bytes, "bytes", "512MiB",
        Bytes(0), Bytes(std::int64_t{1} << 50), true, "> 0",
        "Gradient bucket per rank: gradients go out for data-parallel reduction in buckets "
        "of this size as the last microbatch's backward pass produces them (step fidelity)."));

    s.section("workload.graph",
              "How the framework builds the compiled training graph, where that changes the "
              "kernels (docs/workload.md). Each validation scenario sets these from the "
              "framework configuration it reproduces.");
    s.field(choice<S, workload::AttentionKernel>(
        "workload.graph.attention",
        [](S& x) -> workload::AttentionKernel& { return x.training.graph.attention; }, "flash",
        "flash: one fused attention kernel (NKI flash attention); materialized: Q K^T, "
        "softmax and P V as separate kernels through HBM (XLA graphs of NeMo and NxD before "
        "their flash kernels)."));
    s.field(real<S>("workload.graph.attention_dropout",
                    [](S& x) -> double& { return x.training.graph.attention_dropout; }, "0",
                    0.0, 0.99, "0 to 0.99",
                    "Dropout probability on the attention probabilities (materialized "
                    "attention: one more pass over them, its mask kept)."));
    s.field(real<S>("workload.graph.hidden_dropout",
                    [](S& x) -> double& { return x.training.graph.hidden_dropout; }, "0", 0.0,
                    0.99, "0 to 0.99",
                    "Dropout probability on each block's output before the residual addition "
                    "(one more pass over the residual stream, its mask kept)."));
    s.field(choice<S, workload::GradAccumulator>(
        "workload.graph.grad_accumulator",
        [](S& x) -> workload::GradAccumulator& { return x.training.graph.grad_accumulator; },
        "bf16",
        "Buffer each microbatch's parameter gradients are added into (an elementwise pass "
        "over the rank's parameters per microbatch): bf16, the parameters' own gradients "
        "(PyTorch autograd under XLA_USE_BF16 / XLA_DOWNCAST_BF16); fp32, an FP32 main "
        "gradient (NxD use_fp32_grad_acc), which the gradient reduction and the optimizer "
        "then read in FP32 too."));

    s.section("workload.optimizer", "The optimizer's state (AdamW): its master weights and "
                                    "moments, in memory, in the checkpoint and in its step.");
    s.field(choice<S, workload::MasterWeights>(
        "workload.optimizer.master_weights",
        [](S& x) -> workload::MasterWeights& { return x.training.optimizer.master_weights; },
        "fp32",
        "fp32: an FP32 copy of the parameters beside the working weights (4 bytes a "
        "parameter); none: the BF16 weights are updated in place with stochastic rounding "
        "(needs a chip with core.stochastic_rounding; FP32 training never keeps a copy)."));
    s.field(choice<S, workload::OptimizerMoments>(
        "workload.optimizer.moments",
        [](S& x) -> workload::OptimizerMoments& { return x.training.optimizer.moments; }, "fp32",
        "Precision of AdamW's two moments: fp32 (8 bytes a parameter) or bf16 (4)."));

    add_reliability_keys(s);

    s.section("simulation", "How the run is simulated.");
    s.field(choice<S, Fidelity>("simulation.fidelity",
                                [](S& x) -> Fidelity& { return x.simulation.fidelity; }, "analytic",
                                "analytic: closed-form step model; step: one step simulated on "
                                "the event engine with flow-level communication "
                                "(docs/workload.md)."));
    s.field(choice<S, StepEntityMode>(
        "simulation.step_entities",
        [](S& x) -> StepEntityMode& { return x.simulation.step_entities; }, "tp_group",
        "Step fidelity: one entity per tensor-parallel group (its ranks move in lockstep) or "
        "one per rank (same result, slower)."));
    s.field(choice<S, FabricCollectiveMode>(
        "simulation.fabric_collectives",
        [](S& x) -> FabricCollectiveMode& { return x.simulation.fabric_collectives; }, "flows",
        "Step fidelity: collectives between replicas (data, expert parallel) as flows with "
        "max-min sharing, or at their uncongested closed-form cost."));
    s.field(choice<S, TpCollectiveMode>(
        "simulation.tp_collectives",
        [](S& x) -> TpCollectiveMode& { return x.simulation.tp_collectives; }, "closed_form",
        "Step fidelity: collectives inside a tensor-parallel group at their uncongested "
        "closed-form cost, or as flows on the group's links, sharing them with data-parallel "
        "and pipeline traffic (many more flows; docs/workload.md)."));
    s.field(integer_or_auto<S>("simulation.threads",
                               [](S& x) -> int& { return x.simulation.threads; }, "auto", 1, 4096,
                               "Worker threads (auto: all hardware threads); results do not "
                               "depend on it."));
    add_run_keys(s);
    add_serving_simulation_keys(s);

    s.section("cost", "Prices: the chip file's instance prices, unless the scenario gives one.");
    s.field(choice<S, Pricing>(
        "cost.pricing", [](S& x) -> Pricing& { return x.cost.pricing; }, "on_demand",
        "Which of the chip file's prices applies: instance.price (on_demand), "
        "instance.price_reserved_1y, instance.price_reserved_3y or "
        "instance.price_capacity_block; an error when the chip file has none sourced."));
    s.field(computed_default(
        quantity<S, Money>("cost.instance_hour",
                           [](S& x) -> Money& { return x.cost.instance_hour; }, parse_money,
                           "money", "", Money::usd(0.0), Money::usd(1e9), false, ">= 0",
                           "Price of one instance-hour: an explicit override of the chip "
                           "file's price (the summary says which applied)."),
        "the chip file's price for cost.pricing"));

    s.section("output", "Where results go.");
    s.field(computed_default(file_name<S>("output.file",
                                          [](S& x) -> std::string& { return x.output.file; }, "",
                                          "HDF5 results file (--output overrides it)."),
                             "results/<name>.h5"));
    s.field(computed_default(file_name<S>("output.trace",
                                          [](S& x) -> std::string& { return x.output.trace; }, "",
                                          "Chrome/Perfetto JSON timeline of the step simulation "
                                          "(--trace overrides it); opens in ui.perfetto.dev."),
                             "none"));
    s.field(choice<S, TimelineOutput>(
        "output.timeline", [](S& x) -> TimelineOutput& { return x.output.timeline; },
        "summary",
        "What /run/events and /run/timeline of a run simulation hold: summary (every event "
        "and state change but checkpoints: rows grow with the failures, not with the "
        "checkpoint interval), full (checkpoints too: two timeline rows and an event per "
        "checkpoint) or none. The /summary and /run/replications figures are the same in every "
        "case."));
    s.field(integer_list<S>("output.trace_ranks",
                            [](S& x) -> std::vector<int>& { return x.output.trace_ranks; }, "[0]",
                            0, (1 << 30), "Ranks shown in the timeline."));
    add_serving_output_keys(s);
    return s;
}

} // namespace

const Schema<S>& scenario_schema() {
    static const Schema<S> s = build();
    return s;
}

} // namespace trnsim::config::detail
