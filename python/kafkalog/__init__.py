"""kafkalog: Apache Kafka partition and log directories as SQLite tables.

    import sqlite3, kafkalog
    db = sqlite3.connect(":memory:")
    kafkalog.load(db)
    db.execute("SELECT count(*) FROM kafka_log('/var/lib/kafka/orders-0')")
"""
import os

__all__ = ["load", "loadable_path"]

_here = os.path.dirname(os.path.abspath(__file__))


def loadable_path():
    """The path of the loadable module, without its .so suffix (the form
    sqlite3's load_extension and the sqlite3 shell's .load take): the one
    this package ships, else the one the Debian package installs beside
    its dist-packages (/usr/lib/kafkalog.so), else $KAFKALOG_MODULE."""
    env = os.environ.get("KAFKALOG_MODULE")
    candidates = ([env] if env else []) + [
        os.path.join(_here, "kafkalog.so"),
        os.path.join(_here, "..", "..", "..", "kafkalog.so"),  # /usr/lib/python3/dist-packages/..
    ]
    for c in candidates:
        if os.path.isfile(c):
            return os.path.splitext(os.path.realpath(c))[0]
    raise FileNotFoundError("kafkalog.so is not installed beside %s (tried %s)" % (_here, ", ".join(candidates)))


def load(conn):
    """Load the module into a sqlite3.Connection (the standard library's,
    or any with enable_load_extension and load_extension).  Extension
    loading is switched on for the call only."""
    conn.enable_load_extension(True)
    try:
        conn.load_extension(loadable_path())
    finally:
        conn.enable_load_extension(False)
