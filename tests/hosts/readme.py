#!/usr/bin/env python3
"""Every ```sql example of README.md runs as printed, from the repository
root, in the sqlite3 shell with the module loaded: no error, no warning.
Where the README shows an example's output, it is what the example prints.

Convention: the output of an example is a ```text block following its
```sql block (blank lines between them allowed), holding exactly what the
sqlite3 shell prints in its default list mode (columns separated by |, NULL
as nothing, one line a row, no headers).  An example without a ```text
block shows no output (one whose rows change from run to run, such as the
current time).  Output is never written inside the ```sql block as "-- a|b"
comments: such a line fails the check, so every output shown is compared.
Nor is it put in an unmarked ``` block after the example (it would not be
compared), and an EXPLAIN example always shows its output: the plan it
claims is the plan printed.
    tests/hosts/readme.py <path of kafkalog.so, without or with .so>"""
import difflib
import os
import re
import shutil
import subprocess
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
module = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "kafkalog"))
text = open(os.path.join(root, "README.md"), encoding="utf-8").read()
failures = 0
example = re.compile(r"```sql\n(.*?)```\n(?:\s*\n)*(?:```text\n(.*?)```\n)?", re.S)
unmarked = re.compile(r"\s*```\n")
for i, m in enumerate(example.finditer(text), 1):
    block, want = m.group(1), m.group(2)
    line = text.count("\n", 0, m.start()) + 1
    # The writing example makes a new log in this directory: a fresh one each time.
    shutil.rmtree("/tmp/kafkalog-readme", ignore_errors=True)
    os.mkdir("/tmp/kafkalog-readme")
    first = block.strip().splitlines()[0][:70]
    r = subprocess.run(["sqlite3", "-cmd", ".load " + module, ":memory:"], input=block, cwd=root,
                       capture_output=True, text=True)
    problems = []
    if r.returncode != 0 or r.stderr.strip():
        problems.append(r.stderr.strip() or f"exit status {r.returncode}")
    for k, l in enumerate(block.splitlines()):
        if re.match(r"\s*--.*\|", l):
            problems.append(f"line {line + 1 + k}: output in a comment (put it in a ```text block)")
    if want is None and unmarked.match(text, m.end()):
        problems.append("its output is in an unmarked ``` block: mark it ```text to compare it")
    if want is None and re.search(r"\bEXPLAIN\b", block, re.I):
        problems.append("an EXPLAIN example without its output (a ```text block)")
    if want is not None and r.stdout != want:
        diff = difflib.unified_diff(want.splitlines(), r.stdout.splitlines(), "README", "printed",
                                    lineterm="")
        problems.append("output differs:\n" + "\n".join(diff))
    shown = "" if want is None else ", output compared"
    print(("ok   " if not problems else "FAIL ") + f"README example {i} (line {line}{shown}): {first}")
    for p in problems:
        print("     " + p.replace("\n", "\n     "))
    failures += bool(problems)
sys.exit(1 if failures else 0)
