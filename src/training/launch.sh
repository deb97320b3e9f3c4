# cdk8s-gpu training launch wrapper: gives a StatefulSet rank the behaviour of a job.
#
# Run as: sh -c "<this script>" cdk8s-gpu-launch <command> [args...]
# POSIX sh only (dash, busybox ash, bash); external tools: date, mkdir, mv, sleep.
#
# - Finished once. A StatefulSet only allows restartPolicy Always, so when the command exits 0
#   the kubelet would start it again and retrain over the checkpoints. On exit 0 this wrapper
#   writes a completion marker for the run (on the checkpoint volume when there is one), writes
#   the container's termination message and exits 0. Every later start of the container, or of a
#   new pod of the same rank, finds the marker: the first start in a pod exits 0 once more, so
#   that `lastState.terminated.reason` reads Completed on every pod; after that it idles
#   (sleeping, and exiting 0 at once on SIGTERM) instead of training again.
# - Failures stay visible. A non-zero exit (torchrun gives up after --max-restarts gang
#   restarts) is passed on unchanged, with a termination message, so the pod shows Error,
#   restarts and CrashLoopBackOff; the kubelet retries with its back-off.
# - Signals. The wrapper is PID 1: it forwards SIGTERM/SIGINT to the command as SIGTERM (a
#   background job of a non-interactive shell ignores SIGINT) and exits with the command's
#   status. A run stopped by a signal is never marked complete, whatever it exits with.
#
# Environment (set by GpuTrainingStatefulSet):
#   CDK8S_GPU_RUN_ID         the run whose completion is recorded (runId prop)
#   CDK8S_GPU_STATE_DIR      where completion markers live (checkpoint volume, or pod scratch)
#   CDK8S_GPU_POD_STATE_DIR  pod-lifetime scratch (emptyDir): attempt count, "announced" flags
#   NODE_RANK                this pod's ordinal (falls back to the suffix of HOSTNAME)
#   PET_RDZV_ID              torchrun's rendezvous id, logged (it carries the spec hash)
#   CDK8S_GPU_TERMINATION_LOG  the termination message file (default /dev/termination-log)

PROG=cdk8s-gpu-launch

log() {
  printf '%s %s: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null)" "$PROG" "$*" >&2
}

fail() {
  log "$*"
  termination "$*"
  exit 2
}

termination() {
  printf '%s\n' "$*" > "${CDK8S_GPU_TERMINATION_LOG:-/dev/termination-log}" 2>/dev/null || true
}

for tool in date mkdir mv sleep; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    printf '%s: the image has no "%s", which this wrapper needs (with sh)\n' "$PROG" "$tool" >&2
    termination "$PROG: the image has no $tool"
    exit 127
  fi
done

[ "$#" -gt 0 ] || fail "no command to run"
run_id=${CDK8S_GPU_RUN_ID:-}
state_dir=${CDK8S_GPU_STATE_DIR:-}
pod_dir=${CDK8S_GPU_POD_STATE_DIR:-}
[ -n "$run_id" ] && [ -n "$state_dir" ] && [ -n "$pod_dir" ] \
  || fail "CDK8S_GPU_RUN_ID, CDK8S_GPU_STATE_DIR and CDK8S_GPU_POD_STATE_DIR must be set"
case $run_id in
  */* | .*) fail "CDK8S_GPU_RUN_ID must not contain '/' or start with '.' (got $run_id)" ;;
esac

rank=${NODE_RANK:-}
case $rank in '' | *[!0-9]*) rank=${HOSTNAME##*-} ;; esac
case $rank in '' | *[!0-9]*) fail "cannot tell this pod's rank from NODE_RANK or HOSTNAME" ;; esac

run_dir=$state_dir/runs/$run_id
done_marker=$run_dir/rank-$rank.done
announced=$pod_dir/$run_id.announced
attempts_file=$pod_dir/$run_id.attempts

mkdir -p "$pod_dir" || fail "cannot create $pod_dir"

announce() {
  finished=
  [ -f "$done_marker" ] && read -r finished < "$done_marker"
  msg="run $run_id completed on rank $rank ($finished)"
  termination "$msg"
  log "$msg; this rank will not train again"
}

idle() {
  log "run $run_id already completed on rank $rank: idling instead of training again (delete the StatefulSet to release the GPUs; a new runId starts a new run)"
  sleeper=
  trap 'if [ -n "$sleeper" ]; then kill "$sleeper" 2>/dev/null; fi; exit 0' TERM INT
  while :; do
    sleep 3600 &
    sleeper=$!
    wait "$sleeper"
  done
}

if [ -f "$done_marker" ]; then
  if [ -f "$announced" ]; then
    idle
  fi
  : > "$announced" || fail "cannot write $announced"
  announce
  exit 0
fi

mkdir -p "$run_dir" || fail "cannot create $run_dir (is the checkpoint volume writable by this user?)"

attempt=0
if [ -f "$attempts_file" ]; then
  read -r attempt < "$attempts_file" || attempt=0
  case $attempt in '' | *[!0-9]*) attempt=0 ;; esac
fi
attempt=$((attempt + 1))
printf '%s\n' "$attempt" > "$attempts_file"

log "run $run_id, rank $rank, start $attempt in this pod, rendezvous ${PET_RDZV_ID:-none}: $*"

terminating=
"$@" &
child=$!
trap 'terminating=1; kill -TERM "$child" 2>/dev/null' TERM INT
wait "$child"
rc=$?
# A trapped signal interrupts wait: wait again until the command itself has exited.
while kill -0 "$child" 2>/dev/null; do
  wait "$child"
  rc=$?
done
trap - TERM INT

if [ -n "$terminating" ]; then
  log "stopped by a signal; '$1' exited $rc; run $run_id is not complete"
  exit "$rc"
fi

if [ "$rc" -eq 0 ]; then
  tmp=$run_dir/.rank-$rank.done.$$
  if ! { date -u +%Y-%m-%dT%H:%M:%SZ > "$tmp" && mv -f "$tmp" "$done_marker"; }; then
    fail "run $run_id finished but the completion marker $done_marker could not be written"
  fi
  : > "$announced"
  announce
  exit 0
fi

msg="run $run_id: '$1' exited $rc on rank $rank (start $attempt in this pod); the kubelet restarts it with back-off"
termination "$msg"
log "$msg"
exit "$rc"
