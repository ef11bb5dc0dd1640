"""kafkalog's JSON of a Protobuf message, rendered from what python3-protobuf parsed: the reference
the decoder's vectors are made with (tests/fixtures/protobuf/make_vectors.py) and the encoder's bytes
are read back by (tests/decode/protobuf_read.py), so that both hold the README's table in one place.

The rules: every field, defaults filled in, a oneof's member set only (proto3 optional fields are
plain fields), bytes as hex, enums by name (an unknown number as the number), float as the shortest
text that reads back as the same float, NaN and the infinities as strings, maps as objects with keys
as strings, an absent message as null, confluent.type.Decimal as its exact number.

Also Confluent's importable files, which protoc needs and the decoder has built in.
"""
import json
import math
import re
import struct

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FieldDescriptor as F

META = '''syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
message Meta { string doc = 1; map<string, string> params = 2; repeated string tags = 3; }
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
'''
DECIMAL = '''syntax = "proto3";
package confluent.type;
message Decimal { bytes value = 1; uint32 precision = 2; int32 scale = 3; }
'''
# A Decimal is rendered as this prefix and its number, a string that json_text makes a bare number.
DEC = '\x00decimal:'


def shortest_float(v):
    for p in range(1, 10):
        s = '%.*g' % (p, v)
        try:
            if struct.unpack('<f', struct.pack('<f', float(s)))[0] == v:
                return float(s)
        except OverflowError:  # rounded past the largest float
            pass
    return v


def scalar(fd, v, sort_maps=False):
    if fd.type == F.TYPE_ENUM:
        e = fd.enum_type.values_by_number.get(v)
        return e.name if e else v
    if fd.type == F.TYPE_BYTES:
        return v.hex()
    if fd.type in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        if math.isnan(v):
            return 'NaN'
        if math.isinf(v):
            return 'Infinity' if v > 0 else '-Infinity'
        return shortest_float(v) if fd.type == F.TYPE_FLOAT else v
    if fd.type in (F.TYPE_MESSAGE, F.TYPE_GROUP):
        return to_json(v, sort_maps)
    return v


def map_key(fd, k):
    if fd.type == F.TYPE_BOOL:
        return 'true' if k else 'false'
    return str(k)


def synthetic(msg_desc):
    """The names of the proto3 optional fields (each alone in a synthetic oneof)."""
    dp = descriptor_pb2.DescriptorProto()
    msg_desc.CopyToProto(dp)
    return {f.name for f in dp.field if f.proto3_optional}


def decimal_text(m):
    """confluent.type.Decimal as its exact number (DEC and the digits)."""
    u = int.from_bytes(m.value, 'big', signed=True)
    digits = str(abs(u))
    if m.scale < 0:
        digits += '0' * -m.scale if u else ''
    elif m.scale > 0:
        digits = digits.rjust(m.scale + 1, '0')
        digits = digits[:-m.scale] + '.' + digits[-m.scale:]
    return DEC + ('-' if u < 0 else '') + digits


def to_json(m, sort_maps=False):
    """m as a dict in kafkalog's rules; a map's entries in the order python3-protobuf gives them,
    or sorted by key (sort_maps: that order is not the wire's, so two readings compare)."""
    d = m.DESCRIPTOR
    if d.full_name == 'confluent.type.Decimal':
        return decimal_text(m)
    syn = synthetic(d)
    out = {}
    for fd in d.fields:
        o = fd.containing_oneof
        if o is not None and fd.name not in syn and m.WhichOneof(o.name) != fd.name:
            continue
        v = getattr(m, fd.name)
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            kf, vf = fd.message_type.fields_by_name['key'], fd.message_type.fields_by_name['value']
            out[fd.name] = {map_key(kf, k): scalar(vf, v[k], sort_maps)
                            for k in (sorted(v) if sort_maps else v)}
        elif fd.label == F.LABEL_REPEATED:
            out[fd.name] = [scalar(fd, x, sort_maps) for x in v]
        elif fd.message_type is not None:
            out[fd.name] = to_json(v, sort_maps) if m.HasField(fd.name) else None
        else:
            out[fd.name] = scalar(fd, v, sort_maps)
    return out


def json_text(m, sort_maps=False, ensure_ascii=True):
    """The JSON text of to_json(m), compact, Decimals as bare numbers."""
    t = json.dumps(to_json(m, sort_maps), separators=(',', ':'), ensure_ascii=ensure_ascii)
    return re.sub(r'"\\u0000decimal:([-0-9.]+)"', r'\1', t)
