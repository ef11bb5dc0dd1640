"""Kafka records into a pandas DataFrame: the orders topic of a log
directory, records per partition and minute.
    python3 pandas_orders.py [LOG_DIR] [FROM]
(tests/hosts/python_package.sh runs it on tests/fixtures/broker.)"""
import sqlite3
import sys

import pandas as pd

import kafkalog

log_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/broker"
since = sys.argv[2] if len(sys.argv) > 2 else "2023-11-14T22:13:00Z"

db = sqlite3.connect(":memory:")
kafkalog.load(db)
df = pd.read_sql_query(
    "SELECT partition, offset, kafka_time(timestamp) AS time, CAST(value AS TEXT) AS value"
    " FROM kafka_log(?) WHERE topic = 'orders' AND timestamp >= kafka_ms(?)",
    db, params=(log_dir, since))
df["time"] = pd.to_datetime(df["time"], utc=True)  # kafka_time's text: ISO-8601 UTC
print(f"{len(df)} orders from {df['time'].min().isoformat(timespec='milliseconds')}"
      f" to {df['time'].max().isoformat(timespec='milliseconds')}")
per_minute = df.groupby(["partition", df["time"].dt.floor("min")]).size()
for (partition, minute), n in per_minute.items():
    print(f"partition {partition} {minute:%H:%M} {n}")
