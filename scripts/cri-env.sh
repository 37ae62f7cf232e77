#!/usr/bin/env bash
# cri-env.sh DIR up|down|status
#
# A private containerd (with its CRI plugin) for schedperf's CRI agent and its tests, fully offline.
# Everything it writes lives under DIR, except what containerd itself always puts elsewhere: shim
# sockets in /run/containerd/s/<hash of our socket path> and cgroups /sys/fs/cgroup/*/k8s.io/<id>.
#
#   up      installs the Debian packages it needs (if missing), builds two test images offline
#           (a static pause and busybox-static), starts containerd on DIR/containerd.sock, imports
#           the images, and prints KEY=VALUE lines on stdout (everything else goes to stderr):
#             CRI_ENDPOINT=unix://DIR/containerd.sock  CRI_PID=...  CRI_SANDBOX_IMAGE=...  CRI_TEST_IMAGE=...
#           and a last line that exports them. Use it as:  eval "$(scripts/cri-env.sh /tmp/cri up)"
#           Running it again while containerd is up is a no-op that prints the same lines.
#   down    removes what `up` started and nothing else: every task and container in namespace k8s.io
#           of OUR containerd (through its API), then OUR containerd (by the PID it recorded, checked
#           against /proc/PID/cmdline), any shim still serving OUR socket (and its children), the
#           mounts below DIR and OUR bridge. Images stay in DIR/root. If OUR containerd died and
#           left tasks behind, it is started again first to remove them.
#   status  exit 0 when OUR containerd runs.
#
# Knobs (environment):
#   CRI_ENV_BRIDGE, CRI_ENV_SUBNET  the isolated CNI bridge and its subnet. The defaults are derived
#                                   from DIR, so two DIRs get two bridges and two subnets.
#   CRI_ENV_CNI=0                   no CNI config: only hostNetwork pods work.
#   CRI_ENV_SNAPSHOTTER=overlayfs|native   default: overlayfs when an overlay mount works here.
#   CRI_ENV_NO_APT=1                never call apt-get.
#
# Facts behind the settings (containerd 1.6 on Debian 12, in a VM without CAP_SYS_RESOURCE):
# restrict_oom_score_adj must be true or every sandbox fails; runc works where crun 1.8 refuses the
# cgroup v1/v2 hybrid layout; image names start with localhost/ so a missing image fails at once
# instead of reaching out to a registry.
set -euo pipefail
# runc, ip and friends live in the sbin directories, which a non-login root shell may not have.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

DIR=${1:?usage: cri-env.sh DIR up|down|status}
ACTION=${2:?usage: cri-env.sh DIR up|down|status}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
SOCK="$DIR/containerd.sock"
PIDFILE="$DIR/containerd.pid"
CONFIG="$DIR/config.toml"
CONFLIST="$DIR/cni/net.d/10-schedperf.conflist"
PAUSE_IMAGE="localhost/schedperf/pause:1.0"
TEST_IMAGE="localhost/schedperf/busybox:1.0"
DIR_HASH=$(printf '%s' "$DIR" | sha256sum | cut -c1-6)
BRIDGE=${CRI_ENV_BRIDGE:-spcri$DIR_HASH}
SUBNET=${CRI_ENV_SUBNET:-10.251.$((16#${DIR_HASH:0:2})).0/24}

say() { echo "cri-env: $*" >&2; }
die() { say "$*"; exit 1; }
ctr_ns() { ctr --address "$SOCK" -n k8s.io "$@"; }

# Prints the PID of the containerd this script started for DIR, if it still runs.
our_pid() {
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "--config $CONFIG" || return 1
  echo "$pid"
}

# Finds the containerd started with OUR config among all processes (when $! was not its PID).
find_our_pid() {
  local f pid
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    if [[ $(tr '\0' ' ' 2>/dev/null <"$f") == "containerd --config $CONFIG " ]]; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

ensure_packages() {
  local wanted=(containerd runc containernetworking-plugins busybox-static gcc libc6-dev iproute2)
  local missing=() p
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  [[ ${CRI_ENV_NO_APT:-0} == 1 ]] && die "missing packages: ${missing[*]} (and CRI_ENV_NO_APT=1)"
  say "installing ${missing[*]}"
  # Without systemd the package's service would not start anyway; policy-rc.d makes sure of it.
  local policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && policy=1
  fi
  local rc=0
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2; then
    apt-get update >&2 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2 || rc=$?
  fi
  ((policy)) && rm -f /usr/sbin/policy-rc.d
  ((rc == 0)) || die "apt-get install failed"
}

# Adds FILE to the OCI layout under its sha256 and prints the digest.
put_blob() {
  local digest
  digest=$(sha256sum "$1" | cut -d' ' -f1)
  mv -f "$1" "$LAYOUT/blobs/sha256/$digest"
  echo "$digest"
}

# Builds one single-layer image from ROOTFS and appends its descriptor to DESCRIPTORS.
add_image() { # NAME ROOTFS ENTRYPOINT_JSON CMD_JSON
  local name=$1 rootfs=$2 entrypoint=$3 cmd=$4 arch layer diff_id layer_size layer_digest cfg_size cfg_digest man_size man_digest
  arch=$(dpkg --print-architecture)
  layer="$BUILD/layer.tar"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -C "$rootfs" -cf "$layer" .
  diff_id=$(sha256sum "$layer" | cut -d' ' -f1)
  gzip -n -9 "$layer"
  layer_size=$(stat -c %s "$layer.gz")
  layer_digest=$(put_blob "$layer.gz")
  printf '{"architecture":"%s","os":"linux","config":{"Env":["PATH=/bin:/usr/bin:/sbin:/usr/sbin"],"Entrypoint":%s,"Cmd":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$arch" "$entrypoint" "$cmd" "$diff_id" >"$BUILD/config.json"
  cfg_size=$(stat -c %s "$BUILD/config.json")
  cfg_digest=$(put_blob "$BUILD/config.json")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
    "$cfg_digest" "$cfg_size" "$layer_digest" "$layer_size" >"$BUILD/manifest.json"
  man_size=$(stat -c %s "$BUILD/manifest.json")
  man_digest=$(put_blob "$BUILD/manifest.json")
  DESCRIPTORS+=("{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:$man_digest\",\"size\":$man_size,\"platform\":{\"architecture\":\"$arch\",\"os\":\"linux\"},\"annotations\":{\"io.containerd.image.name\":\"$name\"}}")
}

# Builds DIR/images.oci.tar once: the same bytes on every machine with the same packages.
build_images() {
  local out="$DIR/images.oci.tar"
  [[ -s $out ]] && return 0
  say "building the test images offline"
  BUILD="$DIR/build"
  LAYOUT="$BUILD/layout"
  rm -rf "$BUILD"
  mkdir -p "$LAYOUT/blobs/sha256" "$BUILD/pause/root" "$BUILD/busybox/bin" "$BUILD/busybox/tmp" \
    "$BUILD/busybox/etc" "$BUILD/busybox/proc" "$BUILD/busybox/sys" "$BUILD/busybox/dev"
  DESCRIPTORS=()
  # The sandbox's PID 1: waits for signals, reaps orphans, exits 0 on SIGINT or SIGTERM.
  cat >"$BUILD/pause/pause.c" <<'EOF'
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) { (void)sig; _exit(0); }
static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, 0, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {.sa_handler = on_stop};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
  sigaction(SIGINT, &stop, 0);
  sigaction(SIGTERM, &stop, 0);
  sigaction(SIGCHLD, &child, 0);
  for (;;) pause();
}
EOF
  gcc -static -Os -s -o "$BUILD/pause/root/pause" "$BUILD/pause/pause.c"
  add_image "$PAUSE_IMAGE" "$BUILD/pause/root" '["/pause"]' 'null'
  cp /bin/busybox "$BUILD/busybox/bin/busybox"
  local applet
  for applet in $(/bin/busybox --list); do
    [[ $applet == busybox ]] || ln -s busybox "$BUILD/busybox/bin/$applet"
  done
  chmod 1777 "$BUILD/busybox/tmp"
  add_image "$TEST_IMAGE" "$BUILD/busybox" 'null' '["/bin/sh"]'
  printf '{"imageLayoutVersion":"1.0.0"}' >"$LAYOUT/oci-layout"
  local joined
  joined=$(IFS=,; echo "${DESCRIPTORS[*]}")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s]}' "$joined" >"$LAYOUT/index.json"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$LAYOUT" -cf "$out.part" oci-layout index.json blobs
  mv "$out.part" "$out"
  rm -rf "$BUILD"
}

snapshotter() {
  if [[ -n ${CRI_ENV_SNAPSHOTTER:-} ]]; then echo "$CRI_ENV_SNAPSHOTTER"; return; fi
  local t="$DIR/overlay-probe"
  rm -rf "$t" && mkdir -p "$t/lower" "$t/upper" "$t/work" "$t/merged"
  if mount -t overlay overlay -o "lowerdir=$t/lower,upperdir=$t/upper,workdir=$t/work" "$t/merged" 2>/dev/null; then
    umount "$t/merged"
    echo overlayfs
  else
    echo native
  fi
  rm -rf "$t"
}

write_config() { # SNAPSHOTTER
  local runc_bin
  runc_bin=$(command -v runc) || die "runc not found"
  mkdir -p "$DIR/root" "$DIR/state" "$DIR/opt" "$DIR/cni/net.d" "$DIR/cni/ipam"
  cat >"$CONFIG" <<EOF
# Written by scripts/cri-env.sh: containerd with its CRI plugin on a private socket.
version = 2
root = "$DIR/root"
state = "$DIR/state"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  restrict_oom_score_adj = true
  tolerate_missing_hugetlb_controller = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "$1"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$runc_bin"
        Root = "$DIR/state/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$DIR/cni/net.d"
    max_conf_num = 1
EOF
  if [[ ${CRI_ENV_CNI:-1} == 1 ]]; then
    # An isolated bridge: no gateway, no masquerade, no uplink, so pod traffic never leaves the VM.
    cat >"$CONFLIST" <<EOF
{"cniVersion": "0.4.0", "name": "schedperf", "plugins": [{"type": "bridge", "bridge": "$BRIDGE",
 "isGateway": false, "ipMasq": false, "hairpinMode": false,
 "ipam": {"type": "host-local", "dataDir": "$DIR/cni/ipam", "ranges": [[{"subnet": "$SUBNET"}]]}}]}
EOF
  else
    rm -f "$CONFLIST"
  fi
}

start_containerd() {
  local pid
  if pid=$(our_pid); then
    cmp -s "$CONFIG" "$CONFIG.started" || say "warning: $CONFIG changed since containerd started: run down, then up"
    return 0
  fi
  rm -f "$SOCK" "$SOCK.ttrpc"
  cp "$CONFIG" "$CONFIG.started"
  # In its own session, so it outlives this shell. setsid execs containerd in place, so $! is
  # containerd's PID, unless the background job leads its process group (a shell with job control
  # on): then setsid forks first and $! is gone at once. So the PID is confirmed below by the
  # command line, and looked up by it if need be.
  setsid containerd --config "$CONFIG" >>"$DIR/containerd.log" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  # A fresh, busy machine can take a while for containerd's first start: wait up to 60 s.
  local _
  for _ in $(seq 1200); do
    if [[ -S $SOCK ]] && ctr --address "$SOCK" version >/dev/null 2>&1; then
      say "containerd pid $(cat "$PIDFILE") on $SOCK (log: $DIR/containerd.log)"
      return 0
    fi
    if ! our_pid >/dev/null; then
      find_our_pid >"$PIDFILE.new" && mv "$PIDFILE.new" "$PIDFILE" || rm -f "$PIDFILE.new"
    fi
    sleep 0.05
  done
  tail -n 20 "$DIR/containerd.log" >&2
  die "containerd did not come up within 60 s (pid file: $(cat "$PIDFILE" 2>/dev/null || echo none); log: $DIR/containerd.log)"
}

import_images() { # SNAPSHOTTER
  ctr_ns images import --snapshotter "$1" "$DIR/images.oci.tar" >&2
  local names
  names=$(ctr_ns images ls -q)
  grep -qxF "$PAUSE_IMAGE" <<<"$names" && grep -qxF "$TEST_IMAGE" <<<"$names" || die "image import failed"
}

up() {
  [[ $(id -u) == 0 ]] || die "must run as root"
  ensure_packages
  build_images
  local snap
  snap=$(snapshotter)
  write_config "$snap"
  start_containerd
  import_images "$snap"
  echo "CRI_ENDPOINT=unix://$SOCK"
  echo "CRI_PID=$(cat "$PIDFILE")"
  echo "CRI_SANDBOX_IMAGE=$PAUSE_IMAGE"
  echo "CRI_TEST_IMAGE=$TEST_IMAGE"
  echo "export CRI_ENDPOINT CRI_PID CRI_SANDBOX_IMAGE CRI_TEST_IMAGE"
}

# Whether containerd (dead or alive) left tasks for namespace k8s.io in DIR/state: their shims
# and processes outlive it.
tasks_left() {
  compgen -G "$DIR/state/io.containerd.runtime.v2.task/k8s.io/*" >/dev/null
}

# PIDs of the processes whose parent is $1.
children_of() {
  local f
  for f in /proc/[0-9]*/stat; do
    # Field 4 of stat is the parent PID; the command name (field 2) may hold spaces, so cut after ')'.
    [[ $(sed 's/.*) [A-Za-z] \([0-9]*\).*/\1/' "$f" 2>/dev/null) == "$1" ]] || continue
    f=${f#/proc/}
    echo "${f%/stat}"
  done
}

# Kills the shims OUR containerd started (their command line names our socket) and whatever they
# still run. A shim outlives a killed containerd, and one whose task was being created when
# containerd died is not found again when containerd restarts: it would run forever, reparented
# to PID 1. Children go first (a shim is their subreaper; killed first, they would reparent too).
kill_our_shims() {
  local f pid shims=() child
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    if tr '\0' ' ' 2>/dev/null <"$f" | grep -q -- "^[^ ]*containerd-shim[^ ]* .*-address $SOCK "; then
      shims+=("$pid")
    fi
  done
  ((${#shims[@]})) || return 0
  say "killing ${#shims[@]} shim(s) of $SOCK left running: ${shims[*]}"
  for pid in "${shims[@]}"; do
    for child in $(children_of "$pid"); do kill -KILL "$child" 2>/dev/null || true; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  for _ in $(seq 50); do
    local alive=0
    for pid in "${shims[@]}"; do [[ -d /proc/$pid ]] && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
}

down() {
  local pid id
  if ! our_pid >/dev/null && [[ -f $CONFIG ]] && tasks_left; then
    # containerd died with tasks running: start it again so it reattaches to their shims and we can
    # remove them through its API.
    say "containerd for $DIR is not running but left tasks; starting it to remove them"
    start_containerd
  fi
  if pid=$(our_pid); then
    for id in $(ctr_ns tasks ls -q 2>/dev/null); do ctr_ns tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    for _ in $(seq 20); do [[ -z $(ctr_ns tasks ls -q 2>/dev/null | grep -v '^$' || true) ]] && break; sleep 0.1; done
    for id in $(ctr_ns tasks ls -q 2>/dev/null); do ctr_ns tasks delete -f "$id" >/dev/null 2>&1 || true; done
    for id in $(ctr_ns containers ls -q 2>/dev/null); do ctr_ns containers delete "$id" >/dev/null 2>&1 || true; done
    say "stopping containerd pid $pid"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
    if [[ -d /proc/$pid ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
  else
    say "containerd for $DIR is not running"
  fi
  rm -f "$PIDFILE" "$CONFIG.started"
  kill_our_shims
  # Mounts below DIR (rootfs overlays, /dev/shm, netns), deepest first.
  awk -v d="$DIR/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
  local bridge
  bridge=$(sed -n 's/.*"bridge": "\([^"]*\)".*/\1/p' "$CONFLIST" 2>/dev/null || true)
  if [[ -n $bridge ]] && ip link show "$bridge" >/dev/null 2>&1; then ip link delete "$bridge" || true; fi
  # Runtime state and IP leases die with the daemon (killing tasks through ctr skips CNI DEL).
  if awk -v d="$DIR/" 'index($2, d) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
    say "warning: mounts remain below $DIR; state kept"
  else
    rm -rf --one-file-system "$DIR/state" "$DIR/cni/ipam"
  fi
}

status() {
  local pid
  if pid=$(our_pid); then
    echo "containerd running: pid $pid, endpoint unix://$SOCK"
  else
    echo "containerd not running for $DIR"
    return 1
  fi
}

case $ACTION in
  up) up ;;
  down) down ;;
  status) status ;;
  *) die "unknown action '$ACTION' (up, down or status)" ;;
esac
