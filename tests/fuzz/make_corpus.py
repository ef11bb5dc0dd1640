#!/usr/bin/env python3
"""Build the seed corpora of the fuzz targets from the Kafka-written fixtures.

    make_corpus.py <fixtures dir> <output dir>

Writes <output>/fuzz_batch, <output>/fuzz_index, <output>/fuzz_sql,
<output>/fuzz_offsets (__consumer_offsets records of each version), <output>/fuzz_avro
(the fixture registry's Avro schemas with payloads), <output>/fuzz_protobuf (the Protobuf
test vectors' payloads and schemas) and
<output>/fuzz_txnlog (the __transaction_state records of txn-broker; see
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


def offsets_seeds(d):
    """Offset commit keys (types 0, 1), a group metadata key (2), a newer
    type (4), with values of versions 0 to 4 (fuzz_offsets.c's framing)."""
    def string(b):
        return struct.pack(">h", len(b)) + b
    key = lambda t: struct.pack(">h", t) + string(b"group") + string(b"topic") + struct.pack(">i", 3)
    values = [
        struct.pack(">hq", 0, 42) + string(b"meta") + struct.pack(">q", 1700000000000),
        struct.pack(">hq", 1, 42) + string(b"") + struct.pack(">qq", 1700000000000, 1700086400000),
        struct.pack(">hq", 2, 42) + struct.pack(">h", -1) + struct.pack(">q", 1700000000000),
        struct.pack(">hqi", 3, 42, 7) + string(b"m") + struct.pack(">q", 1700000000000),
        struct.pack(">hqi", 4, 42, 7) + bytes([5]) + b"meta" + struct.pack(">q", 1700000000000)
        + bytes([1, 0, 2, 0xab, 0xcd]),
    ]
    for t in (0, 1):
        for i, v in enumerate(values):
            k = key(t)
            put(d, f"commit-{t}-v{i}", bytes([0, len(k)]) + k + v)
        put(d, f"commit-{t}-tombstone", bytes([1, len(key(t))]) + key(t))
    g = struct.pack(">h", 2) + string(b"group")
    put(d, "group-metadata", bytes([0, len(g)]) + g + struct.pack(">h", 3) + string(b"consumer"))
    o = struct.pack(">h", 4) + string(b"group")
    put(d, "consumer-group", bytes([0, len(o)]) + o + b"\x00\x00\xff")


def txnlog_seeds(fixtures, d):
    """The key and value of every __transaction_state record of the txn-broker
    fixture, as its generator encodes them (fuzz_txnlog.c's framing)."""
    sys.dont_write_bytecode = True  # nothing written into the fixtures
    sys.path.insert(0, fixtures)
    import make_transaction_state as m
    k = m.txn_key("orders-app")
    seeds = {
        "v0-ongoing": m.txn_value(0, 1000, 3, 60000, m.ONGOING, [("payments", [0, 1])], 5, 4),
        "v0-null-parts": m.txn_value(0, 1000, 3, 60000, m.EMPTY, None, 5, -1),
        "v1-ongoing": m.txn_value(1, 2000, 1, 60000, m.ONGOING, [("ledger", [0])], 5, 4),
        "v1-tags": m.txn_value(1, 3001, 0, 1, m.COMPLETE_ABORT, [], 5, 4,
                               [(0, struct.pack(">q", 3000)), (1, struct.pack(">q", 3002)),
                                (2, struct.pack(">h", 2)), (9, b"\x01")]),
        "v1-fence": m.txn_value(1, 3000, 0, 1, m.PREPARE_EPOCH_FENCE, [("a", [1, 2]), ("b", [])], 5, 4),
    }
    for name, v in seeds.items():
        put(d, "txn-" + name, bytes([0, len(k)]) + k + v)
    put(d, "txn-tombstone", bytes([1, len(k)]) + k)
    k1 = m.txn_key("future", 1)
    put(d, "txn-key-v1", bytes([0, len(k1)]) + k1 + b"\x00\x01")


def uvarint_at(b, i):
    shift = v = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def zigzag_at(b, i):
    v, i = uvarint_at(b, i)
    return (v >> 1) ^ -(v & 1), i


def metadata_seeds(fixtures, d):
    """The values of every record of the metadata log fixture (uncompressed v2 batches), one
    seed each and one seed of them all, as fuzz_metadata takes them (a length byte each)."""
    log = open(os.path.join(fixtures, "kraft-full", "__cluster_metadata-0",
                            "00000000000000000000.log"), "rb").read()
    values, pos = [], 0
    while pos + 12 <= len(log):
        size = 12 + struct.unpack(">i", log[pos + 8:pos + 12])[0]
        b = log[pos:pos + size]
        attrs = struct.unpack(">h", b[21:23])[0]
        i, n = 61, struct.unpack(">i", b[57:61])[0]
        for _ in range(n if not attrs & 0x20 else 0):
            length, i = zigzag_at(b, i)
            end = i + length
            i += 1
            _, i = zigzag_at(b, i)
            _, i = zigzag_at(b, i)
            klen, i = zigzag_at(b, i)
            i += max(klen, 0)
            vlen, i = zigzag_at(b, i)
            values.append(b[i:i + vlen])
            i = end
        pos += size
    for k, v in enumerate(values):
        put(d, f"record-{k}", bytes([len(v)]) + v)
    put(d, "all", b"".join(bytes([len(v)]) + v for v in values if len(v) < 256))


def avro_seeds(d, fixtures):
    """fuzz_avro: the fixture registry's schemas, each with a few payloads
    (fuzz_avro.c's framing: flags, 2-byte schema length, schema, payload)."""
    with open(os.path.join(fixtures, "registry-schemas.json")) as f:
        schemas = [s["schema"].encode() for s in json.load(f)]
    schemas += [b'"long"', b'["null","string"]', b'{"type":"map","values":"double"}',
                b'{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}']
    payloads = [b"", b"\x02", b"\x04\x02\x04\x00", b"\x02\x06abc\x00" + b"\x00" * 8]
    for i, s in enumerate(schemas):
        for j, p in enumerate(payloads):
            put(d, f"avro-{i}-{j}", bytes([j & 3]) + struct.pack(">H", len(s)) + s + p)


PROTO_FIXED = ["types.proto", "legacy.proto", "order.proto", "confluent.proto",
               "types.b64", "order.b64"]   # fuzz_protobuf.c's fixed schemas, in order


def protobuf_seeds(d, fixtures):
    """Each payload of tests/fixtures/protobuf/vectors.txt with its fixed
    schema (byte 0 even), and with its schema text inline (byte 0 odd)."""
    pdir = os.path.join(fixtures, "protobuf")
    schema = None
    with open(os.path.join(pdir, "vectors.txt")) as f:
        for i, line in enumerate(f):
            if line.startswith("schema "):
                schema = line.split()[1]
            elif line.startswith("payload "):
                payload = bytes.fromhex(line.split()[1] if len(line.split()) > 1 else "")
                put(d, "fixed-%d" % i, bytes([0, PROTO_FIXED.index(schema)]) + payload)
                text = open(os.path.join(pdir, schema), "rb").read()
                put(d, "text-%d" % i, b"\x01" + text + b"\x00" + payload)


PROTO_MESSAGES = [("types", "0"), ("types", "1"), ("types", "1,0"), ("types", "2"),
                  ("types", "3"), ("types", "4"), ("types", "4,0,0"), ("legacy", "0"),
                  ("order", "0"), ("confluent", "0")]  # fuzz_protobuf_encode.c's, in order


def protobuf_encode_seeds(d, fixtures):
    """The expected JSON of each vector of tests/fixtures/protobuf/vectors.txt,
    after byte 0 naming its message (by its schema and message index)."""
    schema = payload = None
    with open(os.path.join(fixtures, "protobuf", "vectors.txt")) as f:
        for i, line in enumerate(f):
            kind, _, rest = line.rstrip("\n").partition(" ")
            if kind == "schema":
                schema = rest.split(".")[0]
            elif kind == "payload":
                payload = bytes.fromhex(rest)
            elif kind == "expect" and payload:
                n = payload[0] >> 1
                path = ",".join(str(b >> 1) for b in payload[1:1 + n]) if n else "0"
                if (schema, path) in PROTO_MESSAGES:
                    put(d, "json-%d" % i, bytes([PROTO_MESSAGES.index((schema, path))]) +
                        rest.encode())


def main():
    fixtures, out = sys.argv[1], sys.argv[2]
    dirs = {k: os.path.join(out, k)
            for k in ("fuzz_batch", "fuzz_index", "fuzz_sql", "fuzz_offsets", "fuzz_txnlog",
                      "fuzz_metadata", "fuzz_avro", "fuzz_protobuf", "fuzz_protobuf_encode")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    offsets_seeds(dirs["fuzz_offsets"])
    txnlog_seeds(fixtures, dirs["fuzz_txnlog"])
    metadata_seeds(fixtures, dirs["fuzz_metadata"])
    avro_seeds(dirs["fuzz_avro"], fixtures)
    protobuf_seeds(dirs["fuzz_protobuf"], fixtures)
    protobuf_encode_seeds(dirs["fuzz_protobuf_encode"], fixtures)
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

    state_seeds(fixtures, dirs["fuzz_sql"])


def state_seeds(fixtures, d):
    """fuzz_sql seeds for Kafka's own state: txn-broker's partitions, each
    with the producer snapshot of orders-0 as the seventh section (empty
    index, checkpoint and commit sections: no such files), and its
    __transaction_state partitions, which fuzz_sql also reads as such; and
    the KRaft metadata logs."""
    root = os.path.join(fixtures, "txn-broker")
    snap = open(os.path.join(root, "orders-0", "%020d.snapshot" % 2), "rb").read()
    for part in sorted(os.listdir(root)):
        p = os.path.join(root, part)
        if not os.path.isdir(p):
            continue
        for name in sorted(os.listdir(p)):
            if name.endswith(".log"):
                log = open(os.path.join(p, name), "rb").read()
                put(d, f"state-{part}", log + SQL_SEP * 6 + snap)
    # The metadata tables over a KRaft metadata partition's records.
    for fx in ("kraft", "kraft-full"):
        p = os.path.join(fixtures, fx, "__cluster_metadata-0")
        for name in sorted(os.listdir(p)):
            if name.endswith(".log"):
                put(d, f"state-{fx}", open(os.path.join(p, name), "rb").read())


if __name__ == "__main__":
    main()
