#!/usr/bin/python3
"""Decoding speed: sum(json_extract(value, '$.amount')) over N Avro order records (8 fields: long,
string, double, enum, nullable string, array of records, map, boolean) in a kafka_log table with
value_type='confluent', against the same records as JSON text in a native SQLite table.  The Avro
values are encoded by python3-avro; the log is written by a kafka_log table in mode='create'.

    /usr/bin/python3 tests/bench/avro_bench.py build/kafkalog [N, default 200000]

Runs the queries interleaved, RUNS rounds (default 7, env KL_BENCH_RUNS), each in a fresh sqlite3
shell, and prints the median CPU time of each (user + sys of the shell, which includes its start: a
shared machine's load does not count) and beside it the median wall-clock time (which the load
does count, and work on other cores does not), the ratio of the medians both ways (Avro speed /
native speed, the aim being 0.7 or more), the decode rate (values/s of the decoding alone: the decoding query less the
reading one) and the floor a query of the decoded column has: the native JSON query's own json_extract
(the native query less a native query that reads the text without parsing it).  KL_BENCH_KEEP=1
keeps the data (its directory is printed); KL_BENCH_DIR=<that directory> measures it again.
"""
import io
import json
import os
import random
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import avro.io
import avro.schema

SCHEMA = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "customer", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "status", "type": {"type": "enum", "name": "S", "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "note", "type": ["null", "string"]},
    {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [
        {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
    {"name": "tags", "type": {"type": "map", "values": "string"}},
    {"name": "gift", "type": "boolean"}]}

def load(work, db, ext, n):
    """The records, as Avro values in orders-0 and as JSON text in native.db."""
    rnd = random.Random(7)
    schema = avro.schema.parse(json.dumps(SCHEMA))
    writer = avro.io.DatumWriter(schema)
    sql = open(os.path.join(work, "load.sql"), "w")
    sq = os.path.join(work, "_schemas-0")
    key = json.dumps({"keytype": "SCHEMA", "subject": "orders-value", "version": 1, "magic": 1})
    val = json.dumps({"subject": "orders-value", "version": 1, "id": 1,
                      "schema": json.dumps(SCHEMA), "deleted": False})
    sql.write("CREATE VIRTUAL TABLE s USING kafka_log('%s', mode='create');\n" % sq)
    sql.write("INSERT INTO s(key, value) VALUES ('%s', '%s');\n" % (key, val.replace("'", "''")))
    sql.write("CREATE VIRTUAL TABLE o USING kafka_log('%s/orders-0', mode='create');\n" % work)
    sql.write("CREATE TABLE native(value TEXT);\nBEGIN;\n")
    for i in range(n):
        d = {"id": i, "customer": "customer-%d" % rnd.randrange(1000),
             "amount": round(rnd.uniform(1, 500), 2), "status": rnd.choice(["NEW", "PAID", "SHIPPED"]),
             "note": None if rnd.random() < 0.7 else "leave at door",
             "items": [{"sku": "sku-%d" % rnd.randrange(100), "qty": rnd.randrange(1, 5)}
                       for _ in range(rnd.randrange(1, 4))],
             "tags": {"channel": rnd.choice(["web", "app"])}, "gift": rnd.random() < 0.1}
        b = io.BytesIO()
        writer.write(d, avro.io.BinaryEncoder(b))
        v = b"\x00" + struct.pack(">i", 1) + b.getvalue()
        sql.write("INSERT INTO o(value) VALUES (x'%s');\n" % v.hex())
        sql.write("INSERT INTO native VALUES ('%s');\n" % json.dumps(d, separators=(",", ":")))
    sql.write("COMMIT;\n")
    sql.close()
    subprocess.run(["sqlite3", "-cmd", ".load " + ext, db], stdin=open(os.path.join(work, "load.sql")),
                   check=True)


def main():
    ext = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/kafkalog")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    reuse = os.environ.get("KL_BENCH_DIR")  # a directory kept by KL_BENCH_KEEP: no new data
    work = reuse or tempfile.mkdtemp(prefix="kl-avro-bench-")
    db = os.path.join(work, "native.db")
    if not reuse:
        load(work, db, ext, n)
    queries = {
        "avro": "SELECT sum(json_extract(value, '$.amount')) FROM kafka_log('%s/orders-0')"
                " WHERE value_type = 'confluent';" % work,
        "native": "SELECT sum(json_extract(value, '$.amount')) FROM native;",
        "decode": "SELECT count(value) FROM kafka_log('%s/orders-0')"
                  " WHERE value_type = 'confluent';" % work,
        "read only": "SELECT count(value) FROM kafka_log('%s/orders-0');" % work,
        "native read": "SELECT count(value) FROM native;",
    }
    runs = int(os.environ.get("KL_BENCH_RUNS", "7"))
    times = {name: [] for name in queries}
    walls = {name: [] for name in queries}
    out = {}
    for _ in range(runs):
        for name, q in queries.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            r = subprocess.run(["sqlite3", "-cmd", ".load " + ext, db], input=q + "\n", text=True,
                               capture_output=True, check=True)
            walls[name].append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            out[name] = r.stdout.strip()
    med = {name: statistics.median(t) for name, t in times.items()}
    wmed = {name: statistics.median(t) for name, t in walls.items()}
    for name in queries:
        print("%-11s %-22s median of %d: %.3f s CPU  (min %.3f, max %.3f); %.3f s wall"
              % (name, out[name], runs, med[name], min(times[name]), max(times[name]),
                 wmed[name]))
    decode = med["decode"] - med["read only"]
    extract = med["native"] - med["native read"]
    print("records: %d; Avro decode+extract %.0f values/s; native JSON %.0f values/s; "
          "ratio (Avro speed / native speed) %.2f by CPU time, %.2f by wall-clock time"
          % (n, n / med["avro"], n / med["native"], med["native"] / med["avro"],
             wmed["native"] / wmed["avro"]))
    print("decoding alone %.3f s, %.0f values/s; reading alone %.3f s; json_extract on the native "
          "table %.3f s (the floor of the Avro query: native read + this + decoding = %.3f s)"
          % (decode, n / decode if decode > 0 else float("inf"), med["read only"], extract,
             med["native read"] + extract + decode))
    if reuse:
        pass
    elif os.environ.get("KL_BENCH_KEEP"):
        print("kept:", work)
    else:
        shutil.rmtree(work)

if __name__ == "__main__":
    main()
