trap 'exit 143' TERM; trap 'exit 130' INT
# ^ First, before anything else: the wrapper is PID 1, and the kernel drops a signal to PID 1 that
# has no handler (kernel/signal.c, sig_task_ignored: SIGNAL_UNKILLABLE), so a TERM (pod deleted
# while starting) that came before this line would be lost. The shell's own start (exec, loading,
# its init) comes before any line of a script: a TERM in that window is lost whatever the script
# says, and the kubelet's SIGKILL at the end of the grace period ends the pod.
#
# cdk8s-gpu training launch wrapper: gives the StatefulSet's ranks together the behaviour of a job;
# for GpuTrainingJob (CDK8S_GPU_MODE=forward, below) it only traps and forwards signals.
#
# Run as: sh -c '. <this file>' cdk8s-gpu-launch <command> [args...] (GpuTrainingStatefulSet, from its
# ConfigMap), or sh -c "<the part before the job model>" cdk8s-gpu-launch ... (GpuTrainingJob).
# POSIX sh only (dash, busybox ash, bash); external tools: date, head, mkdir, mv, rm, sleep.
# The kubelet expands $(NAME) and turns a double dollar into one in command and args, so this
# script never writes either form (the tests run it after that expansion).
#
# The job model (the run is the unit, a rank is a part of it):
# - A run is complete once the launcher (torchrun) has exited 0 on every rank of the run, not when
#   it did on this one. torchrun exits 0 on a node once its own workers are done even when a peer
#   fails afterwards: SimpleElasticAgent._exit_barrier (torch/distributed/elastic/agent/server/
#   api.py) logs and swallows a failed or timed-out exit barrier. So each rank records its own
#   success (rank-N.ok) and then waits until every rank's success marker is there. That needs a
#   state directory every rank mounts (sharedCheckpoints); with per-rank or pod-local state the
#   wrapper cannot see the other ranks and falls back to per-rank completion, saying so.
# - A rank that finished but whose run is not complete does not idle as complete: when another
#   rank's latest launch has no success of its own (it failed, and starts again or has), this rank
#   runs the launcher again to rejoin the gang's rendezvous (the training script resumes from its
#   checkpoint).
# - Finished once. A StatefulSet only allows restartPolicy Always, so when the run is complete the
#   kubelet would start the command again and retrain over the checkpoints. Instead this wrapper
#   writes a completion marker (rank-N.done), writes the container's termination message and exits
#   0 once per pod (`lastState.terminated.reason` reads Completed); later starts idle.
# - Failures are capped. Each kubelet restart gives torchrun a fresh --max-restarts budget, so a
#   failing run would restart forever. Failed starts are counted per rank and run on the state
#   volume (rank-N.failures); at CDK8S_GPU_MAX_FAILED_STARTS the rank writes rank-N.failed and
#   ends FAILED: the start that hits the cap exits non-zero once per pod (reason Error, with the
#   message), later starts idle and log how to free the GPUs. Every rank that sees a FAILED marker
#   of its run (shared state) ends FAILED too, stopping its launcher if it runs.
# - Losing rank 0. Its torchrun agent hosts the c10d store of the rendezvous (the agent whose
#   address is the endpoint's host; torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py,
#   _create_tcp_store). When it goes, the other ranks' torchrun fails within seconds (their
#   workers lose their peers, the re-rendezvous cannot reach the store): each such exit is a failed
#   start, the kubelet restarts them with back-off, and their torchrun waits for the store until
#   its read_timeout (60 s by default). When rank 0's pod is back, the gang forms again and
#   resumes from the checkpoints; when it does not come back before the other ranks have used
#   their failed starts, they end FAILED.
# - Signals. The wrapper is PID 1: it forwards SIGTERM/SIGINT to the command as SIGTERM (a
#   background job of a non-interactive shell ignores SIGINT) and exits with the command's
#   status. A run stopped by a signal is never marked complete and is not a failed start. A
#   signal is never ignored: where exiting at once would lose state, it is noted and acted on.
# - Markers are written to a temp name unique to the pod and process, then renamed in the same
#   directory (two pods of one rank may finish together). They are read only as regular files
#   (not symlinks), and at most MARKER_BYTES of them.
#
# State, under $CDK8S_GPU_STATE_DIR/runs/<run id>/ (N is the rank), one line each:
#   rank-N.start     written before each launch, with a token of the launch (start=)
#   rank-N.ok        the launcher exited 0 on rank N in this run, and the token of that launch
#   rank-N.done      rank N saw the run complete
#   rank-N.failures  failed starts of rank N in this run
#   rank-N.failed    rank N reached the cap: the run is FAILED
# Markers only grow within a run: a new run id is a new run.
#
# Environment (set by GpuTrainingStatefulSet unless marked optional):
#   CDK8S_GPU_RUN_ID         the run whose completion is recorded (runId prop)
#   CDK8S_GPU_STATE_DIR      where markers live (checkpoint volume, or pod scratch)
#   CDK8S_GPU_POD_STATE_DIR  pod-lifetime scratch (emptyDir): start count, "announced" flags
#   NODE_RANK                this pod's ordinal (falls back to the suffix of HOSTNAME)
#   NNODES                   ranks in the run (default 1)
#   PET_RDZV_ID              torchrun's rendezvous id, logged and kept in markers (it carries the spec hash)
#   POD_NAMESPACE, HOSTNAME  named in the hint that frees the GPUs of a FAILED run
#   CDK8S_GPU_STATE_SHARED   optional: 1 when CDK8S_GPU_STATE_DIR is on a volume every rank mounts,
#                            0 when not; unset, the wrapper looks: once the gang's rendezvous has
#                            formed, every rank's start marker is visible on a shared volume only
#   CDK8S_GPU_MAX_FAILED_STARTS  optional: failed starts of a rank before the run is FAILED (default 10)
#   CDK8S_GPU_POLL_SECONDS   optional: how often a waiting rank looks at the others (default 5)
#   CDK8S_GPU_TERMINATION_LOG  optional: the termination message file (default /dev/termination-log)
#   TORCH_DISABLE_SHARE_RDZV_TCP_STORE  optional: passed to torchrun, 1 unless set (see below)
#   CDK8S_GPU_MODE           optional: `forward` (GpuTrainingJob) only traps and forwards signals and
#                            passes the launcher's exit code on; none of the variables above is read

PROG=cdk8s-gpu-launch
# Markers are a line of text; anything longer is not ours and is not read further.
MARKER_BYTES=512

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

for tool in date head mkdir mv rm sleep; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    printf '%s: the image has no "%s", which this wrapper needs (with sh)\n' "$PROG" "$tool" >&2
    termination "$PROG: the image has no $tool"
    exit 127
  fi
done

# A whole number without leading zeros (which sh arithmetic would read as octal), or empty.
decimal() {
  n=$1
  case $n in '' | *[!0-9]*) n=; return 1 ;; esac
  while :; do case $n in 0?*) n=${n#0} ;; *) break ;; esac; done
}

terminating=

# Starts "$@" as the wrapper's child (child=), with TERM and INT forwarded to it as TERM (a
# background job of a non-interactive shell ignores SIGINT).
start_command() {
  interrupted=
  child=
  # Set before the command starts, so no TERM falls between its start and the trap.
  trap 'terminating=1; interrupted=1; if [ -n "$child" ]; then forward_term; fi' TERM INT
  [ -z "$terminating" ] || exit 143
  "$@" &
  child=$!
  if [ -n "$terminating" ]; then forward_term; fi
}

# Whether the child is still this shell's copy between its fork and its exec, with the copy's TERM
# handler. A TERM it takes then is dropped, and the command starts without it: dash and busybox
# clear a background child's traps before the exec (a TERM sent at once after `cmd &` is lost 197
# times in 200 under dash). The copy has this shell's command line; the command never has.
forking() {
  cgt=
  while read -r key value; do
    if [ "$key" = SigCgt: ]; then cgt=$value; break; fi
  done 2>/dev/null < /proc/"$child"/status
  # SIGTERM is signal 15: bit 14, the value 4 of the fourth hexadecimal digit from the right.
  cgt=${cgt%???}
  case ${cgt#"${cgt%?}"} in [4567cdefCDEF]) ;; *) return 1 ;; esac
  [ -n "$own_cmdline" ] || own_cmdline=$(head -c 65536 /proc/$$/cmdline 2>/dev/null)
  [ "$(head -c 65536 /proc/"$child"/cmdline 2>/dev/null)" = "$own_cmdline" ]
}

# Forwards TERM to the child once it can no longer drop it (forking, above): checked before the
# kill, since a dropped TERM cannot be seen afterwards. Waits at most 2 s for the exec.
forward_term() {
  tries=0
  while [ "$tries" -lt 200 ] && forking; do
    sleep 0.01
    tries=$((tries + 1))
  done
  kill -TERM "$child" 2>/dev/null
}

# Waits for the child however long it takes (the wrapper's exit would SIGKILL every process of the
# container) and sets rc to its exit status. From then on a signal is noted (terminating=1),
# never ignored: the caller acts on it.
wait_command() {
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
  trap 'terminating=1' TERM INT
}

[ "$#" -gt 0 ] || fail "no command to run"

# GpuTrainingJob (CDK8S_GPU_MODE=forward): the JobSet decides completion and failure for the
# whole run and restarts the gang, so none of the job model below applies. The wrapper keeps the
# container's PID 1 catching TERM from its first line and forwards it: torchrun installs its
# SIGTERM handler only when its workers start (PContext.start in torch/distributed/elastic/
# multiprocessing/api.py), so as PID 1 it would drop a TERM while importing torch and while in
# its rendezvous, and the pod would hold its GPUs for the whole grace period. The launcher's exit
# code is passed on as is (the JobSet's failure rules read it; a missing launcher is the shell's 127).
if [ "${CDK8S_GPU_MODE:-}" = forward ]; then
  start_command "$@"
  wait_command
  if [ -n "$terminating" ]; then log "stopped by a signal; '$1' exited $rc"; fi
  exit "$rc"
fi
# cdk8s-gpu: the job model (GpuTrainingStatefulSet) from here on; a GpuTrainingJob pod carries the lines above only.

run_id=${CDK8S_GPU_RUN_ID:-}
state_dir=${CDK8S_GPU_STATE_DIR:-}
pod_dir=${CDK8S_GPU_POD_STATE_DIR:-}
[ -n "$run_id" ] && [ -n "$state_dir" ] && [ -n "$pod_dir" ] \
  || fail "CDK8S_GPU_RUN_ID, CDK8S_GPU_STATE_DIR and CDK8S_GPU_POD_STATE_DIR must be set"
case $run_id in
  */* | .*) fail "CDK8S_GPU_RUN_ID must not contain '/' or start with '.' (got $run_id)" ;;
esac

decimal "${NODE_RANK:-}" || decimal "${HOSTNAME##*-}" || fail "cannot tell this pod's rank from NODE_RANK or HOSTNAME"
rank=$n

decimal "${NNODES:-1}" || fail "NNODES must be a whole number of ranks (got $NNODES)"
nnodes=$n
[ "$nnodes" -ge 1 ] || fail "NNODES must be at least 1 (got $nnodes)"
if [ "$nnodes" -gt 1 ] && [ "$rank" -ge "$nnodes" ]; then
  fail "rank $rank is outside the run's $nnodes ranks (0 to $((nnodes - 1))): is the StatefulSet scaled past replicas?"
fi

decimal "${CDK8S_GPU_MAX_FAILED_STARTS:-10}" || fail "CDK8S_GPU_MAX_FAILED_STARTS must be a whole number (got $CDK8S_GPU_MAX_FAILED_STARTS)"
max_failed=$n
[ "$max_failed" -ge 1 ] || fail "CDK8S_GPU_MAX_FAILED_STARTS must be at least 1"
poll=${CDK8S_GPU_POLL_SECONDS:-5}
case $poll in '' | *[!0-9.]* | *.*.* | .) fail "CDK8S_GPU_POLL_SECONDS must be a number of seconds (got $poll)" ;; esac

# torchrun shares one TCPStore server for the workers' bootstrap across rendezvous rounds: it is
# made at the first rendezvous and kept (DynamicRendezvousHandler.next_rendezvous in
# torch/distributed/elastic/rendezvous/dynamic_rendezvous.py), and the workers' store clients add
# no per-attempt prefix (_create_c10d_store in torch/distributed/rendezvous.py). After an
# in-place gang restart the new workers can read the previous round's keys (gloo connects to the
# dead workers' ports: "Connection refused"), or, when the agents' ranks changed between rounds,
# use different servers and hang. A store per round (the opt-out) makes restarts in place work.
# A value set in the pod wins.
: "${TORCH_DISABLE_SHARE_RDZV_TCP_STORE:=1}"
export TORCH_DISABLE_SHARE_RDZV_TCP_STORE

# Who writes a temp file: two pods of one rank (an old one terminating, a new one starting) can
# write the same marker at once, so temp names carry the pod, the process and a random part.
host=${HOSTNAME:-}
[ -n "$host" ] || read -r host 2>/dev/null < /proc/sys/kernel/hostname || host=
case $host in '' | */* | .*) host=pod ;; esac
seq=0

run_dir=$state_dir/runs/$run_id
me=$run_dir/rank-$rank
done_marker=$me.done
ok_marker=$me.ok
start_marker=$me.start
failures_file=$me.failures
failed_marker=$me.failed
announced=$pod_dir/$run_id.announced
attempts_file=$pod_dir/$run_id.attempts
pod_done=$pod_dir/$run_id.done
pod_ok=$pod_dir/$run_id.ok
pod_failed=$pod_dir/$run_id.failed

# A StatefulSet pod is <statefulset>-<ordinal>: named in the hints of the terminal state.
sts=${HOSTNAME%-*}
[ -n "$sts" ] && [ "$sts" != "${HOSTNAME:-}" ] || sts='<statefulset>'
ns=${POD_NAMESPACE:+ -n $POD_NAMESPACE}
free_gpus="free the GPUs with: kubectl$ns scale statefulset $sts --replicas=0 (or delete the StatefulSet); a new runId starts a new run"

mkdir -p "$pod_dir" || fail "cannot create $pod_dir"

# Whether a marker is there: a regular file, not a symlink. A symlink is refused (once, loudly):
# markers are written by this wrapper only, and a link could point anywhere (a FIFO, a device).
warned=' '
present() {
  if [ -L "$1" ]; then
    case $warned in *" $1 "*) ;; *)
      warned="$warned$1 "
      log "ignoring $1: it is a symlink, and markers are regular files written by this wrapper"
    ;; esac
    return 1
  fi
  [ -f "$1" ]
}

# Reads the first line of a marker into marker_text, at most MARKER_BYTES of it.
read_marker() {
  marker_text=
  present "$1" || return 1
  marker_text=$(head -c "$MARKER_BYTES" "$1" 2>/dev/null) || { marker_text=; return 1; }
  marker_text=${marker_text%%
*}
  return 0
}

# Writes a one-line marker atomically: a temp name unique to this pod and process, then a rename
# in the same directory, so readers never see a partial marker and concurrent writers never
# share a temp file.
write_marker() {
  seq=$((seq + 1))
  nonce=
  read -r nonce 2>/dev/null < /proc/sys/kernel/random/uuid || nonce=
  # The shell's pid is written with braces: the kubelet would turn a double dollar into one.
  tmp=${1%/*}/.${1##*/}.$host.${$}.$seq.${nonce:-0}.tmp
  # mv onto a directory would move the temp file into it.
  if [ -d "$1" ] && [ ! -L "$1" ]; then return 1; fi
  if printf '%s\n' "$2" > "$tmp" 2>/dev/null && mv -f "$tmp" "$1" 2>/dev/null; then return 0; fi
  rm -f "$tmp" 2>/dev/null
  return 1
}

stamp() {
  date -u +%Y-%m-%dT%H:%M:%SZ
}

# A marker line: when, which pod, which launch of a rank (start=, a token) and which rendezvous
# (the rank spec) wrote it.
marker_line() {
  printf '%s host=%s start=%s rdzv=%s' "$(stamp)" "$host" "${1:-none}" "${PET_RDZV_ID:-none}"
}

# The start token in a marker (into tok; empty when there is none).
token_of() {
  tok=
  read_marker "$1" || return 1
  case $marker_text in *" start="*) ;; *) return 1 ;; esac
  tok=${marker_text#* start=}
  tok=${tok%% *}
}

# A new start token: unique per launch, without a clock (mtimes have a resolution of a second in
# busybox's test, so marker ages are not compared).
new_token() {
  seq=$((seq + 1))
  nonce=
  read -r nonce 2>/dev/null < /proc/sys/kernel/random/uuid || nonce=
  tok=$host.${$}.$seq.${nonce:-$(stamp)}
}

# Interruptible sleep: TERM/INT end the wrapper (with $1) at once, also while sleeping.
sleeper=
nap() {
  trap 'if [ -n "$sleeper" ]; then kill "$sleeper" 2>/dev/null; fi; exit '"$1" TERM INT
  [ -z "$terminating" ] || exit "$1"
  sleep "$2" &
  sleeper=$!
  wait "$sleeper"
  sleeper=
}

# Says loudly that a marker of this run id was found at start, and whether another rank spec wrote
# it: the run id is the identity of a run, so a new spec (or a new StatefulSet over the same
# checkpoint volume) with the same run id does not train again.
found_marker() {
  read_marker "$1" || marker_text=unreadable
  log "found the $2 marker $1 ($marker_text) of run $run_id: $3; set a new runId to train again"
  case $marker_text in
    *" rdzv=${PET_RDZV_ID:-none}") ;;
    *" rdzv="*) log "that marker was written by another rank spec (this pod's rendezvous id is ${PET_RDZV_ID:-none}): the spec changed but the runId did not" ;;
  esac
}

# Whether every rank's success marker is visible: the run is complete.
all_ok() {
  k=0
  while [ "$k" -lt "$nnodes" ]; do
    present "$run_dir/rank-$k.ok" || return 1
    k=$((k + 1))
  done
}

# The ranks without a success marker, for log lines.
missing_ok() {
  missing=
  k=0
  while [ "$k" -lt "$nnodes" ]; do
    present "$run_dir/rank-$k.ok" || missing="$missing $k"
    k=$((k + 1))
  done
}

# A FAILED marker of any rank of the run (only this rank's without shared state).
failed_rank=
any_failed() {
  failed_rank=
  if present "$failed_marker"; then failed_rank=$rank; return 0; fi
  k=0
  while [ "$k" -lt "$nnodes" ]; do
    if present "$run_dir/rank-$k.failed"; then failed_rank=$k; return 0; fi
    k=$((k + 1))
  done
  present "$pod_failed" && failed_rank=$rank
}

# Whether this rank can see the other ranks' markers. Each rank writes its start marker before
# it joins the rendezvous, so once a launch has exited 0 here (the gang formed) every rank's start
# marker is visible on a shared volume, and only this rank's on its own.
shared_state() {
  case ${CDK8S_GPU_STATE_SHARED:-} in
    1 | true) return 0 ;;
    0 | false) return 1 ;;
  esac
  k=0
  while [ "$k" -lt "$nnodes" ]; do
    present "$run_dir/rank-$k.start" || return 1
    k=$((k + 1))
  done
}

# A rank other than this one that needs this rank in a new gang: its latest launch (its start
# token) has no success marker of its own, and that has lasted longer than a gang's ranks take to
# finish together (three polls: torchrun's exit barrier releases the agents of one gang at once),
# or its launch is newer than the one this rank saw when it began to wait. That rank failed and
# started again, or will (the kubelet's back-off): its torchrun waits for this rank in a new
# rendezvous. It may have started while this rank's torchrun still sat in its exit barrier
# (torchrun waits there up to 300 s for the others), so it is not enough to look for launches
# newer than this rank's success.
restarted_rank=
settled=0
seen_starts=
peer_restarted() {
  k=0
  starts=
  pending=
  while [ "$k" -lt "$nnodes" ]; do
    if [ "$k" -ne "$rank" ]; then
      token_of "$run_dir/rank-$k.start"
      started=$tok
      starts="$starts $k=$started"
      token_of "$run_dir/rank-$k.ok"
      if [ -n "$started" ] && [ "$started" != "$tok" ] && [ -z "$pending" ]; then pending=$k; fi
    fi
    k=$((k + 1))
  done
  [ -n "$seen_starts" ] || seen_starts=$starts
  [ -n "$pending" ] || return 1
  restarted_rank=$pending
  [ "$settled" -ge 3 ] || [ "$starts" != "$seen_starts" ]
}

idle() {
  log "$1: idling instead of training again ($free_gpus)"
  while :; do nap 0 3600; done
}

# The run is complete: recorded in the pod's scratch first (a restart of this container never
# trains again), then on the state volume (a re-created pod does not either). Exits.
complete() {
  if ! present "$pod_done"; then
    write_marker "$pod_done" "$(marker_line)" || log "cannot write $pod_done"
  fi
  if ! present "$done_marker"; then
    mkdir -p "$run_dir" 2>/dev/null
    write_marker "$done_marker" "$(marker_line)" \
      || fail "run $run_id finished on rank $rank but the completion marker $done_marker cannot be written; this rank will not train again in this pod"
  fi
  [ -z "$terminating" ] || exit 0
  if present "$announced"; then
    idle "run $run_id already completed on rank $rank"
  fi
  : > "$announced" || fail "cannot write $announced"
  read_marker "$done_marker"
  msg="run $run_id completed on rank $rank (${marker_text%% *})"
  termination "$msg"
  log "$msg; this rank will not train again"
  exit 0
}

# The run is FAILED: once per pod the container exits non-zero with the message (reason Error),
# then it idles, holding its GPUs until the StatefulSet is scaled to 0 or deleted. Exits.
failed() {
  if [ "$failed_rank" = "$rank" ]; then
    read_marker "$failed_marker" || read_marker "$pod_failed"
  else
    read_marker "$run_dir/rank-$failed_rank.failed"
  fi
  msg="run $run_id FAILED on rank $failed_rank: ${marker_text:-no details}; $free_gpus"
  [ -z "$terminating" ] || exit 1
  if present "$pod_dir/$run_id.failed-announced"; then
    idle "run $run_id FAILED (on rank $failed_rank)"
  fi
  : > "$pod_dir/$run_id.failed-announced" || fail "cannot write $pod_dir/$run_id.failed-announced"
  termination "$msg"
  log "$msg"
  exit "${1:-1}"
}

# Records this rank's success: pod scratch first, then the state volume.
record_ok() {
  # The launch that succeeded: this rank's latest start marker.
  token_of "$start_marker"
  if ! present "$pod_ok"; then
    write_marker "$pod_ok" "$(marker_line "$tok")" || log "cannot write $pod_ok"
  fi
  mkdir -p "$run_dir" 2>/dev/null
  write_marker "$ok_marker" "$(marker_line "$tok")" \
    || fail "the launcher exited 0 on rank $rank but the success marker $ok_marker cannot be written; this rank will not train again in this pod"
}

# Counts a failed start on the state volume; at the cap the run is FAILED.
count_failure() {
  failures=0
  if read_marker "$failures_file" && decimal "$marker_text"; then failures=$n; fi
  failures=$((failures + 1))
  write_marker "$failures_file" "$failures" || log "cannot write $failures_file: this failed start is not counted"
  if [ "$failures" -ge "$max_failed" ]; then
    line="$failures failed starts (the cap, CDK8S_GPU_MAX_FAILED_STARTS=$max_failed), the last: '$1' exited $2 at $(stamp) on $host"
    write_marker "$pod_failed" "$line" || log "cannot write $pod_failed"
    write_marker "$failed_marker" "$line" || log "cannot write $failed_marker: other ranks will not see that the run FAILED"
    failed_rank=$rank
    failed "$2"
  fi
}

# While the launcher runs (a background subshell): stops it when the run ended elsewhere. When
# another rank ends the run FAILED, this rank's torchrun would otherwise wait in the rendezvous
# for it (--rdzv-conf join_timeout, 600 s by default) and fail, start after start; and a rank that
# rejoined a run that then completed without it would wait there as long.
# The wrapper stops it with TERM once the launcher has exited, and waits for it. A TERM that comes
# before this subshell has replaced the wrapper's inherited trap is dropped (as for the command,
# see forking), so the watcher also ends by itself once the launcher is gone: the wrapper waits at
# most one poll for it, never forever.
watch_run() {
  nap_pid=
  trap 'if [ -n "$nap_pid" ]; then kill "$nap_pid" 2>/dev/null; fi; exit 0' TERM
  while :; do
    kill -0 "$child" 2>/dev/null || exit 0
    sleep "$poll" &
    nap_pid=$!
    wait "$nap_pid"
    nap_pid=
    kill -0 "$child" 2>/dev/null || exit 0
    # ${$} is the wrapper's pid in this subshell too: a wrapper killed outright leaves no watcher.
    kill -0 "${$}" 2>/dev/null || exit 0
    if any_failed; then
      log "run $run_id FAILED on rank $failed_rank: stopping '$1' on rank $rank"
      kill -TERM "$child" 2>/dev/null
      exit 0
    fi
    if all_ok; then
      log "run $run_id completed on every rank: stopping '$1' on rank $rank, which rejoined it"
      kill -TERM "$child" 2>/dev/null
      exit 0
    fi
  done
}

# One launch of the command. Returns when it exited 0; exits otherwise.
launch() {
  mkdir -p "$run_dir" || fail "cannot create $run_dir (is the checkpoint volume writable by this user?)"
  [ -w "$run_dir" ] || fail "$run_dir is not writable by this user (uid and fsGroup of the pod, or the volume's permissions)"

  attempt=0
  if read_marker "$attempts_file" && decimal "$marker_text"; then attempt=$n; fi
  attempt=$((attempt + 1))
  write_marker "$attempts_file" "$attempt" || log "cannot write $attempts_file"
  failures=0
  if read_marker "$failures_file" && decimal "$marker_text"; then failures=$n; fi
  # Before the rendezvous: finished ranks waiting for the run see it and rejoin.
  new_token
  write_marker "$start_marker" "$(marker_line "$tok")" || fail "cannot write $start_marker (is the checkpoint volume writable?)"

  log "run $run_id, rank $rank of $nnodes, start $attempt in this pod, failed starts $failures of $max_failed, rendezvous ${PET_RDZV_ID:-none}: $*"

  start_command "$@"
  watcher=
  if [ "$nnodes" -gt 1 ]; then
    watch_run "$1" &
    watcher=$!
  fi
  wait_command
  # A signal now is noted (never ignored) and ends the wrapper once the outcome is recorded.
  if [ -n "$watcher" ]; then
    kill "$watcher" 2>/dev/null
    wait "$watcher" 2>/dev/null
  fi

  if [ -n "$terminating" ]; then
    log "stopped by a signal; '$1' exited $rc; run $run_id is not complete (not counted as a failed start)"
    exit "$rc"
  fi
  if [ "$rc" -eq 0 ]; then
    record_ok
    return 0
  fi
  # A rank that rejoined a run that then completed without it fails to rendezvous: not a failure.
  if [ "$nnodes" -gt 1 ] && shared_state && all_ok; then return 0; fi
  # Nor is one whose gang failed because another rank ended the run FAILED.
  if any_failed; then failed "$rc"; fi
  count_failure "$1" "$rc"
  [ -z "$terminating" ] || exit "$rc"
  msg="run $run_id: '$1' exited $rc on rank $rank (start $attempt in this pod, failed start $failures of $max_failed); the kubelet restarts it with back-off"
  termination "$msg"
  log "$msg"
  exit "$rc"
}

# Finished in this pod, but the success marker on the state volume is missing: write it again,
# never retrain.
if present "$pod_ok" && ! present "$ok_marker"; then
  record_ok
fi

# Markers of this run id from before this start: said loudly, since they decide what happens.
if present "$done_marker"; then
  found_marker "$done_marker" completion "the run completed, it does not train again"
elif any_failed; then
  found_marker "$run_dir/rank-$failed_rank.failed" FAILED "the run failed, it does not train again"
elif present "$ok_marker"; then
  found_marker "$ok_marker" success "rank $rank finished its part, it trains again only to rejoin the run"
fi

waiting=
while :; do
  if present "$pod_done" || present "$done_marker"; then complete; fi
  if any_failed; then failed; fi
  if present "$ok_marker"; then
    if [ "$nnodes" -eq 1 ] || all_ok; then complete; fi
    if ! shared_state; then
      if [ -z "$waiting" ]; then
        log "rank $rank finished, but the other ranks' markers are not visible here ($state_dir is not shared by the ranks): completion is per rank. If another rank fails now, this rank does not rejoin it; restart the whole job. sharedCheckpoints gives run-wide completion"
      fi
      complete
    fi
    if peer_restarted; then
      log "rank $restarted_rank started again and waits for rank $rank: run $run_id is not complete, rejoining it"
      waiting=
      settled=0
      seen_starts=
      launch "$@"
      continue
    fi
    if [ -z "$waiting" ]; then
      waiting=1
      missing_ok
      msg="rank $rank finished; run $run_id is not complete until ranks$missing finish: waiting (rejoining if one starts again)"
      termination "$msg"
      log "$msg"
    fi
    nap 143 "$poll"
    settled=$((settled + 1))
    continue
  fi
  launch "$@"
done
