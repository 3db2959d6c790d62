#!/usr/bin/python3
"""Malformed inputs against the command line, end to end (issue 15, "Also").

A seeded, deterministic generator makes several hundred inputs that are each wrong in one way,
across every input kind trnsim reads: scenarios (training, collective, inference), sweep and
plan files, chip, model, fabric and reliability preset files, request traces and failure
traces, --set overrides and command-line flags. Every one must make the CLI

  - exit with status 2,
  - print a message on stderr (a located `FILE:LINE:COL: key.path: ...` for file content, a
    `trnsim ...:` line for the command line) and nothing on stdout,
  - write nothing: the scratch directory holds exactly the inputs afterwards,
  - within bounded time and memory (per case: 10 s wall, 1 GiB peak RSS).

How each family is made wrong, and why it is wrong whatever the key:
  leaf -> {zz_unknown: 1}  no key of any schema accepts a mapping with an unknown key
  unknown sibling key      every schema refuses keys it does not list
  required key removed     the key is required for that document kind
  values out of range      chosen per key from the documented ranges
Scenario bases are Python dicts written as JSON (JSON is YAML), so the mutation is exact;
preset files are YAML, mutated line by line (a scalar value replaced by a mapping with an
unknown key, or an unknown key appended).

Usage: fuzz_cli.py TRNSIM_BIN SOURCE_DIR [--seed N] [--list]
"""
import copy
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

BAD_MAPPING = {"zz_unknown": 1}

TRAINING = {
    "name": "fuzz",
    "hardware": {"chip": "trn2"},
    "cluster": {"ultraservers": 1},
    "workload": {
        "model": "llama3-8b",
        "sequence_length": 4096,
        "global_batch": 64,
        "steps": 100,
        "parallelism": {"tp": 4, "pp": 1, "zero": 1, "microbatch": 1},
    },
    "cost": {"pricing": "on_demand"},
}

RELIABLE = copy.deepcopy(TRAINING)
RELIABLE["reliability"] = {
    "failures": [{"component": "chip", "mtbf": "10y"}],
    "recovery": {"detection": "5min", "restart": "10min", "scope": "job"},
    "checkpoint": {"interval": "auto", "mode": "async", "storage_bandwidth": "2TB/s"},
}
RELIABLE["simulation"] = {"duration": "until_done", "replications": 2}

COLLECTIVE = {
    "hardware": {"chip": "trn2"},
    "cluster": {"ultraservers": 1},
    "workload": {"type": "collective",
                 "collective": {"op": "all_reduce", "sizes": "1KiB:1MiB", "ranks": 0}},
}

INFERENCE = {
    "name": "serve",
    "hardware": {"chip": "inf2"},
    "cluster": {"instances": 1},
    "workload": {
        "type": "inference",
        "model": "llama3-8b",
        "serving": {"tp": 8, "max_batch": 4, "max_context": 4096, "kv_block": 32,
                    "router": "least_loaded"},
        "requests": {"input_tokens": 1000, "output_tokens": 200,
                     "arrival": {"poisson": {"rate": "2/s"}}, "count": 20},
        "slo": {"ttft": "1s", "tpot": "50ms"},
    },
}

SWEEP = {"base": "base.yaml", "name": "fuzz-sweep",
         "sweep": {"grid": {"workload.parallelism.tp": [4, 8]}}}
PLAN = {"base": "base.yaml", "objective": "min_cost",
        "constraints": {"deadline": "400d"},
        "search": {"tp": [4, 8], "pp": [1]}, "finalists": 1}

TRACE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
BAD_TRACES = {
    "empty": "",
    "header_only": TRACE_HEADER,
    "wrong_header": "time,in,out\n2023-11-16 18:15:46.68,374,44\n",
    "two_columns": TRACE_HEADER + "2023-11-16 18:15:46.68,374\n",
    "four_columns": TRACE_HEADER + "2023-11-16 18:15:46.68,374,44,1\n",
    "negative_tokens": TRACE_HEADER + "2023-11-16 18:15:46.68,-374,44\n",
    "text_tokens": TRACE_HEADER + "2023-11-16 18:15:46.68,many,44\n",
    "empty_tokens": TRACE_HEADER + "2023-11-16 18:15:46.68,,44\n",
    "huge_tokens": TRACE_HEADER + "2023-11-16 18:15:46.68,99999999999999999999,44\n",
    "bad_month": TRACE_HEADER + "2023-13-16 18:15:46.68,374,44\n",
    "bad_separator": TRACE_HEADER + "2023/11/16 18:15:46.68,374,44\n",
    "time_backwards": TRACE_HEADER + "2023-11-16 18:15:47.0,374,44\n"
                                     "2023-11-16 18:15:46.0,10,10\n",
    "binary": "\x00\x01\x02\xff\n",
}
BAD_FAILURE_TRACES = {
    "bad_time": "time,component,index\nsoon,chip,0\n",
    "unknown_component": "time,component,index\n1h,toaster,0\n",
    "index_outside": "time,component,index\n1h,chip,999999999\n",
    "too_few_columns": "time,component,index\n1h,chip\n",
}

# Values wrong for most typed keys; a case is kept only where the schema documents a range
# that excludes it (checked below by key kind).
NUMERIC_BAD = ["-1", "abc", "1e400", "nan", "[1, 2]"]


def leaves(d, prefix=()):
    """Paths of the scalar leaves of a nested dict."""
    out = []
    for k, v in d.items():
        p = prefix + (k,)
        if isinstance(v, dict):
            out += leaves(v, p)
        else:
            out.append(p)
    return out


def sections(d, prefix=()):
    out = [prefix] if prefix else []
    for k, v in d.items():
        if isinstance(v, dict):
            out += sections(v, prefix + (k,))
    return out


def set_path(d, path, value):
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value


def del_path(d, path):
    for k in path[:-1]:
        d = d[k]
    del d[path[-1]]


def dump(d):
    # Block-ish JSON: one key per line, so errors have distinct line numbers.
    return json.dumps(d, indent=2) + "\n"


class Case:
    def __init__(self, name, args, files, expect_in_err=""):
        self.name = name
        self.args = args              # CLI arguments (file names relative to the case dir)
        self.files = files            # name -> text, written into the case dir
        self.expect_in_err = expect_in_err


def document_cases(rng):
    cases = []
    bases = [("training", TRAINING, "run"), ("reliable", RELIABLE, "run"),
             ("collective", COLLECTIVE, "run"), ("inference", INFERENCE, "run")]
    for kind, base, cmd in bases:
        for path in leaves(base):
            key = ".".join(path)
            m = copy.deepcopy(base)
            set_path(m, path, BAD_MAPPING)
            cases.append(Case(f"{kind}:{key}:mapping", [cmd, "s.yaml", "-o", "out.h5"],
                              {"s.yaml": dump(m)}, key))
        for sec in sections(base):
            m = copy.deepcopy(base)
            d = m
            for k in sec:
                d = d[k]
            d["zz_typo"] = 1
            key = ".".join(sec) + ".zz_typo"
            cases.append(Case(f"{kind}:{key}", [cmd, "s.yaml", "-o", "out.h5"],
                              {"s.yaml": dump(m)}, key))
        m = copy.deepcopy(base)
        m["zz_top"] = 1
        cases.append(Case(f"{kind}:zz_top", [cmd, "s.yaml"], {"s.yaml": dump(m)}, "zz_top"))
        # Cut the text short at a seeded point inside a mapping: the document is unbalanced.
        text = dump(base)
        for cut in sorted(rng.sample(range(2, len(text) - 3), 3)):
            if text[:cut].count("{") > text[:cut].count("}"):
                cases.append(Case(f"{kind}:truncated@{cut}", [cmd, "s.yaml", "-o", "out.h5"],
                                  {"s.yaml": text[:cut]}))
        for cmd2 in ("validate",):
            m = copy.deepcopy(base)
            set_path(m, leaves(base)[rng.randrange(len(leaves(base)))], BAD_MAPPING)
            cases.append(Case(f"{kind}:{cmd2}", [cmd2, "s.yaml"], {"s.yaml": dump(m)}))
    # Required keys of each kind.
    for kind, base, path in [("training", TRAINING, ("workload", "sequence_length")),
                             ("training", TRAINING, ("workload", "global_batch")),
                             ("training", TRAINING, ("workload", "model")),
                             ("training", TRAINING, ("cluster", "ultraservers")),
                             ("inference", INFERENCE, ("workload", "serving", "max_context")),
                             ("inference", INFERENCE, ("workload", "slo", "ttft")),
                             ("inference", INFERENCE, ("workload", "requests", "input_tokens")),
                             ("inference", INFERENCE, ("workload", "model"))]:
        m = copy.deepcopy(base)
        del_path(m, path)
        cases.append(Case(f"{kind}:missing:{'.'.join(path)}", ["run", "s.yaml", "-o", "out.h5"],
                          {"s.yaml": dump(m)}, ".".join(path)))
    # Out-of-range numbers where the schema bounds them.
    for kind, base, path, values in [
            ("training", TRAINING, ("workload", "parallelism", "tp"), ["0", "-4", "abc", "3"]),
            ("training", TRAINING, ("workload", "global_batch"), ["0", "-1", "1.5"]),
            ("training", TRAINING, ("cluster", "ultraservers"), ["0", "-2", "99999999"]),
            ("inference", INFERENCE, ("workload", "serving", "max_batch"), ["0", "-1", "x"]),
            ("inference", INFERENCE, ("workload", "serving", "tp"), ["0", "3", "12", "32"]),
            ("inference", INFERENCE, ("workload", "requests", "count"), ["0", "-5"]),
            ("inference", INFERENCE, ("workload", "slo", "tpot"), ["0s", "-1ms", "fast"]),
            ("inference", INFERENCE, ("workload", "requests", "output_tokens"), ["3500", "0"]),
            ("collective", COLLECTIVE, ("workload", "collective", "sizes"), ["1MiB:1KiB", "x"])]:
        for v in values:
            m = copy.deepcopy(base)
            set_path(m, path, v)
            key = ".".join(path)
            cases.append(Case(f"{kind}:{key}={v}", ["run", "s.yaml", "-o", "out.h5"],
                              {"s.yaml": dump(m)}, ".".join(path[:2])))
    return cases


def study_cases():
    cases = []
    base = {"base.yaml": dump(TRAINING)}
    for kind, doc, cmd in [("sweep", SWEEP, "batch"), ("plan", PLAN, "plan")]:
        for path in leaves(doc):
            if path == ("base",):
                continue
            m = copy.deepcopy(doc)
            set_path(m, path, BAD_MAPPING)
            files = dict(base)
            files["f.yaml"] = dump(m)
            cases.append(Case(f"{kind}:{'.'.join(path)}:mapping", [cmd, "f.yaml", "-o", "o.h5"],
                              files))
        for sec in [()] + sections(doc):
            m = copy.deepcopy(doc)
            d = m
            for k in sec:
                d = d[k]
            d["zz_typo"] = 1
            files = dict(base)
            files["f.yaml"] = dump(m)
            cases.append(Case(f"{kind}:{'.'.join(sec)}.zz_typo", [cmd, "f.yaml", "-o", "o.h5"],
                              files, "zz_typo"))
        m = copy.deepcopy(doc)
        m["base"] = "missing.yaml"
        cases.append(Case(f"{kind}:base_missing", [cmd, "f.yaml", "-o", "o.h5"],
                          {"f.yaml": dump(m)}, "base"))
        # A base that is itself malformed: the study refuses before any run.
        bad = copy.deepcopy(TRAINING)
        bad["workload"]["global_batch"] = 0
        cases.append(Case(f"{kind}:bad_base", [cmd, "f.yaml", "-o", "o.h5"],
                          {"f.yaml": dump(doc), "base.yaml": dump(bad)}, "global_batch"))
    return cases


LOCATED = re.compile(r"^\S+:\d+:\d+: ")
LINE = re.compile(r"^(?P<indent>\s*)(?P<key>[a-z_][a-z0-9_]*):\s+(?P<value>[^\s#{\[|>&*!][^#]*)")


def preset_cases(src, rng, per_file):
    """Chip, model, fabric and reliability presets, mutated line by line and referenced by a
    scenario as a file."""
    cases = []
    groups = [
        ("chip", os.path.join(src, "topologies", "chips"), ("hardware", "chip"), TRAINING),
        ("model", os.path.join(src, "scenarios", "models"), ("workload", "model"), TRAINING),
        ("fabric", os.path.join(src, "topologies"), ("cluster", "fabric"), COLLECTIVE),
        ("reliability", os.path.join(src, "scenarios", "reliability"), ("reliability", "preset"),
         RELIABLE),
    ]
    for kind, folder, ref, base in groups:
        names = sorted(f for f in os.listdir(folder) if f.endswith(".yaml"))
        if kind == "model":
            names = [n for n in names if n in ("llama3-8b.yaml", "mixtral-8x7b.yaml",
                                               "deepseek-v3.yaml")]
        if kind == "fabric":
            names = [n for n in names if n.startswith("trn2-ultra")]
        for name in names:
            with open(os.path.join(folder, name)) as f:
                lines = f.read().split("\n")
            if kind == "chip" and name != "trn2.yaml":
                continue
            candidates = [i for i, l in enumerate(lines) if LINE.match(l)]
            for i in sorted(rng.sample(candidates, min(per_file, len(candidates)))):
                m = LINE.match(lines[i])
                mutated = list(lines)
                mutated[i] = f"{m.group('indent')}{m.group('key')}: {{zz_unknown: 1}}"
                scen = copy.deepcopy(base)
                if kind == "reliability":
                    scen["reliability"] = {"preset": "p.yaml"}
                else:
                    set_path(scen, ref, "p.yaml")
                cases.append(Case(f"{kind}:{name}:{m.group('key')}@{i + 1}",
                                  ["run", "s.yaml", "-o", "out.h5"],
                                  {"s.yaml": dump(scen), "p.yaml": "\n".join(mutated)}, "p.yaml"))
            scen = copy.deepcopy(base)
            if kind == "reliability":
                scen["reliability"] = {"preset": "p.yaml"}
            else:
                set_path(scen, ref, "p.yaml")
            cases.append(Case(f"{kind}:{name}:unknown_key", ["run", "s.yaml", "-o", "out.h5"],
                              {"s.yaml": dump(scen),
                               "p.yaml": "\n".join(lines) + "\nzz_unknown_key: 1\n"}, "p.yaml"))
    return cases


# A fleet of one job class whose jobs come from a job trace (docs/fleet.md, "A job trace").
FLEET = {"name": "fuzz-fleet", "hardware": {"chip": "trn2"}, "cluster": {"ultraservers": 4},
         "fleet": {"policy": "backfill", "trace": "jobs.csv",
                   "jobs": [{"name": "small", "gang": 1, "count": 0, "deadline": "1d",
                             "workload": {"type": "training", "model": "llama3-8b",
                                          "sequence_length": 8192, "global_batch": 64,
                                          "steps": 100, "precision": "bf16",
                                          "parallelism": {"tp": 8, "pp": 1, "dp": "auto"}}}]}}
BAD_JOB_TRACES = {
    "empty": "",
    "no_class_column": "submit,duration\n0h,1h\n",
    "unknown_class": "submit,class\n0h,big\n",
    "decreasing": "submit,class\n2h,small\n1h,small\n",
    "zero_duration": "submit,class,duration\n0h,small,0s\n",
    "steps_and_duration": "submit,class,steps,duration\n0h,small,5,1h\n",
    "bad_duration": "submit,class,duration\n0h,small,soon\n",
    "short_line": "submit,class,duration\n0h,small\n",
    "binary": "submit,class\n\x00\x01\x02,small\n",
}


def fleet_cases():
    cases = []
    for name, text in BAD_JOB_TRACES.items():
        cases.append(Case(f"job_trace:{name}", ["run", "s.yaml", "-o", "out.h5"],
                          {"s.yaml": dump(FLEET), "jobs.csv": text}, "fleet.trace"))
    good = "submit,class,duration\n0h,small,2h\n"
    for key, value in [("request_level", {"from": "1h"}), ("request_level", 3),
                       ("pools", [{"name": "b"}]), ("pools", {"b": 2}),
                       ("pools", [{"name": "b", "instances": 0}]),
                       ("pools", [{"name": "b", "ultraservers": 2, "hardware": 7}]),
                       ("jobs", [{"name": "small", "gang": [2, 1], "count": 0,
                                  "workload": FLEET["fleet"]["jobs"][0]["workload"]}]),
                       ("jobs", [{"name": "small", "gang": [], "count": 0,
                                  "workload": FLEET["fleet"]["jobs"][0]["workload"]}]),
                       ("jobs", [{"name": "small", "gang": 9, "count": 0,
                                  "workload": FLEET["fleet"]["jobs"][0]["workload"]}])]:
        scen = copy.deepcopy(FLEET)
        scen["fleet"][key] = value
        cases.append(Case(f"fleet:{key}={json.dumps(value)[:40]}",
                          ["run", "s.yaml", "-o", "out.h5"],
                          {"s.yaml": dump(scen), "jobs.csv": good}, "fleet."))
    # A fleet plan refuses a workload's search keys and other objectives, before any run.
    for body, key in [({"search": {"tp": [8, 16]}}, "search.tp"),
                      ({"objective": "min_time"}, "objective"),
                      ({"finalists": 3}, "finalists"),
                      ({"search": {"instances": [4]}}, "search.instances")]:
        plan = {"base": "s.yaml", "objective": "min_cost", "search": {"ultraservers": [2, 4]}}
        plan.update(body)
        cases.append(Case(f"fleet_plan:{key}", ["plan", "p.yaml", "-o", "o.h5"],
                          {"s.yaml": dump(FLEET), "jobs.csv": good, "p.yaml": dump(plan)}, key))
    return cases


def trace_cases():
    cases = []
    for name, text in BAD_TRACES.items():
        scen = copy.deepcopy(INFERENCE)
        scen["workload"]["requests"]["arrival"] = {"trace": "t.csv"}
        del scen["workload"]["requests"]["count"]
        cases.append(Case(f"trace:{name}", ["run", "s.yaml", "-o", "out.h5"],
                          {"s.yaml": dump(scen), "t.csv": text}, "workload.requests.arrival"))
    scen = copy.deepcopy(INFERENCE)
    scen["workload"]["requests"]["arrival"] = {"trace": "absent.csv"}
    cases.append(Case("trace:missing", ["run", "s.yaml", "-o", "out.h5"], {"s.yaml": dump(scen)},
                      "workload.requests.arrival.trace"))
    # A serving fleet replays failure traces too, checked the same way before it runs.
    for kind, base in [("training", TRAINING), ("inference", INFERENCE)]:
        for name, text in BAD_FAILURE_TRACES.items():
            scen = copy.deepcopy(base)
            scen["reliability"] = {"trace": "f.csv"}
            label = f"failure_trace:{name}" if kind == "training" else \
                f"serving_failure_trace:{name}"
            cases.append(Case(label, ["run", "s.yaml", "-o", "out.h5"],
                              {"s.yaml": dump(scen), "f.csv": text}, "reliability"))
    return cases


def override_cases(rng):
    cases = []
    for kind, base in [("training", TRAINING), ("inference", INFERENCE)]:
        for path in leaves(base):
            key = ".".join(path)
            for value in ["{zz_unknown: 1}", "[" if rng.random() < 0.5 else "{"]:
                cases.append(Case(f"set:{kind}:{key}={value}",
                                  ["run", "s.yaml", "-o", "out.h5", "--set", f"{key}={value}"],
                                  {"s.yaml": dump(base)}, key))
        cases.append(Case(f"set:{kind}:no_equals", ["run", "s.yaml", "--set", "workload.model"],
                          {"s.yaml": dump(base)}))
        cases.append(Case(f"set:{kind}:unknown", ["run", "s.yaml", "--set", "workload.zz=1"],
                          {"s.yaml": dump(base)}, "workload.zz"))
    return cases


def flag_cases():
    s = {"s.yaml": dump(TRAINING)}
    rows = [
        ["run"], ["run", "s.yaml", "--threads", "-1"], ["run", "s.yaml", "--threads", "abc"],
        ["run", "s.yaml", "--threads", "100000"], ["run", "s.yaml", "--bogus"],
        ["run", "s.yaml", "-o"], ["run", "s.yaml", "-o", "s.yaml"],
        ["run", "s.yaml", "-o", "x.h5", "--trace", "x.h5"], ["run", "absent.yaml"],
        ["run", "s.yaml", "extra.yaml"], ["frobnicate"], ["batch"], ["plan"],
        ["validate"], ["describe", "chip", "no-such-chip"], ["describe", "model", "nope"],
        ["collective", "--ultraservers", "0"], ["collective", "--ultraservers", "x"],
        ["collective", "--op", "all_smash"], ["collective", "--sizes", "1GB:1KB"],
        ["kernel", "--chip", "trn2", "matmul", "0x0x0"], ["kernel", "--chip", "nochip", "matmul",
                                                          "128x128x128"],
        ["run", "s.yaml", "--set"], ["run", "."], ["run", "/dev/null"],
    ]
    return [Case("flags:" + " ".join(r), r, s) for r in rows]


def all_cases(src, seed):
    rng = random.Random(seed)
    return (document_cases(rng) + study_cases() + preset_cases(src, rng, 8) + trace_cases() +
            fleet_cases() +
            override_cases(rng) + flag_cases())


def run_case(binary, case, scratch):
    d = os.path.join(scratch, re.sub(r"[^A-Za-z0-9_.-]", "_", case.name)[:120])
    os.makedirs(d)
    for name, text in case.files.items():
        with open(os.path.join(d, name), "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
    before = sorted(os.listdir(d))
    started = time.monotonic()
    proc = subprocess.Popen([binary] + case.args, cwd=d, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ, OMP_NUM_THREADS="1"))
    try:
        out, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return "took more than 10 s"
    wall = time.monotonic() - started
    problems = []
    if proc.returncode != 2:
        problems.append(f"exit {proc.returncode}, expected 2")
    text = err.decode(errors="replace")
    if not text.strip():
        problems.append("no message on stderr")
    family = case.name.split(":")[0]
    if family == "set" and not text.startswith("command line (--set "):
        problems.append("a --set error does not name the command line")
    elif family not in ("set", "flags") and not LOCATED.match(text):
        problems.append("the message has no FILE:LINE:COL")
    if case.expect_in_err and case.expect_in_err not in text:
        problems.append(f"message does not name '{case.expect_in_err}'")
    if out.strip():
        problems.append("printed on stdout: " + out.decode(errors="replace")[:200])
    after = sorted(os.listdir(d))
    if after != before:
        problems.append(f"wrote {sorted(set(after) - set(before))}")
    if wall > 10:
        problems.append(f"took {wall:.1f} s")
    shutil.rmtree(d)
    return "; ".join(problems) + ((" -- " + text.strip()[:300]) if problems else "")


def main():
    binary, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    seed = 20261201
    if "--seed" in sys.argv:
        seed = int(sys.argv[sys.argv.index("--seed") + 1])
    cases = all_cases(src, seed)
    # The bases must be valid, or every mutation of them would fail for the wrong reason.
    with tempfile.TemporaryDirectory(prefix="trnsim-fuzz-bases-") as d:
        with open(os.path.join(d, "base.yaml"), "w") as f:
            f.write(dump(TRAINING))
        with open(os.path.join(d, "jobs.csv"), "w") as f:
            f.write("submit,class,duration\n0h,small,2h\n")
        for name, doc in [("training", TRAINING), ("reliable", RELIABLE),
                          ("collective", COLLECTIVE), ("inference", INFERENCE), ("sweep", SWEEP),
                          ("plan", PLAN), ("fleet", FLEET)]:
            with open(os.path.join(d, name + ".yaml"), "w") as f:
                f.write(dump(doc))
            r = subprocess.run([binary, "validate", name + ".yaml"], cwd=d, capture_output=True)
            if r.returncode != 0:
                print(f"FAIL: the {name} base is not valid: {r.stderr.decode()[:300]}")
                return 1
    if "--list" in sys.argv:
        for c in cases:
            print(c.name)
        return 0
    started = time.monotonic()
    failures = []
    with tempfile.TemporaryDirectory(prefix="trnsim-fuzz-") as scratch:
        for c in cases:
            problem = run_case(binary, c, scratch)
            if problem:
                failures.append((c.name, problem))
    wall = time.monotonic() - started
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    for name, problem in failures:
        print(f"FAIL {name}: {problem}")
    kinds = sorted({c.name.split(":")[0] for c in cases})
    print(f"fuzz: {len(cases)} malformed inputs ({', '.join(kinds)}), seed {seed}: "
          f"{len(cases) - len(failures)} exit 2 with a message and write nothing, "
          f"{len(failures)} do not; {wall:.1f} s, largest child {peak_kib / 1024:.0f} MiB")
    if peak_kib > 1024 * 1024:
        print("FAIL: a case used more than 1 GiB")
        return 1
    return 1 if failures or len(cases) < 300 else 0


if __name__ == "__main__":
    sys.exit(main())
