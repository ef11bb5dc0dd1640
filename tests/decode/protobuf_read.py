#!/usr/bin/python3
"""Read Protobuf values with classes made from protoc's descriptors by Debian's python3-protobuf, for
the tests of what kafkalog's INSERT encodes: an independent reader of its bytes.

stdin, one item a line:
    proto <import name> <the file's text as a JSON string>   a .proto file, compiled with the others
                                     by protoc (confluent/meta.proto, confluent/type/decimal.proto and
                                     google/protobuf/* need not be given)
    value <message full name> <hex>  magic byte 0, a 4-byte id, the message-index array, the message
    pair <message full name> <hex> <hex>   two payloads (message-index array, then the message): the
                                     first may hold what the reader skips, the second may not
    json <message full name> <hex> <JSON text>   a payload (as for pair) and a JSON text that
                                     protobuf's own JSON mapping reads (json_format.Parse)
stdout: per value "<id> <indexes> <the message as JSON>"; per pair and per json "same", or
"differ <json> <json>"; per json whose text protobuf's mapping refuses, "refused <why>".
The JSON follows kafkalog's rules as tests/decode/protobuf_json.py renders them (every field,
defaults filled in, a oneof's member set only, bytes as hex, enums by name, maps as objects with
their keys sorted (Python's map order is not the wire's), confluent.type.Decimal as its number),
floats as Python's repr; a message index that does not name the message, or bytes the reader does
not know (unknown fields, a proto2 enum's unknown number), print "error ..." instead.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

sys.dont_write_bytecode = True  # nothing left in the tree by the import below
from protobuf_json import DECIMAL, META, json_text, to_json  # noqa: E402


def varint(b, i):
    r, s = 0, 0
    while True:
        r |= (b[i] & 0x7f) << s
        s += 7
        i += 1
        if not b[i - 1] & 0x80:
            return r, i


def indexes(b):
    """The message-index array at the start of b: the path and where the message starts."""
    u, i = varint(b, 0)
    count = (u >> 1) ^ -(u & 1)
    if count == 0:
        return [0], i
    path = []
    for _ in range(count):
        u, i = varint(b, i)
        path.append((u >> 1) ^ -(u & 1))
    return path, i


def path_of(d):
    path = []
    while d is not None:
        up = d.containing_type
        sibs = up.nested_types if up is not None else list(d.file.message_types_by_name.values())
        sibs = [c for c in sibs if not c.GetOptions().map_entry]
        path.insert(0, sibs.index(d))
        d = up
    return path


class Reader:
    def __init__(self):
        self.tmp = tempfile.mkdtemp()
        self.files = []
        self.pool = None
        for name, t in (('confluent/meta.proto', META), ('confluent/type/decimal.proto', DECIMAL)):
            self.write(name, t)

    def write(self, name, t):
        path = os.path.join(self.tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(t)

    def message(self, name, payload, strict=True):
        if self.pool is None:
            out = os.path.join(self.tmp, 'set.pb')
            subprocess.run(['protoc', '-I', self.tmp, '-I', '/usr/include', '--include_imports',
                            '--descriptor_set_out=' + out] + self.files, check=True)
            fds = descriptor_pb2.FileDescriptorSet()
            with open(out, 'rb') as f:
                fds.ParseFromString(f.read())
            self.pool = descriptor_pool.DescriptorPool()
            for fp in fds.file:
                self.pool.Add(fp)
        d = self.pool.FindMessageTypeByName(name)
        path, i = indexes(payload)
        if path != path_of(d):
            return None, 'error message index %s, %s is %s' % (path, name, path_of(d))
        m = message_factory.MessageFactory(self.pool).GetPrototype(d)()
        m.ParseFromString(payload[i:])
        whole = len(m.SerializeToString())
        m.DiscardUnknownFields()
        if strict and len(m.SerializeToString()) != whole:
            return None, 'error bytes the reader does not know: %s' % payload[i:].hex()
        t = json_text(m, sort_maps=True, ensure_ascii=False)
        return m, '%s %s' % (','.join(map(str, path)), t)


def main():
    r = Reader()
    for line in sys.stdin:
        kind, _, rest = line.rstrip('\n').partition(' ')
        if kind == 'proto':
            name, _, t = rest.partition(' ')
            r.write(name, json.loads(t))
            r.files.append(name)
        elif kind == 'value':
            name, _, h = rest.partition(' ')
            b = bytes.fromhex(h)
            if b[0] != 0:
                raise SystemExit('magic byte %d' % b[0])
            m, out = r.message(name, b[5:])
            print(out if m is None else '%d %s' % (struct.unpack('>i', b[1:5])[0], out))
        elif kind == 'pair':
            name, a, b = rest.split(' ')
            ma, ta = r.message(name, bytes.fromhex(a), strict=False)
            mb, tb = r.message(name, bytes.fromhex(b))
            same = (ma is not None and mb is not None and
                    to_json(ma, sort_maps=True) == to_json(mb, sort_maps=True))
            print('same' if same else 'differ %s %s' % (ta, tb))
        elif kind == 'json':
            name, h, t = rest.split(' ', 2)
            m, out = r.message(name, bytes.fromhex(h))
            if m is None:
                print(out)
                continue
            j = type(m)()
            try:
                json_format.Parse(t, j)
            except json_format.ParseError as e:
                print('refused %s' % str(e).replace('\n', ' '))
                continue
            same = to_json(m, sort_maps=True) == to_json(j, sort_maps=True)
            print('same' if same else 'differ %s %s' % (out, json_text(j, sort_maps=True)))
    shutil.rmtree(r.tmp)


if __name__ == '__main__':
    main()
