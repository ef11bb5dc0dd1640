#!/usr/bin/env python3
"""Every ```sql example of README.md runs as printed, from the repository
root, in the sqlite3 shell with the module loaded: no error, no warning.
    tests/hosts/readme.py <path of kafkalog.so, without or with .so>"""
import os
import re
import shutil
import subprocess
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
module = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "kafkalog"))
text = open(os.path.join(root, "README.md"), encoding="utf-8").read()
failures = 0
for i, block in enumerate(re.findall(r"```sql\n(.*?)```", text, re.S), 1):
    # The writing example makes a new log in this directory: a fresh one each time.
    shutil.rmtree("/tmp/kafkalog-readme", ignore_errors=True)
    os.mkdir("/tmp/kafkalog-readme")
    first = block.strip().splitlines()[0][:70]
    r = subprocess.run(["sqlite3", "-cmd", ".load " + module, ":memory:"], input=block, cwd=root,
                       capture_output=True, text=True)
    ok = r.returncode == 0 and not r.stderr.strip()
    print(("ok   " if ok else "FAIL ") + f"README example {i}: {first}")
    if not ok:
        print("     " + r.stderr.strip().replace("\n", "\n     "))
        failures += 1
sys.exit(1 if failures else 0)
