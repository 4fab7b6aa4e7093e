#!/usr/bin/python3
"""kubelet.py - what the kubelet does with a pod manifest, over containerd's
CRI API, for tests: no kubelet exists on this machine, so the manifests under
hooks/kubernetes/ are run by this, field by field as the kubelet maps them.

  kubelet.py GEN_DIR run-pod   SCENARIO_JSON   -> {"pod": ID, "containers": {NAME: ID}}
  kubelet.py GEN_DIR exec      SOCKET ID [--timeout S] -- CMD...   (ExecSync; stdout, exit code)
  kubelet.py GEN_DIR probe     SOCKET ID MANIFEST                  (the readinessProbe's exec)
  kubelet.py GEN_DIR status    SOCKET ID                           -> {"state", "started_at", ...}
  kubelet.py GEN_DIR stop-pod  SOCKET POD_ID GRACE_S ID...         (delete a pod: stop with grace, remove)
  kubelet.py GEN_DIR hostpath  PATH TYPE                           (the kubelet's hostPath type check)
  kubelet.py GEN_DIR render    MANIFEST KUSTOMIZATION_DIR          (the DaemonSet after the overlay's patches, JSON)

GEN_DIR holds cri_pb2*.py (grpc_tools.protoc of tests/cri/cri.proto).
SCENARIO_JSON: {"socket", "manifest" (a Pod or DaemonSet YAML), "kustomization"
(directory: configMapGenerator literals for envFrom, images, and an
overlay's base and patches), "runtimeclasses"
(YAML of RuntimeClass objects, for runtimeClassName), "node_root" (hostPath
volumes are taken below it for the type check, and in the mounts unless
"mount_root" says otherwise: "" when the containerd runs in the node's own
root, as a node's containerd does), "pod" (an existing sandbox: only its
containers are created again, "attempt" of them, as the kubelet does after a
container died), "image_tag" (a rollout to another tag of the kustomization's
images), "env" (overrides of the environment, as an
operator's values would), "name", "uid", "log_dir", "cgroup_parent"}.

Mapping (as the kubelet does it): hostPID -> pid namespace NODE for the sandbox
and the containers; hostNetwork or not -> network NODE (this machine has no
CNI); securityContext.privileged -> privileged sandbox and container;
hostPath -> Mount{host_path, propagation None/HostToContainer/Bidirectional},
after the kubelet's type check (DirectoryOrCreate creates, Directory must be a
directory: a stat that fails, e.g. ENOTCONN on a dead FUSE mount, is the
"MountVolume.SetUp failed" that keeps a pod in ContainerCreating);
env and envFrom.configMapRef; resources.limits cpu/memory -> CFS quota/period
and memory limit; command/args; image after kustomize's `images`;
runtimeClassName -> runtime handler; terminationGracePeriodSeconds -> the
StopContainer timeout."""
import json
import os
import stat
import sys
import time

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
import yaml  # noqa: E402
import cri_pb2 as pb  # noqa: E402
import cri_pb2_grpc as pbg  # noqa: E402


def stub(socket):
    return pbg.RuntimeServiceStub(grpc.insecure_channel("unix://" + socket))


def die(msg, code=2):
    print("kubelet.py: " + msg, file=sys.stderr)
    sys.exit(code)


def load_objects(path):
    return [d for d in yaml.safe_load_all(open(path)) if d]


def kustomization(d):
    """configMapGenerator literals, images and patches of the kustomization in
    d, after those of the bases it lists in resources (a directory: an
    overlay, as hooks/kubernetes-nri/; `behavior: merge` literals update the
    base's map; patches apply after the base's)."""
    k = yaml.safe_load(open(os.path.join(d, "kustomization.yaml")))
    maps, images, patches = {}, [], []
    for r in k.get("resources", []):
        if os.path.isdir(os.path.join(d, r)):
            m, i, p = kustomization(os.path.join(d, r))
            maps.update(m)
            images += i
            patches += p
    for g in k.get("configMapGenerator", []):
        lit = dict(x.split("=", 1) for x in g.get("literals", []))
        if g.get("behavior") == "merge":
            maps.setdefault(g["name"], {}).update(lit)
        else:
            maps[g["name"]] = lit
    images += k.get("images", [])
    for p in k.get("patches", []):
        patches.append(yaml.safe_load(open(os.path.join(d, p["path"])) if "path" in p else p["patch"]))
    return maps, images, patches


def merge_key(items):
    return "mountPath" if all(isinstance(i, dict) and "mountPath" in i for i in items) else "name"


def strategic_merge(base, patch):
    """A strategic merge patch as kustomize applies one to the lists these
    manifests have: maps merge, lists of maps merge by name (volumeMounts by
    mountPath; patch items first, as kustomize orders them), other lists are
    replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = strategic_merge(base[k], v) if k in base else v
        return out
    if isinstance(base, list) and isinstance(patch, list) and all(isinstance(i, dict) for i in base + patch):
        key = merge_key(base + patch)
        byk = {i.get(key): i for i in base}
        out = [strategic_merge(byk[i.get(key)], i) if i.get(key) in byk else i for i in patch]
        seen = {i.get(key) for i in patch}
        return out + [i for i in base if i.get(key) not in seen]
    return patch


def apply_patches(obj, patches):
    for p in patches:
        if p.get("kind") == obj.get("kind") and p.get("metadata", {}).get("name") == obj.get("metadata", {}).get("name"):
            if p.get("$patch") == "delete":
                return None
            obj = strategic_merge(obj, {k: v for k, v in p.items() if k not in ("apiVersion", "kind", "metadata")})
    return obj


def quantity_cpu_millis(q):
    q = str(q)
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)


def quantity_bytes(q):
    q = str(q)
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "K": 1000, "M": 1000 ** 2, "G": 1000 ** 3}
    for u, m in units.items():
        if q.endswith(u):
            return int(float(q[:-len(u)]) * m)
    return int(q)


def hostpath_check(path, typ):
    """The kubelet's hostPath type check (pkg/volume/hostpath)."""
    if typ == "DirectoryOrCreate" and not os.path.lexists(path):
        os.makedirs(path, 0o755)
    try:
        st = os.stat(path)
    except OSError as e:
        raise SystemExit("kubelet.py: MountVolume.SetUp failed: hostPath type check failed: stat %s: %s"
                         % (path, e.strerror))
    if typ in ("Directory", "DirectoryOrCreate") and not stat.S_ISDIR(st.st_mode):
        raise SystemExit("kubelet.py: MountVolume.SetUp failed: hostPath type check failed: %s is not a directory"
                         % path)
    if typ == "Socket" and not stat.S_ISSOCK(st.st_mode):
        raise SystemExit("kubelet.py: hostPath type check failed: %s is not a socket" % path)


def run_pod(sc):
    objs = load_objects(sc["manifest"])
    obj = next(o for o in objs if o.get("kind") in ("Pod", "DaemonSet"))
    maps, images, patches = kustomization(sc["kustomization"]) if sc.get("kustomization") else ({}, [], [])
    obj = apply_patches(obj, patches)
    tmpl = obj["spec"]["template"] if obj["kind"] == "DaemonSet" else obj
    spec = tmpl["spec"]
    handler = ""
    if spec.get("runtimeClassName"):
        rcs = [o for o in load_objects(sc["runtimeclasses"]) if o.get("kind") == "RuntimeClass"]
        rc = [r for r in rcs if r["metadata"]["name"] == spec["runtimeClassName"]]
        if not rc:
            die("RuntimeClass %s not found" % spec["runtimeClassName"])
        handler = rc[0]["handler"]
    host_pid = bool(spec.get("hostPID"))
    privileged = any(c.get("securityContext", {}).get("privileged") for c in spec["containers"])
    # like the kubelet: the host's, the pod's (shareProcessNamespace) or each container's own
    pid_mode = pb.NODE if host_pid else pb.POD if spec.get("shareProcessNamespace") else pb.CONTAINER
    annotations = dict(tmpl.get("metadata", {}).get("annotations") or {})
    pod_cfg = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=sc["name"], uid=sc["uid"], namespace="default"),
        log_directory=sc["log_dir"], annotations=annotations,
        linux=pb.LinuxPodSandboxConfig(
            cgroup_parent=sc.get("cgroup_parent", ""),
            security_context=pb.LinuxSandboxSecurityContext(
                privileged=privileged,
                namespace_options=pb.NamespaceOption(network=pb.NODE, pid=pid_mode))))
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    # volumes first: a failing hostPath check keeps the pod from starting at all
    for v in volumes.values():
        if "hostPath" in v:
            hostpath_check(sc["node_root"] + v["hostPath"]["path"], v["hostPath"].get("type", ""))
    rt = stub(sc["socket"])
    mount_root = sc.get("mount_root", sc["node_root"])
    if sc.get("pod"):
        pod_id = sc["pod"]
    else:
        pod_id = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=pod_cfg, runtime_handler=handler),
                                  timeout=60).pod_sandbox_id
    out = {"pod": pod_id, "containers": {}}
    prop = {None: pb.PROPAGATION_PRIVATE, "None": pb.PROPAGATION_PRIVATE,
            "HostToContainer": pb.PROPAGATION_HOST_TO_CONTAINER, "Bidirectional": pb.PROPAGATION_BIDIRECTIONAL}
    for c in spec["containers"]:
        image = c["image"]
        for im in images:
            name, _, tag = image.rpartition(":") if ":" in image.split("/")[-1] else (image, "", "")
            if name == im["name"]:
                image = im.get("newName", name) + ":" + str(sc.get("image_tag") or im.get("newTag", tag))
        env = {}
        for ef in c.get("envFrom", []):
            env.update(maps.get(ef["configMapRef"]["name"], {}))
        for e in c.get("env", []):
            env[e["name"]] = e.get("value", "")
        env.update(sc.get("env", {}))
        mounts = []
        for vm in c.get("volumeMounts", []):
            v = volumes[vm["name"]]
            if "hostPath" not in v:
                die("volume %s: only hostPath volumes are mapped" % vm["name"])
            mounts.append(pb.Mount(container_path=vm["mountPath"], host_path=mount_root + v["hostPath"]["path"],
                                   readonly=bool(vm.get("readOnly")), propagation=prop[vm.get("mountPropagation")]))
        lim = c.get("resources", {}).get("limits", {})
        res = pb.LinuxContainerResources()
        if "cpu" in lim:
            res.cpu_period = 100000
            res.cpu_quota = quantity_cpu_millis(lim["cpu"]) * 100
        if "memory" in lim:
            res.memory_limit_in_bytes = quantity_bytes(lim["memory"])
        sec = pb.LinuxContainerSecurityContext(
            privileged=bool(c.get("securityContext", {}).get("privileged")),
            namespace_options=pb.NamespaceOption(network=pb.NODE, pid=pid_mode))
        cfg = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=c["name"], attempt=int(sc.get("attempt", 0))), image=pb.ImageSpec(image=image),
            command=c.get("command", []), args=c.get("args", []),
            envs=[pb.KeyValue(key=k, value=v) for k, v in sorted(env.items())],
            mounts=mounts, log_path=c["name"] + ".log",
            linux=pb.LinuxContainerConfig(resources=res, security_context=sec))
        cid = rt.CreateContainer(pb.CreateContainerRequest(pod_sandbox_id=pod_id, config=cfg, sandbox_config=pod_cfg),
                                 timeout=60).container_id
        rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
        out["containers"][c["name"]] = cid
        out.setdefault("images", {})[c["name"]] = image
    print(json.dumps(out))


def main():
    cmd = sys.argv[2]
    a = sys.argv[3:]
    if cmd == "run-pod":
        run_pod(json.load(open(a[0])))
    elif cmd == "exec":
        timeout = 30
        if a[2] == "--timeout":
            timeout = int(a[3])
            a = a[:2] + a[4:]
        r = stub(a[0]).ExecSync(pb.ExecSyncRequest(container_id=a[1], cmd=a[3:], timeout=timeout),
                                timeout=timeout + 10)
        sys.stdout.buffer.write(r.stdout)
        sys.stderr.buffer.write(r.stderr)
        sys.exit(r.exit_code)
    elif cmd == "probe":
        obj = next(o for o in load_objects(a[2]) if o.get("kind") == "DaemonSet")
        c = obj["spec"]["template"]["spec"]["containers"][0]
        p = c["readinessProbe"]
        r = stub(a[0]).ExecSync(pb.ExecSyncRequest(container_id=a[1], cmd=p["exec"]["command"],
                                                   timeout=p.get("timeoutSeconds", 1)), timeout=60)
        sys.stdout.buffer.write(r.stdout)
        sys.exit(r.exit_code)
    elif cmd == "status":
        st = stub(a[0]).ContainerStatus(pb.ContainerStatusRequest(container_id=a[1]), timeout=30).status
        print(json.dumps({"state": pb.ContainerState.Name(st.state), "created_at": st.created_at,
                          "started_at": st.started_at, "attempt": st.metadata.attempt, "exit_code": st.exit_code, "reason": st.reason}))
    elif cmd == "stop-pod":
        rt = stub(a[0])
        for cid in a[3:]:
            rt.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=int(a[2])), timeout=int(a[2]) + 60)
        rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=a[1]), timeout=60)
        rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=a[1]), timeout=60)
    elif cmd == "hostpath":
        hostpath_check(a[0], a[1])
    elif cmd == "render":
        obj = next(o for o in load_objects(a[0]) if o.get("kind") == "DaemonSet")
        maps, images, patches = kustomization(a[1])
        print(json.dumps({"daemonset": apply_patches(obj, patches), "configmaps": maps, "images": images}))
    else:
        die("unknown command %s" % cmd)


try:
    main()
except grpc.RpcError as e:
    die("%s: %s" % (e.code().name, e.details()))
