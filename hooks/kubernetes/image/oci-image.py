#!/usr/bin/python3
"""oci-image.py [--gzip] [--cmd ARG]... [--label K=V]... SOURCE OUT_TAR REF [ENTRYPOINT...]

An image archive with one layer, built offline and reproducibly: SOURCE is a
layer tar, or a directory that becomes one (sorted, owner root, mtime 0).
OUT_TAR holds both formats an engine may ask for:
  - an OCI image layout (oci-layout, index.json naming REF in
    org.opencontainers.image.ref.name, blobs/sha256/...): `ctr images
    import`, `skopeo copy oci-archive:OUT_TAR ...`, docker 25+;
  - docker-archive's manifest.json beside it (Config, RepoTags, Layers
    pointing at the same blobs): `docker load` of docker 20.10."""
import argparse
import gzip
import hashlib
import io
import json
import os
import tarfile

ap = argparse.ArgumentParser()
ap.add_argument("--gzip", action="store_true", help="compress the layer (tar+gzip)")
ap.add_argument("--cmd", action="append", default=[], help="Cmd (repeat for each argument)")
ap.add_argument("--label", action="append", default=[], help="K=V image label")
ap.add_argument("source")
ap.add_argument("out")
ap.add_argument("ref")
ap.add_argument("entrypoint", nargs="*")
a = ap.parse_args()


def dir_to_tar(root):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        def norm(ti):
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = "root"
            ti.mtime = 0
            ti.pax_headers = {}
            return ti
        for dirpath, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(dirs + files):
                path = os.path.join(dirpath, name)
                t.add(path, arcname=os.path.relpath(path, root), recursive=False, filter=norm)
    return buf.getvalue()


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


layer = dir_to_tar(a.source) if os.path.isdir(a.source) else open(a.source, "rb").read()
diff_id = digest(layer)
if a.gzip:
    layer = gzip.compress(layer, compresslevel=9, mtime=0)
layer_type = "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if a.gzip else "")
cfg = {"Entrypoint": a.entrypoint or ["/bin/sh"],
       "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
if a.cmd:
    cfg["Cmd"] = a.cmd
if a.label:
    cfg["Labels"] = dict(kv.split("=", 1) for kv in a.label)
config = json.dumps({
    "architecture": "amd64", "os": "linux", "config": cfg,
    "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    "history": [{"created_by": "resview oci-image.py"}],
}, sort_keys=True).encode()
manifest = json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest(config),
               "size": len(config)},
    "layers": [{"mediaType": layer_type, "digest": digest(layer), "size": len(layer)}],
}, sort_keys=True).encode()
index = json.dumps({
    "schemaVersion": 2,
    "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest(manifest),
                   "size": len(manifest), "annotations": {"org.opencontainers.image.ref.name": a.ref}}],
}, sort_keys=True).encode()


def blob_path(data):
    return "blobs/sha256/" + digest(data).split(":")[1]


docker = json.dumps([{"Config": blob_path(config), "RepoTags": [a.ref],
                      "Layers": [blob_path(layer)]}]).encode()
with tarfile.open(a.out + ".tmp", "w", format=tarfile.PAX_FORMAT) as t:
    def add(name, data, mode=0o644):
        ti = tarfile.TarInfo(name)
        ti.size, ti.mode, ti.mtime = len(data), mode, 0
        t.addfile(ti, io.BytesIO(data))
    for d in ("blobs", "blobs/sha256"):
        ti = tarfile.TarInfo(d)
        ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 0
        t.addfile(ti)
    add("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
    add("index.json", index)
    add("manifest.json", docker)
    for data in (layer, config, manifest):
        add(blob_path(data), data)
os.rename(a.out + ".tmp", a.out)
