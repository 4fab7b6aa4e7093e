#!/usr/bin/python3
"""oci-image.py LAYER_TAR OUT_TAR REF [ENTRYPOINT...] - an OCI image layout
tarball with one uncompressed layer, for `ctr images import` (offline)."""
import hashlib
import io
import json
import sys
import tarfile

layer_path, out, ref = sys.argv[1:4]
entry = sys.argv[4:] or ["/bin/sh"]
layer = open(layer_path, "rb").read()


def blob(data):
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


ld, _ = blob(layer)
config = json.dumps({
    "architecture": "amd64", "os": "linux",
    "config": {"Entrypoint": entry, "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
    "rootfs": {"type": "layers", "diff_ids": [ld]},
}).encode()
cd, _ = blob(config)
manifest = json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": len(config)},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": ld, "size": len(layer)}],
}).encode()
md, _ = blob(manifest)
index = json.dumps({
    "schemaVersion": 2,
    "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md,
                   "size": len(manifest), "annotations": {"org.opencontainers.image.ref.name": ref}}],
}).encode()
with tarfile.open(out, "w") as t:
    def add(name, data):
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    add("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
    add("index.json", index)
    for d, data in ((ld, layer), (cd, config), (md, manifest)):
        add("blobs/sha256/" + d.split(":")[1], data)
