#!/usr/bin/env python3
"""The commands the documentation shows, run as shown, and the output it shows, compared.

In README.md and docs/**/*.md, a fenced code block right after a marker line (several markers
may stand one per line before the same block)

    <!-- runnable -->        every command line of the block (one per line; `#` comments and
                             blank lines skipped) runs with bash and must exit 0
    <!-- file: PATH -->      the block is written to PATH, as a reader saving it would
    <!-- append: PATH -->    the block is appended to PATH (a section added to a scenario)
    <!-- uncomment: CMD -->  with `file:`: CMD must exit 0 on PATH as shown and, for every
                             commented option of the block (a line `# key: value`), on PATH
                             written with that line uncommented
    <!-- output: CMD -->     the block is what CMD prints on stdout (add `2>&1` to show stderr);
                             CMD must exit 0, or N with `<!-- output (exit N): CMD -->`
    <!-- measured: DATE, COMMIT -->   a measurement (a benchmark's wall times, a record of a
                             decision) as recorded on DATE (YYYY-MM-DD) by COMMIT: never compared

A marker may wrap over several lines (they are joined with single spaces).

An output block equals the output line by line (trailing blanks aside), figures to the
printed digit, with two exceptions the block spells out: a line `...` (blanks around it
aside) stands for any number of lines (none included), and a figure written `~550 ms` (a
tilde before a number and its time unit) is a wall-clock time, which varies run to run and
matches any time. Nothing else is loosened: a simulated figure that changes fails the check.
When CMD is a command line a runnable block ran before (runs of blanks aside), its output
there is used instead of running it again.

A fenced block without a language must carry a marker (output or measured when it shows
what a command prints), so that no printed output goes unchecked by mistake; diagrams and
listings say `text`, commands `sh`.

Blocks run in document order, README.md first, in a scratch directory that holds symbolic
links to the repository's data (scenarios/, topologies/, analysis/, scripts/, data/, run.sh)
and to the build (build/), with the build's trnsim first on PATH, so outputs (results/,
report/) land in the scratch directory and never in the repository. A runnable block may
write below docs/ only through its own scratch copy: docs/ is not linked.

Usage: check_doc_commands.py [--update] SOURCE_DIR BUILD_DIR [DOC ...]
       (default: README.md, docs/**/*.md). With --update (scripts/update-docs), an output block
       that differs is rewritten from what its command prints, keeping its `~` marks on lines
       of the same shape (the same text around the figures); a block with `...` lines keeps
       them, and is reported for a hand edit when its shown lines no longer all have a printed
       line of their shape.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MARK = re.compile(r"^<!--\s*(runnable|file:\s*(?P<file>\S+)|append:\s*(?P<append>\S+)"
                  r"|uncomment:\s*(?P<uncomment>.+?)"
                  r"|output(?:\s*\(exit\s+(?P<exit>\d+)\))?:\s*(?P<output>.+?)"
                  r"|measured:\s*(?P<measured>.*?))\s*-->\s*$")
MEASURED = re.compile(r"^\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2})?, [0-9a-f]{7,40}$")
FENCE = re.compile(r"^(\s*)```\s*(\S*)")
LINKED = ["scenarios", "topologies", "analysis", "scripts", "data", "run.sh", "CMakeLists.txt",
          "cmake", "include", "src", "tests"]
OPTION = re.compile(r"^(\s*)# ?([A-Za-z_][A-Za-z0-9_]*:\s.*)$")
NUMBER = re.compile(r"[0-9][0-9.,]*")
WALL = re.compile(r"~([0-9][0-9.,]*)( ?)(ns|us|ms|s|min|h)\b")
ANY_WALL = r"[0-9][0-9.,]*\s?(?:ns|us|ms|s|min|h)\b"
ELLIPSIS = "..."


class Block:
    """A fenced block with its markers: marks maps a marker's kind to its argument."""

    def __init__(self, doc, marks, lang, body, fence_line, end_line, indent):
        self.doc, self.marks, self.lang, self.body = doc, marks, lang, body
        self.fence_line, self.end_line, self.indent = fence_line, end_line, indent

    @property
    def where(self):
        return f"{self.doc}:{self.fence_line}"

    @property
    def text(self):
        return "\n".join(self.body) + "\n"


def blocks(source, doc):
    """Every fenced block of a markdown file with the markers before it; errors for misuse."""
    lines = open(os.path.join(source, doc), encoding="utf-8").read().split("\n")
    out, errors, marks = [], [], {}
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        if s.startswith("<!--") and "-->" not in s:
            # A marker may wrap: its lines are joined with single spaces.
            j = i + 1
            while j < len(lines) and "-->" not in lines[j - 1]:
                j += 1
            joined = " ".join(x.strip() for x in lines[i:j])
            if MARK.match(joined):
                s, i = joined, j - 1
        m = MARK.match(s)
        if m:
            kind = m.group(1).split(":")[0].split(" ")[0].split("(")[0]
            marks[kind] = m
            i += 1
            continue
        f = FENCE.match(lines[i])
        if not f:
            if s and marks:
                errors.append(f"{doc}:{i + 1}: a marker must be followed by a fenced code block")
                marks = {}
            i += 1
            continue
        indent = len(f.group(1))
        k = i + 1
        body = []
        while k < len(lines) and not FENCE.match(lines[k]):
            body.append(lines[k][indent:].rstrip())
            k += 1
        b = Block(doc, marks, f.group(2), body, i + 1, k + 1, indent)
        if "uncomment" in marks and "file" not in marks:
            errors.append(f"{b.where}: `uncomment:` needs a `file:` marker on the same block")
        if "measured" in marks and not MEASURED.match(marks["measured"].group("measured")):
            errors.append(f"{b.where}: write the measurement as `<!-- measured: YYYY-MM-DD, "
                          "COMMIT -->` (the date of the run, the commit that recorded it)")
        if not b.lang and not marks:
            errors.append(f"{b.where}: a block without a language: mark the output it shows "
                          "(`output:` or `measured:`) or give it one (`sh`, `text`)")
        out.append(b)
        marks = {}
        i = k + 1
    return out, errors


def commands(text):
    for line in text.split("\n"):
        s = line.strip()
        if s and not s.startswith("#"):
            yield s


# ---- comparing a shown output with a printed one ----

def line_pattern(shown):
    """The regular expression a shown line stands for: literal, but `~TIME` is any time."""
    parts, pos = [], 0
    for m in WALL.finditer(shown):
        parts.append(re.escape(shown[pos:m.start()]))
        parts.append(ANY_WALL)
        pos = m.end()
    parts.append(re.escape(shown[pos:]))
    return re.compile("".join(parts) + r"\Z")


def shape(line):
    """A line with its figures taken out: lines of the same shape differ only in figures."""
    return re.sub(r"\s+", " ", NUMBER.sub("#", line.replace("~", ""))).strip()


def align(shown, printed, same):
    """The cheapest assignment of shown lines to printed ones, `...` taking any run of printed
    lines: a list of (shown index, printed index) for the non-`...` lines, or None. same(a, b)
    is the cost of shown line a standing for printed line b (None: it cannot)."""
    n, m = len(shown), len(printed)
    INF = float("inf")
    # best[i][j]: the least cost of matching shown[i:] against printed[j:]
    best = [[INF] * (m + 1) for _ in range(n + 1)]
    best[n][m] = 0
    for i in range(n - 1, -1, -1):
        for j in range(m, -1, -1):
            if shown[i] == ELLIPSIS:
                best[i][j] = min(best[i + 1][j], best[i][j + 1] if j < m else INF)
            elif j < m:
                c = same(i, j)
                if c is not None:
                    best[i][j] = c + best[i + 1][j + 1]
    if best[0][0] == INF:
        return None
    pairs, i, j = [], 0, 0
    while i < n:
        if shown[i] == ELLIPSIS:
            if best[i][j] == best[i + 1][j]:
                i += 1
            else:
                j += 1
        else:
            pairs.append((i, j))
            i, j = i + 1, j + 1
    return pairs


def normalise(text):
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def items(body):
    return [ELLIPSIS if line.strip() == ELLIPSIS else line.rstrip() for line in body]


def compare(body, printed):
    """None when the shown block stands for the printed lines, else what differs."""
    shown = items(body)
    while shown and not shown[-1]:
        shown.pop()
    patterns = [None if s == ELLIPSIS else line_pattern(s) for s in shown]
    if align(shown, printed,
             lambda i, j: 0 if patterns[i].match(printed[j]) else None) is not None:
        return None
    # Say where: the first shown line that no printed line matches in order.
    j = 0
    for i, s in enumerate(shown):
        if s == ELLIPSIS:
            continue
        free = i > 0 and shown[i - 1] == ELLIPSIS
        k = j
        while k < len(printed) and not patterns[i].match(printed[k]) and free:
            k += 1
        if k < len(printed) and patterns[i].match(printed[k]):
            j = k + 1
            continue
        got = printed[j] if j < len(printed) else "(the end of the output)"
        return f"shown line {i + 1} differs:\n    shown:   {s}\n    printed: {got}"
    return "the output goes on after the last shown line (end the block with `...`?)"


def regenerate(body, printed):
    """The block rewritten from the printed lines, keeping `...` and `~` marks; None when the
    printed lines no longer have the shown lines' shapes."""
    shown = items(body)
    while shown and not shown[-1]:
        shown.pop()
    patterns = [None if s == ELLIPSIS else line_pattern(s) for s in shown]
    shapes = [None if s == ELLIPSIS else shape(s) for s in shown]
    printed_shapes = [shape(p) for p in printed]

    def same(i, j):
        if patterns[i].match(printed[j]):
            return 0
        return 1 if shapes[i] == printed_shapes[j] else None

    pairs = align(shown, printed, same)
    if pairs is None:
        if ELLIPSIS in shown:
            return None
        # The whole output, its wall times marked where a shown line of the same shape had them.
        marked = {shapes[i]: i for i in range(len(shown)) if WALL.search(shown[i])}
        return [with_walls(shown[marked[p]], line) if p in marked else line
                for p, line in zip(printed_shapes, printed)]
    out = list(shown)
    for i, j in pairs:
        out[i] = with_walls(shown[i], printed[j])
    return out


def with_walls(shown, line):
    """A printed line with `~` before the figures the shown line of the same shape marks."""
    walls = {len(NUMBER.findall(shown[:m.start()].replace("~", ""))) for m in WALL.finditer(shown)}
    n = [0]

    def mark(m):
        k = n[0]
        n[0] += 1
        return ("~" if k in walls else "") + m.group(0)
    return NUMBER.sub(mark, line)


# ---- running ----

class Runner:
    def __init__(self, build, scratch):
        self.scratch = scratch
        self.env = dict(os.environ)
        self.env["PATH"] = os.path.join(build, "src", "cli") + os.pathsep + self.env["PATH"]
        self.env["TRNSIM_BUILD_DIR"] = build
        self.seen = {}    # command line -> its stdout, for output markers
        self.ran = 0

    def run(self, cmd):
        start = time.monotonic()
        r = subprocess.run(["bash", "-c", cmd], cwd=self.scratch, env=self.env,
                           capture_output=True, text=True, timeout=300)
        self.ran += 1
        return r, time.monotonic() - start

    def write(self, target, text, mode):
        p = os.path.join(self.scratch, target)
        os.makedirs(os.path.dirname(p) or self.scratch, exist_ok=True)
        with open(p, mode, encoding="utf-8") as f:
            f.write(text)


def key(cmd):
    """A command line as the output markers name it: runs of blanks are one blank."""
    return " ".join(cmd.split())


def report(where, r, took, cmd, expected=0):
    ok = r.returncode == expected
    status = "ok" if ok else f"FAILED (exit {r.returncode}, expected {expected})"
    print(f"{where}: {status} in {took:.1f} s: {cmd}")
    if not ok:
        print("    " + (r.stdout + r.stderr).strip().replace("\n", "\n    "))
    return ok


def uncommented(runner, b):
    """The file block, and each of its commented options uncommented alone, pass the command."""
    failures = 0
    target, cmd = b.marks["file"].group("file"), b.marks["uncomment"].group("uncomment")
    for n, line in enumerate(b.body):
        m = OPTION.match(line)
        if not m:
            continue
        variant = list(b.body)
        variant[n] = m.group(1) + m.group(2)
        runner.write(target, "\n".join(variant) + "\n", "w")
        r, took = runner.run(cmd)
        if not report(f"{b.doc}:{b.fence_line + 1 + n}", r, took,
                      f"{cmd}   # with `{m.group(2).strip()}`"):
            failures += 1
    runner.write(target, b.text, "w")
    r, took = runner.run(cmd)
    return failures + (0 if report(b.where, r, took, cmd) else 1)


def check_output(runner, b, update):
    """Compare an output block; with update, return the new body when it differs."""
    m = b.marks["output"]
    cmd, expected = m.group("output"), int(m.group("exit") or 0)
    if key(cmd) in runner.seen and expected == 0:
        printed, took, how = runner.seen[key(cmd)], 0.0, "as run above"
    else:
        r, took = runner.run(cmd)
        if not report(b.where, r, took, cmd, expected):
            return 1, None
        printed, how = r.stdout, "run"
    lines = normalise(printed)
    diff = compare(b.body, lines)
    if diff is None:
        print(f"{b.where}: output ok ({how}, {took:.1f} s): {cmd}")
        return 0, None
    if update:
        new = regenerate(b.body, lines)
        if new is not None:
            print(f"{b.where}: output rewritten: {cmd}")
            return 0, new
        print(f"{b.where}: output DIFFERS and its lines changed shape; edit it by hand: {cmd}\n"
              f"    {diff.replace(chr(10), chr(10) + '    ')}\n    printed:\n        "
              + "\n        ".join(lines))
        return 1, None
    print(f"{b.where}: output DIFFERS from what `{cmd}` prints "
          f"(scripts/update-docs rewrites it):\n    {diff.replace(chr(10), chr(10) + '    ')}")
    return 1, None


def rewrite(source, doc, changes):
    """Replace the bodies of the changed blocks of one document."""
    path = os.path.join(source, doc)
    lines = open(path, encoding="utf-8").read().split("\n")
    for b, body in sorted(changes, key=lambda c: -c[0].fence_line):
        pad = " " * b.indent
        lines[b.fence_line:b.end_line - 1] = [(pad + x).rstrip() for x in body]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main(argv):
    update = "--update" in argv
    args = [a for a in argv if a != "--update"]
    source, build = os.path.abspath(args[0]), os.path.abspath(args[1])
    docs = args[2:] or ["README.md"] + sorted(
        os.path.relpath(os.path.join(d, f), source)
        for d, _, fs in os.walk(os.path.join(source, "docs")) for f in fs if f.endswith(".md"))
    parsed, errors = [], []
    for doc in docs:
        bs, es = blocks(source, doc)
        parsed.append((doc, bs))
        errors += es
    for e in errors:
        print(e)
    scratch = tempfile.mkdtemp(prefix="trnsim-doc-commands-")
    failures, compared = len(errors), 0
    try:
        for name in LINKED:
            if os.path.exists(os.path.join(source, name)):
                os.symlink(os.path.join(source, name), os.path.join(scratch, name))
        os.symlink(build, os.path.join(scratch, "build"))
        runner = Runner(build, scratch)
        for doc, bs in parsed:
            changes = []
            for b in bs:
                if "uncomment" in b.marks:
                    failures += uncommented(runner, b)
                if "file" in b.marks:
                    runner.write(b.marks["file"].group("file"), b.text, "w")
                if "append" in b.marks:
                    runner.write(b.marks["append"].group("append"), b.text, "a")
                if "runnable" in b.marks:
                    for cmd in commands(b.text):
                        r, took = runner.run(cmd)
                        runner.seen[key(cmd)] = r.stdout
                        if not report(b.where, r, took, cmd):
                            failures += 1
                if "output" in b.marks:
                    compared += 1
                    failed, new = check_output(runner, b, update)
                    failures += failed
                    if new is not None:
                        changes.append((b, new))
            if changes:
                rewrite(source, doc, changes)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"doc commands: {runner.ran} run, {compared} outputs compared, {failures} failed")
    return 1 if failures or runner.ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
