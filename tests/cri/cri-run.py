#!/usr/bin/python3
"""cri-run.py GENERATED_DIR SCENARIO_JSON - run one pod through a CRI runtime
(containerd's CRI API over gRPC), as the kubelet would: RunPodSandbox with a
runtime handler, CreateContainer and StartContainer for each container, wait
for them to exit, print {name: {"exit_code": N, "log": TEXT}} as JSON, then
stop and remove everything.

Scenario: {"socket": PATH, "handler": "resview",
           "pod": {"name", "uid", "namespace", "log_dir", "cgroup_parent", "annotations",
                   "pid_per_container"},
           "containers": [{"name", "image", "command", "annotations",
                           "cpu_period", "cpu_quota", "memory",
                           "update": {"cpu_period", "cpu_quota", "memory", "exec": CMD, "wait": PATH}}]}
"update": once the container runs, UpdateContainerResources (an in-place
resize, as the kubelet asks it), then ExecSync CMD ("exec_log" in the result),
then StopContainer; with "wait", PATH.started is made first and the exec
waits (up to 300 s) for PATH to exist (the test does something meanwhile).
The pod uses the host network (no CNI needed). "pid_per_container": true gives
each container a PID namespace of its own, as the kubelet asks for a pod
without shareProcessNamespace (LXCFS reads a container's limits through the
init of its PID namespace); left out, the containers share the sandbox's."""
import json
import os
import sys
import time

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
import cri_pb2 as pb  # noqa: E402
import cri_pb2_grpc as pbg  # noqa: E402

sc = json.load(open(sys.argv[2]))
chan = grpc.insecure_channel("unix://" + sc["socket"])
rt = pbg.RuntimeServiceStub(chan)
p = sc["pod"]
pid_mode = pb.CONTAINER if p.get("pid_per_container") else pb.POD
pod_cfg = pb.PodSandboxConfig(
    metadata=pb.PodSandboxMetadata(name=p["name"], uid=p["uid"], namespace=p.get("namespace", "default")),
    log_directory=p["log_dir"],
    annotations=p.get("annotations", {}),
    linux=pb.LinuxPodSandboxConfig(
        cgroup_parent=p.get("cgroup_parent", ""),
        security_context=pb.LinuxSandboxSecurityContext(
            namespace_options=pb.NamespaceOption(network=pb.NODE, pid=pid_mode))))
pod_id = None
result = {}
try:
    rt.Version(pb.VersionRequest(version="v1"), timeout=30)
    pod_id = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=pod_cfg, runtime_handler=sc["handler"]),
                              timeout=120).pod_sandbox_id
    for c in sc["containers"]:
        res = pb.LinuxContainerResources(cpu_period=c.get("cpu_period", 0), cpu_quota=c.get("cpu_quota", 0),
                                         memory_limit_in_bytes=c.get("memory", 0))
        cfg = pb.ContainerConfig(metadata=pb.ContainerMetadata(name=c["name"]), image=pb.ImageSpec(image=c["image"]),
                                 command=c["command"], annotations=c.get("annotations", {}),
                                 log_path=c["name"] + ".log", linux=pb.LinuxContainerConfig(resources=res))
        if p.get("pid_per_container"):
            cfg.linux.security_context.namespace_options.CopyFrom(pb.NamespaceOption(network=pb.NODE, pid=pid_mode))
        cid = rt.CreateContainer(pb.CreateContainerRequest(pod_sandbox_id=pod_id, config=cfg,
                                                           sandbox_config=pod_cfg), timeout=120).container_id
        rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=120)
        exec_log = None
        if "update" in c:
            u = c["update"]
            if "wait" in u:
                open(u["wait"] + ".started", "w").close()
                for _ in range(3000):
                    if os.path.exists(u["wait"]):
                        break
                    time.sleep(0.1)
            rt.UpdateContainerResources(pb.UpdateContainerResourcesRequest(
                container_id=cid, linux=pb.LinuxContainerResources(
                    cpu_period=u.get("cpu_period", 0), cpu_quota=u.get("cpu_quota", 0),
                    memory_limit_in_bytes=u.get("memory", 0))), timeout=60)
            r = rt.ExecSync(pb.ExecSyncRequest(container_id=cid, cmd=u["exec"], timeout=30), timeout=40)
            exec_log = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
            rt.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=0), timeout=60)
        st = None
        for _ in range(600):  # readiness poll, up to 60 s
            st = rt.ContainerStatus(pb.ContainerStatusRequest(container_id=cid), timeout=30).status
            if st.state == pb.CONTAINER_EXITED:
                break
            time.sleep(0.1)
        log = ""
        path = os.path.join(p["log_dir"], c["name"] + ".log")
        if os.path.exists(path):
            # CRI log lines: TIMESTAMP STREAM TAG MESSAGE
            log = "\n".join(line.split(" ", 3)[3] if line.count(" ") >= 3 else line
                            for line in open(path).read().splitlines())
        result[c["name"]] = {"exit_code": st.exit_code, "state": st.state, "log": log, "id": cid}
        if exec_log is not None:
            result[c["name"]]["exec_log"] = exec_log
        rt.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=60)
finally:
    if pod_id:
        try:
            rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
            rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
        except grpc.RpcError as e:
            print("cleanup: %s" % e.details(), file=sys.stderr)
print(json.dumps(result))
