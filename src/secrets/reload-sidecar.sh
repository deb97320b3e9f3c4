# cdk8s-gpu reload sidecar: POSIX sh, runs under busybox, dash or bash.
#
# Watches a secret volume for the kubelet's atomic update (a new timestamped directory swapped in
# by renaming ..data_tmp over ..data) by polling a fingerprint of the visible files' names and
# contents. inotify on a file misses that swap, since the file itself is never modified.
#
# Settings (env):
#   WATCH_DIR            the mounted secret directory                          (required)
#   POLL_SECONDS         seconds between fingerprints                          (default 10)
#   ACTION               exec | signal | http | sync                           (required)
#   SIGNAL, PROCESS_NAME for signal: the signal and the process name (comm)    
#   RELOAD_URL           for http: the URL to POST to
#   SYNC_DIR             for sync: where to copy the files, each replaced atomically
#   BACKOFF_SECONDS      first retry delay after a failed action, doubling     (default 5)
#   BACKOFF_MAX_SECONDS  retry delay cap                                       (default 300)
#   RUN_ONCE             1: perform the action once and exit (initial sync)
# For exec, the command is the script's arguments.
set -u

: "${WATCH_DIR:?WATCH_DIR must be set}"
: "${ACTION:?ACTION must be set}"
POLL_SECONDS="${POLL_SECONDS:-10}"
BACKOFF_SECONDS="${BACKOFF_SECONDS:-5}"
BACKOFF_MAX_SECONDS="${BACKOFF_MAX_SECONDS:-300}"

log() {
  printf '%s reload-sidecar: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*"
}

# Names and contents of the visible files (not the ..data bookkeeping), in a stable order.
fingerprint() {
  for f in "$WATCH_DIR"/*; do
    [ -f "$f" ] || continue
    printf '%s\n' "${f##*/}"
    cat "$f"
    printf '\n'
  done | cksum
}

send_signal() {
  found=0
  for p in /proc/[0-9]*; do
    comm=$(cat "$p/comm" 2>/dev/null) || continue
    if [ "$comm" = "$PROCESS_NAME" ]; then
      kill -s "$SIGNAL" "${p#/proc/}" && found=1
    fi
  done
  [ "$found" = 1 ] || { log "no process named $PROCESS_NAME to signal"; return 1; }
}

sync_files() {
  mkdir -p "$SYNC_DIR" || return 1
  for f in "$WATCH_DIR"/*; do
    [ -f "$f" ] || continue
    name=${f##*/}
    # Copy beside the target, then rename: a reader sees the old file or the new one, never half.
    cp "$f" "$SYNC_DIR/.$name.tmp" && mv -f "$SYNC_DIR/.$name.tmp" "$SYNC_DIR/$name" || return 1
  done
}

run_action() {
  case "$ACTION" in
    exec) "$@" ;;
    signal) send_signal ;;
    http) wget -q -O /dev/null --post-data='' "$RELOAD_URL" ;;
    sync) sync_files ;;
    *) log "unknown ACTION $ACTION"; return 2 ;;
  esac
}

if [ "${RUN_ONCE:-0}" = 1 ]; then
  run_action "$@" && log "initial $ACTION done" && exit 0
  log "initial $ACTION failed"
  exit 1
fi

last=$(fingerprint)
log "watching $WATCH_DIR every ${POLL_SECONDS}s, action $ACTION"
while :; do
  sleep "$POLL_SECONDS"
  current=$(fingerprint)
  [ "$current" = "$last" ] && continue
  delay=$BACKOFF_SECONDS
  while :; do
    # Re-read right before acting, so quick successive rotations end on the latest content.
    current=$(fingerprint)
    if run_action "$@"; then
      last=$current
      log "reloaded after a change in $WATCH_DIR (fingerprint ${current%% *})"
      break
    fi
    log "reload failed; retrying in ${delay}s"
    sleep "$delay"
    delay=$((delay * 2))
    [ "$delay" -gt "$BACKOFF_MAX_SECONDS" ] && delay=$BACKOFF_MAX_SECONDS
  done
done
