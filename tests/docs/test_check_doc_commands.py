#!/usr/bin/env python3
"""The documentation-commands check itself: marked blocks run in order in a scratch
directory, files are written and appended, and a failing command fails the check."""
import os
import subprocess
import sys
import tempfile
import unittest

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_doc_commands.py")


def run(markdown):
    with tempfile.TemporaryDirectory() as source, tempfile.TemporaryDirectory() as build:
        with open(os.path.join(source, "README.md"), "w", encoding="utf-8") as f:
            f.write(markdown)
        r = subprocess.run([sys.executable, CHECK, source, build, "README.md"],
                           capture_output=True, text=True)
        return r.returncode, r.stdout


class DocCommands(unittest.TestCase):
    def test_files_are_written_and_appended_before_the_commands_run(self):
        code, out = run("<!-- file: a.txt -->\n```\none\n```\n"
                        "<!-- append: a.txt -->\n```\ntwo\n```\n"
                        "<!-- runnable -->\n```sh\n# a comment\n"
                        "test \"$(cat a.txt | tr '\\n' ' ')\" = 'one two '\n```\n"
                        "```sh\nfalse   # not marked: never run\n```\n")
        self.assertEqual(code, 0, out)
        self.assertIn("1 run, 0 failed", out)

    def test_a_failing_command_fails_the_check_and_shows_its_output(self):
        code, out = run("<!-- runnable -->\n```sh\necho broken >&2; exit 3\n```\n")
        self.assertEqual(code, 1)
        self.assertIn("README.md:2: FAILED (exit 3)", out)
        self.assertIn("broken", out)

    def test_nothing_to_run_is_a_failure(self):
        code, out = run("no blocks\n")
        self.assertEqual(code, 1)


if __name__ == "__main__":
    unittest.main()
