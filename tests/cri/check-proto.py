#!/usr/bin/python3
"""check-proto.py GENERATED_DIR BINARY - compare tests/cri/cri.proto (compiled
into GENERATED_DIR/cri_pb2.py) with the CRI runtime.v1 api.proto descriptor
compiled into BINARY (containerd embeds it gzip-compressed): every message,
field (name, number, type, label), enum value and method we declare must
exist with the same definition there."""
import re
import sys
import zlib

sys.path.insert(0, sys.argv[1])
from google.protobuf import descriptor_pb2  # noqa: E402
import cri_pb2  # noqa: E402


def real_descriptor(binary):
    data = open(binary, "rb").read()
    for m in re.finditer(rb"\x1f\x8b\x08\x00\x00\x00\x00\x00[\x00\x02]\xff", data):
        try:
            raw = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[m.start():m.start() + (4 << 20)])
            fd = descriptor_pb2.FileDescriptorProto()
            fd.ParseFromString(raw)
        except Exception:
            continue
        if fd.package == "runtime.v1" and fd.name.endswith("api.proto"):
            return fd
    sys.exit("no runtime.v1 api.proto descriptor in %s" % binary)


real = real_descriptor(sys.argv[2])
ours = descriptor_pb2.FileDescriptorProto()
cri_pb2.DESCRIPTOR.CopyToProto(ours)
problems = []


def index(msgs, prefix=""):
    out = {}
    for m in msgs:
        out[prefix + m.name] = m
        out.update(index(m.nested_type, prefix + m.name + "."))
    return out


rm, om = index(real.message_type), index(ours.message_type)
checked = 0
for name, m in om.items():
    if name not in rm:
        problems.append("message %s not in the real API" % name)
        continue
    rf = {f.name: f for f in rm[name].field}
    for f in m.field:
        r = rf.get(f.name)
        checked += 1
        if not r:
            problems.append("%s.%s not in the real API" % (name, f.name))
        elif (r.number, r.type, r.label, r.type_name) != (f.number, f.type, f.label, f.type_name):
            problems.append("%s.%s: ours %s, real %s" % (name, f.name,
                            (f.number, f.type, f.label, f.type_name), (r.number, r.type, r.label, r.type_name)))
re_ = {e.name: {v.name: v.number for v in e.value} for e in real.enum_type}
for e in ours.enum_type:
    for v in e.value:
        if re_.get(e.name, {}).get(v.name) != v.number:
            problems.append("enum %s.%s = %d differs" % (e.name, v.name, v.number))
rs = {s.name: {mm.name: (mm.input_type, mm.output_type) for mm in s.method} for s in real.service}
for s in ours.service:
    for mm in s.method:
        if rs.get(s.name, {}).get(mm.name) != (mm.input_type, mm.output_type):
            problems.append("rpc %s.%s differs" % (s.name, mm.name))
for p in problems:
    print(p)
print("checked %d fields of %d messages: %d problems" % (checked, len(om), len(problems)))
sys.exit(1 if problems else 0)
