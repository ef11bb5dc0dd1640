#!/usr/bin/python3
"""Decode Confluent-framed Avro values with Debian's python3-avro (DatumReader), for the tests of
what kafkalog's INSERT encodes: an independent reader of its bytes.

stdin, one item a line:
    schema <JSON>   a schema; later ones may use the named types of earlier ones (references)
                    until a value: a schema after a value starts a new set of names
    value <hex>     magic byte 0, a 4-byte id, a datum of the last schema given
stdout, a line per value: "<id> <the datum as JSON>" (decimals, uuids and dates as text, bytes as
hex, floats as Python's repr (NaN and Infinity bare), timestamps as ISO 8601).
"""
import datetime
import decimal
import io
import json
import struct
import sys
import uuid

import avro.io
import avro.schema


def plain(x):
    if isinstance(x, decimal.Decimal):
        return str(x)
    if isinstance(x, (bytes, bytearray)):
        return x.hex()
    if isinstance(x, (datetime.datetime, datetime.date, datetime.time)):
        return x.isoformat()
    if isinstance(x, uuid.UUID):
        return str(x)
    raise TypeError(repr(x))


def main():
    names = avro.schema.Names()
    schema = None
    after_value = False
    for line in sys.stdin:
        kind, _, rest = line.rstrip("\n").partition(" ")
        if kind == "schema":
            if after_value:
                names, after_value = avro.schema.Names(), False
            schema = avro.schema.make_avsc_object(json.loads(rest), names)
        elif kind == "value":
            b = bytes.fromhex(rest)
            if b[0] != 0:
                raise SystemExit("magic byte %d" % b[0])
            sid = struct.unpack(">i", b[1:5])[0]
            datum = avro.io.DatumReader(schema).read(avro.io.BinaryDecoder(io.BytesIO(b[5:])))
            print(sid, json.dumps(datum, default=plain, separators=(",", ":")))
            after_value = True


if __name__ == "__main__":
    main()
