#!/bin/bash
# 48-pyxis.sh - resview-hook --enroot in a Slurm job started by pyxis 0.24 and
# enroot 4.1. Neither comes from Debian, so this test does exactly what they
# do, as read in their sources (NVIDIA/pyxis: pyxis_slurmstepd.c, enroot.c;
# NVIDIA/enroot: enroot.in, src/runtime.sh, src/common.sh, bin/common.h,
# bin/enroot-nsenter.c, bin/enroot-switchroot.c, conf/):
#  1. pyxis (enroot_set_env) clears its environment but PATH, imports the job's
#     (S_JOB_ENV) except PATH, LD_LIBRARY_PATH, LD_PRELOAD, SLURM_PROCID,
#     SLURM_LOCALID, SLURM_TASK_PID, PMIX_RANK, PMI_FD and enroot's path
#     settings, sets SLURM_JOB_UID/GID, PYXIS_RUNTIME_PATH and PYXIS_VERSION,
#     writes a --conf script whose environ() echoes the --container-env
#     variables the job has, and runs `enroot start --conf CONF IMAGE sh -c
#     'kill -STOP $$ ; exit 0'` as the job's user (setgroups, setregid, setreuid).
#  2. enroot exports XDG_* and its ENROOT_* settings and enters a new user
#     namespace that maps the user to itself with all capabilities ambient,
#     and a new mount namespace (enroot-nsenter --user --mount).
#  3. There (runtime::_start): a tmpfs (mode 700) on ENROOT_RUNTIME_PATH, the
#     rootfs bound on itself; ENROOT_PID=$$, ENROOT_ROOTFS, ENROOT_ENVIRON,
#     ENROOT_MOUNTS exported; ENROOT_ENVIRON = the image's /etc/environment,
#     environ.d/*.env, environ(), each through envsubst, then envfmt; the
#     system fstab (/proc and /sys rbound); hooks.d/*.sh run in order; envfmt.
#  4. enroot-switchroot starts the container with exactly ENROOT_ENVIRON's
#     variables (clearenv, then each valid line; the last of a name wins).
#  5. pyxis copies the container's environment over the job's for the task
#     (spank_setenv with overwrite, except the --container-env names), after
#     unsetting LANG, LANGUAGE and LC_ALL.
# The job's cgroups are laid out as Slurm's task/cgroup (v1) makes them: the
# task at cpu:/, cpuset:.../job/step_0, memory:.../job/step_0/task_0.
# Assertions are on the task's final environment and the container's mounts.
source "$(dirname "$0")/../lib/common.sh"

JOB_UID=$((61000 + $$ % 4000))
chmod 0755 "$T"   # the job's user reads the configuration below
export LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
NV=$(lxcfs_views "$LXCFS_DIR")   # the views a container gets: LXCFS 5 nine, 6 and 7 add /proc/pressure/*
t_cleanup "lxcfs_stop $LXCFS_DIR"
mkdir -p "$T/userlog" && chown "$JOB_UID:$JOB_UID" "$T/userlog"
rv_config "$T/config.json" "$(jq -n --arg l "$T/userlog/resview.log" '{log: {file: $l}}')"
chmod 0644 "$T/config.json"

# the job's cgroups (task/cgroup): a cpuset of one CPU at the step, 512 MiB at
# the job; the task at task_0 (on v1 Slurm's per-controller paths: cpuset at
# the step, memory at task_0, cpu at the root)
JOB=resview-test/$(basename "$T")/job_4242
cg_limit "$JOB" "" 536870912
cg_limit "$JOB/step_0" "" ""
cg_cpuset "$JOB/step_0" 0
cg_limit "$JOB/step_0/task_0" "" ""
if cg_is_v2; then JOB_JOIN=$(cg_join_code "$JOB/step_0/task_0")
else JOB_JOIN="echo \$\$ >/sys/fs/cgroup/cpuset/$JOB/step_0/cgroup.procs && echo \$\$ >/sys/fs/cgroup/memory/$JOB/step_0/task_0/cgroup.procs"; fi

# enroot's installation: the site's hooks.d with resview's hook, environ.d as shipped
SYSCONF=$T/etc-enroot
mkdir -p "$SYSCONF/hooks.d" "$SYSCONF/environ.d"
printf '#!/bin/sh\nRESVIEW_CONFIG=%s RESVIEW_HOOK=%s exec %s\n' "$T/config.json" "$HOOK" \
    "$TOP/hooks/enroot/50-resview.sh" >"$SYSCONF/hooks.d/50-resview.sh"
printf 'TERM=${TERM}\n' >"$SYSCONF/environ.d/10-terminal.env"
chmod 0755 "$SYSCONF/hooks.d/50-resview.sh"

# runtime::_start (step 3) and enroot-switchroot's environment (step 4), run
# by bash in the new namespaces; $1: the rootfs, $2: the --conf script, $3: where
# to write the container's environment. The "container" then stays stopped.
cat >"$T/enroot-start.sh" <<'EOF'
set -eu
rootfs=$1 conf=$2 out=$3
envsubst() { [ -f "$1" ] && awk '{ line=$0; while (match(line, /\${[A-Za-z_][A-Za-z0-9_]*}/)) {
    output = substr(line, 1, RSTART - 1); envvar = substr(line, RSTART, RLENGTH); gsub(/\$|{|}/, "", envvar)
    printf "%s%s", output, ENVIRON[envvar]; line = substr(line, RSTART + RLENGTH) } print line }' "$1" || :; }
envfmt() { sed -i -e 's/^[[:space:]]\+//' -e '/^#\|^$/d' -e '/^[[:alpha:]_][[:alnum:]_]*=/!d' -e '/^ENROOT_/d' \
    -e 's/^\([[:alpha:]_][[:alnum:]_]*\)=[\"\x27]\(.*\)[\"\x27][[:space:]]*$/\1=\2/' "$1"; }
mount -t tmpfs -o mode=700 tmpfs "$ENROOT_RUNTIME_PATH"
mount --bind -o nosuid,nodev "$rootfs" "$rootfs"
export ENROOT_PID=$$ ENROOT_ROOTFS=$rootfs ENROOT_ENVIRON=$ENROOT_RUNTIME_PATH/environment
export ENROOT_MOUNTS=$ENROOT_RUNTIME_PATH/fstab
: >"$ENROOT_MOUNTS"
source "$conf"
: >"$ENROOT_ENVIRON"
envsubst "$rootfs/etc/environment" >>"$ENROOT_ENVIRON"
for f in "$ENROOT_SYSCONF_PATH"/environ.d/*.env; do envsubst "$f" >>"$ENROOT_ENVIRON"; done
if declare -F environ >/dev/null; then environ >>"$ENROOT_ENVIRON"; fi
envfmt "$ENROOT_ENVIRON"
mount --rbind /proc "$rootfs/proc" && mount --make-rslave "$rootfs/proc"
mount --rbind /sys "$rootfs/sys" && mount --make-rslave "$rootfs/sys"
for f in "$ENROOT_SYSCONF_PATH"/hooks.d/*.sh; do
    [ -x "$f" ] && { "$f" || { echo "$f exited with return code $?" >&2; exit 1; }; }
done
envfmt "$ENROOT_ENVIRON"
awk '/^[A-Za-z_][A-Za-z0-9_]*=/ { n = substr($0, 1, index($0, "=") - 1); v[n] = $0 } END { for (n in v) print v[n] }' \
    "$ENROOT_ENVIRON" >"$out.tmp"
mv "$out.tmp" "$out"
exec sleep 600
EOF

# pyxis_task NAME CONTAINER_ENV_NAMES JOB_ENV...: the task's final environment in
# $T/NAME/task.env (sorted), the container's in $T/NAME/container.env, its
# process CONTAINER_PID; the image's /etc/environment is $T/NAME/rootfs/etc/environment.
pyxis_task() {
    local name=$1 names=$2 d=$T/$1 e n v keep
    shift 2
    local job=("$@") imported=()
    for e in "${job[@]}"; do
        case $e in PATH=*|LD_LIBRARY_PATH=*|LD_PRELOAD=*|SLURM_PROCID=*|SLURM_LOCALID=*|SLURM_TASK_PID=*|\
            PMIX_RANK=*|PMI_FD=*|ENROOT_LIBRARY_PATH=*|ENROOT_SYSCONF_PATH=*|ENROOT_RUNTIME_PATH=*|\
            ENROOT_CACHE_PATH=*|ENROOT_DATA_PATH=*|ENROOT_TEMP_PATH=*|ENROOT_ZSTD_OPTIONS=*|\
            ENROOT_TRANSFER_RETRIES=*|ENROOT_CONNECT_TIMEOUT=*|ENROOT_MAX_CONNECTIONS=*|ENROOT_ALLOW_HTTP=*) ;;
        *) imported+=("$e") ;;
        esac
    done
    : >"$d/conf"
    if [ -n "$names" ]; then
        echo 'environ() {'
        for n in $names; do printf '\t[ -n "${%s-}" ] && echo "%s=${%s}" || :\n' "$n" "$n" "$n"; done
        echo '}'
    fi >"$d/conf"
    mkdir -p "$d/home/.local/share/enroot" "$d/run/enroot"
    chown -R "$JOB_UID:$JOB_UID" "$d"
    rm -f "$d/container.env"
    # step 1 and 2: pyxis's environment, the job's user, enroot's exports and namespaces,
    # in the job's cpuset and memory cgroups (cpu stays at the root)
    sh -c "$JOB_JOIN"' && exec "$@"' sh \
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "${imported[@]}" SLURM_JOB_UID=$JOB_UID SLURM_JOB_GID=$JOB_UID \
        PYXIS_RUNTIME_PATH=/run/pyxis PYXIS_VERSION=0.24.0 \
        XDG_DATA_HOME=$d/home/.local/share XDG_CONFIG_HOME=$d/home/.config XDG_CACHE_HOME=$d/home/.cache \
        XDG_RUNTIME_DIR=$d/run ENROOT_LIBRARY_PATH=/usr/lib/enroot ENROOT_SYSCONF_PATH=$SYSCONF \
        ENROOT_RUNTIME_PATH=$d/run/enroot ENROOT_CONFIG_PATH=$d/home/.config/enroot \
        ENROOT_CACHE_PATH=$d/home/.cache/enroot ENROOT_DATA_PATH=$d/home/.local/share/enroot ENROOT_TEMP_PATH=/tmp \
        ENROOT_GZIP_PROGRAM=gzip ENROOT_ZSTD_OPTIONS=-1 ENROOT_SQUASH_OPTIONS="-comp lzo -noD -exit-on-error" \
        ENROOT_MAX_PROCESSORS=$(nproc) ENROOT_MAX_CONNECTIONS=10 ENROOT_CONNECT_TIMEOUT=30 \
        ENROOT_TRANSFER_TIMEOUT=0 ENROOT_TRANSFER_RETRIES=0 ENROOT_LOGIN_SHELL=true ENROOT_ALLOW_SUPERUSER=false \
        ENROOT_ALLOW_HTTP=false ENROOT_ROOTFS_WRITABLE=false ENROOT_NATIVE_OVERLAYFS=true ENROOT_REMAP_ROOT=false \
        ENROOT_BUNDLE_ALL=false ENROOT_BUNDLE_CHECKSUM=false ENROOT_FORCE_OVERRIDE=false ENROOT_VERSION=4.1.0 \
        setpriv --reuid="$JOB_UID" --regid="$JOB_UID" --clear-groups \
        unshare --user --map-user="$JOB_UID" --map-group="$JOB_UID" --keep-caps --mount --propagation slave \
        bash "$T/enroot-start.sh" "$d/rootfs" "$d/conf" "$d/container.env" >"$d/enroot.out" 2>&1 &
    CONTAINER_PID=$!
    t_cleanup "kill $CONTAINER_PID"
    for _ in $(seq 300); do [ -e "$d/container.env" ] || ! kill -0 $CONTAINER_PID 2>/dev/null && break; sleep 0.05; done
    [ -e "$d/container.env" ] || { echo "# enroot start failed:"; sed 's/^/#   /' "$d/enroot.out"; return 1; }
    # step 5: the container's environment over the job's, but not over --container-env names
    declare -A task=()
    for e in "${job[@]}"; do task[${e%%=*}]=${e#*=}; done
    for n in LANG LANGUAGE LC_ALL; do [[ " $names " == *" $n "* ]] || unset "task[$n]"; done
    while IFS= read -r e; do
        n=${e%%=*} v=${e#*=} keep=
        [[ " $names " == *" $n "* && -n "${task[$n]+set}" ]] && keep=1
        [ -n "$keep" ] || task[$n]=$v
    done <"$d/container.env"
    for n in "${!task[@]}"; do printf '%s=%s\n' "$n" "${task[$n]}"; done | sort >"$d/task.env"
}
# views mounted in the container (its mount namespace, over the rootfs)
views() { grep -c " $T/$1/rootfs/[^ ]* .* - fuse.lxcfs " "/proc/$CONTAINER_PID/mountinfo"; }
image() { mkdir -p "$T/$1"; rv_rootfs "$T/$1/rootfs"; printf '%b' "$2" >"$T/$1/rootfs/etc/environment"; }

SLURM_JOB=(SLURM_JOB_ID=4242 SLURM_JOBID=4242 SLURM_STEP_ID=0 SLURM_CPUS_ON_NODE=2 SLURM_CPUS_PER_TASK=2
    SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_TASK_PID=77 SLURM_NTASKS=1 HOME=/nonexistent USER=job
    PATH=/usr/bin:/bin TERM=dumb LANG=C.UTF-8)

# A Slurm job whose user set GOMAXPROCS: nothing the job has is replaced.
image job 'PATH=/usr/local/bin:/usr/bin:/bin\n'
pyxis_task job "" "${SLURM_JOB[@]}" GOMAXPROCS=3
out=$(cat "$T/job/task.env")
t_contains "pyxis: the hook ran" "$(cat "$T/job/enroot.out"; cat "$T/userlog/resview.log")" "enroot: "
t_contains "pyxis: the user's GOMAXPROCS stays" "$out" "GOMAXPROCS=3"
t_contains "pyxis: Slurm's SLURM_CPUS_PER_TASK stays" "$out" "SLURM_CPUS_PER_TASK=2"
t_contains "pyxis: Slurm's SLURM_CPUS_ON_NODE stays" "$out" "SLURM_CPUS_ON_NODE=2"
t_eq "pyxis: no SLURM_* added in a Slurm job (no SLURM_MEM_PER_NODE)" "$(grep -c '^SLURM_MEM_PER_NODE=' <<<"$out")" "0"
t_contains "pyxis: OMP_NUM_THREADS from the job's cpuset (1 CPU at cpuset:.../step_0)" "$out" "OMP_NUM_THREADS=1"
t_eq "pyxis: LXCFS views in the container ($NV)" "$(views job)" "$NV"
t_eq "pyxis: the job's user ran the hook (uid map of the container)" "$(awk '{print $1 $2 $3}' "/proc/$CONTAINER_PID/uid_map")" "${JOB_UID}${JOB_UID}1"
kill $CONTAINER_PID

# The job opts out (RESVIEW_ENV=0, RESVIEW_LXCFS=0 set before srun): honoured.
image optout ''
pyxis_task optout "" "${SLURM_JOB[@]}" RESVIEW_ENV=0 RESVIEW_LXCFS=0
out=$(cat "$T/optout/task.env")
t_eq "pyxis: RESVIEW_ENV=0 from the job: nothing added" "$(cat "$T/optout/container.env" | grep -c -E '^(OMP_NUM_THREADS|GOMAXPROCS)=')" "0"
t_eq "pyxis: RESVIEW_LXCFS=0 from the job: no views" "$(views optout)" "0"
kill $CONTAINER_PID

# --container-env: the image sets GOMAXPROCS=8, the job 3. pyxis gives the task
# the image's value, unless --container-env=GOMAXPROCS; resview adds none either way.
image cenv 'GOMAXPROCS=8\n'
pyxis_task cenv "" "${SLURM_JOB[@]}" GOMAXPROCS=3
out=$(cat "$T/cenv/task.env")
t_contains "pyxis: without --container-env the image's GOMAXPROCS wins (pyxis)" "$out" "GOMAXPROCS=8"
kill $CONTAINER_PID
pyxis_task cenv "GOMAXPROCS" "${SLURM_JOB[@]}" GOMAXPROCS=3
out=$(cat "$T/cenv/task.env")
t_contains "pyxis: with --container-env=GOMAXPROCS the job's wins" "$out" "GOMAXPROCS=3"
t_eq "pyxis: resview added no GOMAXPROCS line" "$(grep -c '^GOMAXPROCS=' "$T/cenv/container.env")" "1"
kill $CONTAINER_PID

# enroot alone (no Slurm job): the Slurm-style variables from the same cgroups
image plain ''
pyxis_task plain "" HOME=/nonexistent PATH=/usr/bin:/bin
out=$(cat "$T/plain/task.env")
t_contains "enroot outside Slurm: SLURM_CPUS_ON_NODE=1" "$(cat "$T/plain/container.env")" "SLURM_CPUS_ON_NODE=1"
t_contains "enroot outside Slurm: SLURM_MEM_PER_NODE=512 (memory:.../task_0's job)" "$(cat "$T/plain/container.env")" "SLURM_MEM_PER_NODE=512"
kill $CONTAINER_PID
