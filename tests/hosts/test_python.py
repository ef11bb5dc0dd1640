#!/usr/bin/env python3
"""The module in Python's sqlite3 (Debian's python3): load it, run the README's
queries, bind parameters, read BLOBs, and see a clear error for a missing
directory.  tests/hosts/test_python.py <path of kafkalog.so>"""
import os
import sqlite3
import sys

module = sys.argv[1] if len(sys.argv) > 1 else "build/kafkalog"
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
failures = 0

def check(what, got, want):
    global failures
    ok = got == want
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": got {got!r}, want {want!r}"))
    failures += not ok

db = sqlite3.connect(":memory:")
db.enable_load_extension(True)
db.load_extension(module)
db.enable_load_extension(False)

tiny = os.path.join(root, "a-tiny", "orders-0")
multi = os.path.join(root, "b-multi-segment", "orders-0")
broker = os.path.join(root, "broker")

rows = db.execute("SELECT offset, value FROM kafka_log(?) WHERE offset BETWEEN ? AND ?",
                  (multi, 100, 110)).fetchall()
check("offsets by parameter", [r[0] for r in rows], list(range(100, 111)))
check("values are bytes", type(rows[0][1]), bytes)
check("value bytes", rows[0][1][:8], b"val-100-")
key = db.execute("SELECT key FROM kafka_log(?) WHERE offset = 42", (multi,)).fetchone()[0]
check("a key as a BLOB", key, b"00000042")
check("key_type text", db.execute(
    "SELECT offset FROM kafka_log(?) WHERE key_type = 'text' AND key = ?", (multi, "00000042")).fetchone(),
    (42,))
check("count by topic in a log directory", db.execute(
    "SELECT topic, count(*) FROM kafka_log(?) WHERE topic IN ('orders', 'payments') GROUP BY 1 ORDER BY 1",
    (broker,)).fetchall(), [("orders", 25910), ("payments", 1200)])
check("read_committed", db.execute(
    "SELECT count(*) FROM kafka_log(?) WHERE topic = 'payments' AND isolation = 'read_committed'",
    (broker,)).fetchone(), (766,))
check("a timestamp window", db.execute(
    "SELECT count(*) FROM kafka_log(?) WHERE timestamp >= ? AND timestamp < ?",
    (multi, 1700000010000, 1700000020000)).fetchone(), (1000,))
check("headers are JSON text", type(db.execute(
    "SELECT headers FROM kafka_log(?) LIMIT 1", (tiny,)).fetchone()[0]), str)
try:
    db.execute("SELECT * FROM kafka_log(?)", ("/nonexistent/orders-0",)).fetchall()
    check("missing directory", "no error", "an error")
except sqlite3.OperationalError as e:
    check("missing directory: a clear error", "cannot open directory /nonexistent/orders-0" in str(e)
          and "No such file or directory" in str(e), True)
print(f"python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}: "
      f"{'all passed' if failures == 0 else str(failures) + ' failed'}")
sys.exit(1 if failures else 0)
