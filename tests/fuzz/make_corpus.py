#!/usr/bin/env python3
"""Build the seed corpora of the fuzz targets from the Kafka-written fixtures.

    make_corpus.py <fixtures dir> <output dir>

Writes <output>/fuzz_batch, <output>/fuzz_index and <output>/fuzz_sql (see
the input format comment at the top of each fuzz_*.c).  Seeds are small:
single batches, short runs of batches and the index files, so the corpora
stay a few MiB and are never committed.
"""
import json
import os
import struct
import sys

SQL_SEP = b"\n--KLSEP--\n"   # fuzz_sql.c splits .log / .index / .timeindex here


def put(d, name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    fixtures, out = sys.argv[1], sys.argv[2]
    dirs = {k: os.path.join(out, k) for k in ("fuzz_batch", "fuzz_index", "fuzz_sql")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    for fx in sorted(os.listdir(fixtures)):
        exp = os.path.join(fixtures, fx, "expected.json")
        if not os.path.isfile(exp):
            continue
        part = os.path.join(fixtures, fx, "orders-0")
        with open(exp) as f:
            segs = json.load(f)["segments"]
        for si, seg in enumerate(segs[:3]):
            log = open(os.path.join(part, seg["log_file"]), "rb").read()
            stem = seg["log_file"][:-4]
            batches = seg["batches"]
            for bi, b in enumerate(batches[:6]):
                one = log[b["position"]:b["position"] + b["size"]]
                for flags in (0, 1, 3):
                    put(dirs["fuzz_batch"], f"{fx}-{si}-{bi}-{flags}", bytes([flags]) + one)
            if batches:
                end = batches[min(3, len(batches) - 1)]
                run = log[:end["position"] + end["size"]]
                put(dirs["fuzz_batch"], f"{fx}-{si}-run", b"\x01" + run)
            for kind, suffix in ((0, ".index"), (1, ".timeindex")):
                p = os.path.join(part, stem + suffix)
                if not os.path.isfile(p):
                    continue
                ix = open(p, "rb").read()[:4096]
                for t in (0, seg["base_offset"] + 5, 1700000000000):
                    hdr = bytes([kind]) + struct.pack(">qq", len(log), t)
                    put(dirs["fuzz_index"], f"{fx}-{si}{suffix}-{t}", hdr + ix)
            # SQL: the first few batches as a whole segment, with indexes
            # trimmed to entries inside them.
            if batches:
                cut = batches[min(5, len(batches) - 1)]
                n = cut["position"] + cut["size"]
                oi = open(os.path.join(part, stem + ".index"), "rb").read() if os.path.isfile(os.path.join(part, stem + ".index")) else b""
                ti = open(os.path.join(part, stem + ".timeindex"), "rb").read() if os.path.isfile(os.path.join(part, stem + ".timeindex")) else b""
                oi = b"".join(oi[i:i + 8] for i in range(0, len(oi) - 7, 8)
                              if struct.unpack(">I", oi[i + 4:i + 8])[0] < n)
                ti = ti[:24]
                put(dirs["fuzz_sql"], f"{fx}-{si}", log[:n] + SQL_SEP + oi + SQL_SEP + ti)
                put(dirs["fuzz_sql"], f"{fx}-{si}-nolog-index", log[:n])


if __name__ == "__main__":
    main()
