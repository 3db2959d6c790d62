#!/usr/bin/env python3
"""The documentation check itself: marked blocks run in order in a scratch directory, files
are written and appended, a failing command fails the check, shown outputs are compared with
printed ones (`...` and `~` wall times the only slack) and --update rewrites them."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_doc_commands.py")
sys.path.insert(0, HERE)
import check_doc_commands as check  # noqa: E402


def run(markdown, update=False):
    """The check's exit code, its output and the markdown after it."""
    with tempfile.TemporaryDirectory() as source, tempfile.TemporaryDirectory() as build:
        path = os.path.join(source, "README.md")
        with open(path, "w", encoding="utf-8") as f:
            f.write(markdown)
        r = subprocess.run([sys.executable, CHECK] + (["--update"] if update else [])
                           + [source, build, "README.md"], capture_output=True, text=True)
        with open(path, encoding="utf-8") as f:
            return r.returncode, r.stdout, f.read()


class DocCommands(unittest.TestCase):
    def test_files_are_written_and_appended_before_the_commands_run(self):
        code, out, _ = run("<!-- file: a.txt -->\n```\none\n```\n"
                           "<!-- append: a.txt -->\n```\ntwo\n```\n"
                           "<!-- runnable -->\n```sh\n# a comment\n"
                           "test \"$(cat a.txt | tr '\\n' ' ')\" = 'one two '\n```\n"
                           "```sh\nfalse   # not marked: never run\n```\n")
        self.assertEqual(code, 0, out)
        self.assertIn("1 run, 0 outputs compared, 0 failed", out)

    def test_a_failing_command_fails_the_check_and_shows_its_output(self):
        code, out, _ = run("<!-- runnable -->\n```sh\necho broken >&2; exit 3\n```\n")
        self.assertEqual(code, 1)
        self.assertIn("README.md:2: FAILED (exit 3, expected 0)", out)
        self.assertIn("broken", out)

    def test_nothing_to_run_is_a_failure(self):
        code, _, _ = run("no blocks\n")
        self.assertEqual(code, 1)


class Outputs(unittest.TestCase):
    def test_a_shown_output_equal_to_the_printed_one_passes(self):
        code, out, _ = run("<!-- output: printf 'step 15.0 s\\n  mfu 39.9%%\\n\\n' -->\n"
                           "```\nstep 15.0 s\n  mfu 39.9%\n```\n")
        self.assertEqual(code, 0, out)
        self.assertIn("1 outputs compared, 0 failed", out)

    def test_a_marker_may_wrap(self):
        code, out, _ = run("<!-- output: printf 'a b\\n'\n   | tr a-z A-Z\n-->\n```\nA B\n```\n")
        self.assertEqual(code, 0, out)
        self.assertIn("output ok (run, ", out)

    def test_a_figure_that_differs_by_one_digit_fails(self):
        code, out, _ = run("<!-- output: printf 'step 15.0 s\\nmfu 39.9%%\\n' -->\n"
                           "```\nstep 15.0 s\nmfu 39.8%\n```\n")
        self.assertEqual(code, 1)
        self.assertIn("README.md:2: output DIFFERS", out)
        self.assertIn("shown:   mfu 39.8%", out)
        self.assertIn("printed: mfu 39.9%", out)

    def test_missing_and_extra_lines_fail(self):
        code, _, _ = run("<!-- output: printf 'a\\nb\\n' -->\n```\na\n```\n")
        self.assertEqual(code, 1)
        code, _, _ = run("<!-- output: printf 'a\\n' -->\n```\na\nb\n```\n")
        self.assertEqual(code, 1)

    def test_a_failing_output_command_fails_unless_its_exit_is_given(self):
        code, out, _ = run("<!-- output: echo x; exit 2 -->\n```\nx\n```\n")
        self.assertEqual(code, 1)
        self.assertIn("FAILED (exit 2, expected 0)", out)
        code, out, _ = run("<!-- output (exit 2): echo x; exit 2 -->\n```\nx\n```\n")
        self.assertEqual(code, 0, out)

    def test_the_output_of_a_runnable_command_is_used_without_running_it_again(self):
        code, out, _ = run("<!-- runnable -->\n```sh\necho $$ > pid; echo hi\n```\n"
                           "<!-- output: echo $$ > pid; echo hi -->\n```\nhi\n```\n")
        self.assertEqual(code, 0, out)
        self.assertIn("1 run, 1 outputs compared", out)

    def test_an_unmarked_block_without_a_language_is_an_error(self):
        code, out, _ = run("<!-- runnable -->\n```sh\ntrue\n```\n```\nsome output 1.0 s\n```\n")
        self.assertEqual(code, 1)
        self.assertIn("README.md:5: a block without a language", out)

    def test_a_measurement_names_its_date_and_commit_and_is_not_compared(self):
        code, out, _ = run("<!-- runnable -->\n```sh\ntrue\n```\n"
                           "<!-- measured: 2026-12-01, 1a2b3c4 -->\n```\nwall 3.30 s\n```\n")
        self.assertEqual(code, 0, out)
        code, out, _ = run("<!-- runnable -->\n```sh\ntrue\n```\n"
                           "<!-- measured: last week -->\n```\nwall 3.30 s\n```\n")
        self.assertEqual(code, 1)
        self.assertIn("YYYY-MM-DD", out)

    def test_each_commented_option_is_tried_alone(self):
        md = ("<!-- file: s.yaml -->\n<!-- uncomment: ! grep -q '^ *bad:' s.yaml -->\n"
              "```yaml\na: 1\n  # good: 2\n  # bad: 3\n# a comment, not an option\n```\n")
        code, out, _ = run(md)
        self.assertEqual(code, 1)
        self.assertIn("README.md:6: FAILED", out)
        self.assertIn("with `bad: 3`", out)
        self.assertIn("README.md:5: ok", out)
        self.assertIn("3 run", out)    # good, bad, as shown: the comment is not an option
        code, out, _ = run(md.replace("  # bad: 3\n", ""))
        self.assertEqual(code, 0, out)


class Matching(unittest.TestCase):
    def test_an_ellipsis_stands_for_any_lines_including_none(self):
        printed = ["head", "a", "b", "c", "tail"]
        self.assertIsNone(check.compare(["head", "...", "tail"], printed))
        self.assertIsNone(check.compare(["...", "b", "..."], printed))
        self.assertIsNone(check.compare(["head", "...", "a", "...", "tail"], printed))
        self.assertIsNotNone(check.compare(["head", "...", "x", "...", "tail"], printed))
        self.assertIsNotNone(check.compare(["...", "a"], printed))

    def test_only_marked_wall_times_match_any_time(self):
        printed = ["engine 2 threads, 2.47 ms wall; 50 requests in 21.4 min"]
        self.assertIsNone(check.compare(
            ["engine 2 threads, ~1.02 s wall; 50 requests in 21.4 min"], printed))
        self.assertIsNotNone(check.compare(
            ["engine 2 threads, ~1.02 s wall; 50 requests in ~21.3 min"], []))
        self.assertIsNotNone(check.compare(
            ["engine 3 threads, ~1.02 s wall; 50 requests in 21.4 min"], printed))
        self.assertIsNotNone(check.compare(
            ["engine 2 threads, 2.46 ms wall; 50 requests in 21.4 min"], printed))

    def test_regeneration_keeps_ellipses_and_wall_marks(self):
        shown = ["run: step 15.6 s in ~550 ms", "...", "  total  $2,365,580"]
        printed = ["run: step 15.0 s in 603 ms", "x", "y", "  total  $2,275,709"]
        self.assertEqual(check.regenerate(shown, printed),
                         ["run: step 15.0 s in ~603 ms", "...", "  total  $2,275,709"])

    def test_regeneration_of_a_plain_block_is_the_output(self):
        self.assertEqual(check.regenerate(["a 1"], ["a 2", "b"]), ["a 2", "b"])

    def test_regeneration_of_a_whole_block_keeps_its_wall_marks(self):
        self.assertEqual(check.regenerate(["a 1", "wall ~2 ms"], ["a 2", "wall 3 ms", "b"]),
                         ["a 2", "wall ~3 ms", "b"])

    def test_regeneration_gives_up_when_a_line_changed_shape(self):
        self.assertIsNone(check.regenerate(["step ~1 s", "..."], ["the step took 2 s"]))

    def test_update_rewrites_a_drifted_block_in_place(self):
        md = ("text\n<!-- output: printf 'a 1.5 s\\nb\\nc 7 in 3 ms\\n' -->\n"
              "  ```\n  a 1.4 s\n  ...\n  c 6 in ~2 ms\n  ```\nmore\n")
        code, out, after = run(md, update=True)
        self.assertEqual(code, 0, out)
        self.assertEqual(after, md.replace("1.4", "1.5").replace("c 6", "c 7")
                         .replace("~2 ms", "~3 ms"))
        code, out, _ = run(after)
        self.assertEqual(code, 0, out)


if __name__ == "__main__":
    unittest.main()
