# cdk8s-gpu training launch wrapper: gives a StatefulSet rank the behaviour of a job.
#
# Run as: sh -c "<this script>" cdk8s-gpu-launch <command> [args...]
# POSIX sh only (dash, busybox ash, bash); external tools: date, mkdir, mv, sleep.
# The kubelet expands $(NAME) and turns a double dollar into one in command and args, so this
# script never writes either form (the tests run it after that expansion).
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
#   status. A run stopped by a signal is never marked complete, whatever it exits with. PID 1
#   ignores a signal it has no trap for, so TERM is trapped from the first line; a command that
#   ignores TERM is waited for (exiting first would SIGKILL it with every process of the pod).
# - Completion is recorded in the pod's scratch first, then on the checkpoint volume: a restart
#   after a failed durable write retries the write and never trains again.
#
# Environment (set by GpuTrainingStatefulSet):
#   CDK8S_GPU_RUN_ID         the run whose completion is recorded (runId prop)
#   CDK8S_GPU_STATE_DIR      where completion markers live (checkpoint volume, or pod scratch)
#   CDK8S_GPU_POD_STATE_DIR  pod-lifetime scratch (emptyDir): attempt count, "announced" flags
#   NODE_RANK                this pod's ordinal (falls back to the suffix of HOSTNAME)
#   PET_RDZV_ID              torchrun's rendezvous id, logged (it carries the spec hash)
#   CDK8S_GPU_TERMINATION_LOG  the termination message file (default /dev/termination-log)

# Until the command runs there is nothing to stop: a TERM (pod deleted while starting) ends the wrapper.
trap 'exit 143' TERM
trap 'exit 130' INT

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
pod_done=$pod_dir/$run_id.done

mkdir -p "$pod_dir" || fail "cannot create $pod_dir"

announce() {
  finished=
  [ -f "$done_marker" ] && read -r finished < "$done_marker"
  msg="run $run_id completed on rank $rank ($finished)"
  termination "$msg"
  log "$msg; this rank will not train again"
}

idle() {
  # The trap comes first: a TERM that arrives right after the log line must end the idle rank cleanly.
  sleeper=
  trap 'if [ -n "$sleeper" ]; then kill "$sleeper" 2>/dev/null; fi; exit 0' TERM INT
  log "run $run_id already completed on rank $rank: idling instead of training again (delete the StatefulSet to release the GPUs; a new runId starts a new run)"
  while :; do
    sleep 3600 &
    sleeper=$!
    wait "$sleeper"
  done
}

# Records completion: in the pod's scratch first (a restart of this container never trains again),
# then on the checkpoint volume (a re-created pod does not either).
record_done() {
  if [ ! -f "$pod_done" ]; then
    date -u +%Y-%m-%dT%H:%M:%SZ > "$pod_done" || log "cannot write $pod_done"
  fi
  mkdir -p "$run_dir" 2>/dev/null
  tmp=$run_dir/.rank-$rank.done.tmp
  { done_stamp > "$tmp" && mv -f "$tmp" "$done_marker"; } 2>/dev/null
}

done_stamp() {
  finished=
  [ -f "$pod_done" ] && read -r finished < "$pod_done"
  printf '%s\n' "${finished:-unknown}"
}

if [ -f "$pod_done" ] && [ ! -f "$done_marker" ]; then
  # Finished in this pod, but the durable marker is missing: write it again, never retrain.
  record_done || fail "run $run_id finished on rank $rank but the completion marker $done_marker still cannot be written; this rank will not train again in this pod"
fi

if [ -f "$done_marker" ]; then
  if [ -f "$announced" ]; then
    idle
  fi
  : > "$announced" || fail "cannot write $announced"
  announce
  exit 0
fi

mkdir -p "$run_dir" || fail "cannot create $run_dir (is the checkpoint volume writable by this user?)"
[ -w "$run_dir" ] || fail "$run_dir is not writable by this user (uid and fsGroup of the pod, or the volume's permissions)"

attempt=0
if [ -f "$attempts_file" ]; then
  read -r attempt < "$attempts_file" || attempt=0
  case $attempt in '' | *[!0-9]*) attempt=0 ;; esac
fi
attempt=$((attempt + 1))
printf '%s\n' "$attempt" > "$attempts_file"

log "run $run_id, rank $rank, start $attempt in this pod, rendezvous ${PET_RDZV_ID:-none}: $*"

terminating=
interrupted=
child=
# Set before the command starts, so no TERM falls between its start and the trap.
trap 'terminating=1; interrupted=1; if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; fi' TERM INT
"$@" &
child=$!
if [ -n "$terminating" ]; then kill -TERM "$child" 2>/dev/null; fi
while :; do
  interrupted=
  wait "$child"
  status=$?
  if [ -z "$interrupted" ]; then
    rc=$status
    break
  fi
  # A trap ran during wait: its status is the interruption's (128+signal) or the command's.
  # While the command exists (a zombie included) wait again; once it is gone, ask once more:
  # a shell that still holds its status reports it, one that already did answers 127.
  if kill -0 "$child" 2>/dev/null; then continue; fi
  wait "$child" 2>/dev/null
  again=$?
  if [ "$again" -eq 127 ]; then rc=$status; else rc=$again; fi
  break
done
# The command has exited: nothing is left to stop, and recording the outcome is quick.
trap '' TERM INT

if [ -n "$terminating" ]; then
  log "stopped by a signal; '$1' exited $rc; run $run_id is not complete"
  exit "$rc"
fi

if [ "$rc" -eq 0 ]; then
  record_done || fail "run $run_id finished on rank $rank but the completion marker $done_marker could not be written; this rank will not train again in this pod"
  : > "$announced"
  announce
  exit 0
fi

msg="run $run_id: '$1' exited $rc on rank $rank (start $attempt in this pod); the kubelet restarts it with back-off"
termination "$msg"
log "$msg"
exit "$rc"
