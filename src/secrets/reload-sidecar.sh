# cdk8s-gpu reload sidecar. POSIX sh, tested under busybox sh (the pinned busybox:1.36.1 image and
# Debian's busybox 1.35) and dash.
#
# Watches a secret volume for the kubelet's atomic update (a new timestamped directory swapped in
# by renaming ..data_tmp over ..data) by polling a fingerprint of the watched keys' contents.
# inotify on a file misses that swap, since the file itself is never modified.
#
# Settings (env):
#   WATCH_DIR               the mounted secret directory                                 (required)
#   KEYS                    the keys to watch, separated by spaces (dot-files included)  (required)
#   ACTION                  exec | signal | http | sync                                  (required)
#   POLL_SECONDS            seconds between fingerprints, fractions allowed              (default 10)
#   ACTION_TIMEOUT_SECONDS  a reload that takes longer is killed and counts as failed    (default 30)
#   BACKOFF_SECONDS         first retry delay after a failed reload, then doubling       (default 5)
#   BACKOFF_MAX_SECONDS     retry delay cap                                              (default 300)
#   SIGNAL, PROCESS_NAME    signal: the signal name (HUP) and the process name (comm)
#   RELOAD_URL              http: the URL to POST to
#   SYNC_DIR                sync: where the plain copies go, each replaced atomically
#   RUN_ONCE                1: act once and exit (the initial sync)
# For exec, the command is the script's arguments.
#
# Needs: sh with its POSIX builtins (command, kill, printf, read, trap, wait), sleep, timeout, and
# one of sha256sum, md5sum or cksum; plus wget (http), cp and mv (sync) or the command (exec).
# A missing tool stops the sidecar at start with a message (a visible CrashLoopBackOff), never a
# watcher that runs and silently does nothing.
set -u

log() {
  printf 'reload-sidecar: %s\n' "$*"
}

die() {
  printf 'reload-sidecar: fatal: %s\n' "$*" >&2
  exit 1
}

: "${WATCH_DIR:?WATCH_DIR must be set}"
: "${KEYS:?KEYS must be set}"
: "${ACTION:?ACTION must be set}"

# Seconds (whole, or with up to 3 decimals) as milliseconds, so that backoff can double in shell
# arithmetic; dies naming the setting. Runs in $(...), so its caller exits too.
to_ms() {
  case $2 in
    '' | . | *[!0-9.]* | *.*.*) die "$1 must be a number of seconds (got '$2')" ;;
  esac
  whole=${2%%.*}
  frac=
  case $2 in *.*) frac=${2#*.} ;; esac
  [ ${#frac} -le 3 ] || die "$1 takes at most 3 decimals (got '$2')"
  while [ ${#frac} -lt 3 ]; do frac="${frac}0"; done
  # A leading zero would make $(( )) read the number as octal.
  while :; do case $whole in 0?*) whole=${whole#0} ;; *) break ;; esac; done
  while :; do case $frac in 0?*) frac=${frac#0} ;; *) break ;; esac; done
  echo $((${whole:-0} * 1000 + frac))
}

# Milliseconds as an argument for sleep and timeout: whole seconds when they are whole, so that a
# sleep without fractions would still work with the construct's whole-second settings.
secs() {
  if [ $(($1 % 1000)) -eq 0 ]; then
    echo $(($1 / 1000))
  else
    printf '%d.%03d\n' $(($1 / 1000)) $(($1 % 1000))
  fi
}

POLL_MS=$(to_ms POLL_SECONDS "${POLL_SECONDS:-10}") || exit 1
TIMEOUT_MS=$(to_ms ACTION_TIMEOUT_SECONDS "${ACTION_TIMEOUT_SECONDS:-30}") || exit 1
BACKOFF_MS=$(to_ms BACKOFF_SECONDS "${BACKOFF_SECONDS:-5}") || exit 1
BACKOFF_MAX_MS=$(to_ms BACKOFF_MAX_SECONDS "${BACKOFF_MAX_SECONDS:-300}") || exit 1
[ "$POLL_MS" -gt 0 ] || die "POLL_SECONDS must be more than 0"
[ "$TIMEOUT_MS" -gt 0 ] || die "ACTION_TIMEOUT_SECONDS must be more than 0"

# Secret keys are [-._a-zA-Z0-9]+: nothing the shell would split or glob.
for key in $KEYS; do
  case $key in
    *[!-._a-zA-Z0-9]* | . | .. | ..*) die "KEYS holds '$key', which is not a Secret key a volume can project" ;;
  esac
done

need() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 \
      || die "this image has no '$tool' (PATH=${PATH:-}); the reload sidecar needs sh, sleep, timeout, one of sha256sum/md5sum/cksum, and for ACTION=$ACTION: $*"
  done
}

case $ACTION in
  exec)
    [ $# -gt 0 ] || die "ACTION=exec needs the command as the script's arguments"
    need sleep timeout "$1"
    ;;
  signal)
    : "${SIGNAL:?SIGNAL must be set for ACTION=signal}" "${PROCESS_NAME:?PROCESS_NAME must be set for ACTION=signal}"
    # dash's kill -s takes HUP, not SIGHUP; busybox takes both.
    SIGNAL=${SIGNAL#SIG}
    case $SIGNAL in
      HUP | USR1 | USR2 | INT | TERM | QUIT) ;;
      *) die "SIGNAL must be one of HUP, USR1, USR2, INT, TERM, QUIT (got '$SIGNAL')" ;;
    esac
    [ -d /proc/self ] || die "no /proc to find process '$PROCESS_NAME' in"
    need sleep
    ;;
  http)
    : "${RELOAD_URL:?RELOAD_URL must be set for ACTION=http}"
    need sleep timeout wget
    ;;
  sync)
    : "${SYNC_DIR:?SYNC_DIR must be set for ACTION=sync}"
    [ -d "$SYNC_DIR" ] || die "SYNC_DIR $SYNC_DIR is not a directory"
    need sleep timeout cp mv
    ;;
  *) die "unknown ACTION '$ACTION' (exec, signal, http or sync)" ;;
esac

HASH=
if [ "${RUN_ONCE:-0}" != 1 ]; then
  for tool in sha256sum md5sum cksum; do
    if command -v "$tool" >/dev/null 2>&1; then
      HASH=$tool
      break
    fi
  done
  [ -n "$HASH" ] || die "this image has none of sha256sum, md5sum or cksum (PATH=${PATH:-}), so the sidecar cannot fingerprint $WATCH_DIR"
fi

# The PID of what the script waits for, so that TERM can stop it too.
child=
stop() {
  [ -z "$child" ] || kill "$child" 2>/dev/null
  log "stopping on SIG$1"
  exit 0
}
# As PID 1 of its container the shell would ignore TERM without a trap, and the kubelet would wait
# out the whole grace period before SIGKILL.
trap 'stop TERM' TERM
trap 'stop INT' INT

# Sleeps in the background and waits: a trap runs only between commands, so a foreground sleep
# would hold back TERM for up to a whole poll interval, while wait returns at once.
pause() {
  sleep "$(secs "$1")" &
  child=$!
  wait "$child"
  child=
}

# Runs a command with a deadline (TERM, then KILL 5 s later), in the background for the same
# reason. A reload that hangs (an HTTP endpoint that never answers) is a failure with backoff.
bounded() {
  timeout -k 5 "$(secs "$TIMEOUT_MS")" "$@" &
  child=$!
  wait "$child"
  rc=$?
  child=
  return "$rc"
}

# The keys' names and contents (through the ..data symlinks). Paths start with ./ so that a key
# such as "-x" is never read as an option.
fingerprint() {
  (
    cd "$WATCH_DIR" || exit 1
    set --
    for key in $KEYS; do set -- "$@" "./$key"; done
    exec "$HASH" "$@"
  )
}

send_signal() {
  found=0
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = "$$" ] && continue
    comm=
    { IFS= read -r comm <"$p/comm"; } 2>/dev/null || continue
    [ "$comm" = "$PROCESS_NAME" ] || continue
    kill -s "$SIGNAL" "$pid" 2>/dev/null && found=$((found + 1))
  done
  if [ "$found" -eq 0 ]; then
    log "no process named '$PROCESS_NAME' to signal"
    return 1
  fi
  log "sent SIG$SIGNAL to $found process(es) named '$PROCESS_NAME'"
}

sync_files() {
  for key in $KEYS; do
    # Copy beside the target, then rename: a reader sees the old file or the new one, never half.
    # The temporary name starts with "..", which no Secret key may, so it never replaces a key.
    bounded cp "$WATCH_DIR/$key" "$SYNC_DIR/..$key.tmp" && mv -f "$SYNC_DIR/..$key.tmp" "$SYNC_DIR/$key" || return 1
  done
}

run_action() {
  case $ACTION in
    exec) bounded "$@" ;;
    signal) send_signal ;;
    http) bounded wget -q -O /dev/null --post-data= "$RELOAD_URL" ;;
    sync) sync_files ;;
  esac
}

if [ "${RUN_ONCE:-0}" = 1 ]; then
  run_action "$@" || die "initial $ACTION failed"
  log "initial $ACTION done"
  exit 0
fi

last=$(fingerprint 2>&1) || die "cannot fingerprint $WATCH_DIR with $HASH: $last"
[ -n "$last" ] || die "the fingerprint of $WATCH_DIR came back empty ($HASH printed nothing)"
log "watching $KEYS in $WATCH_DIR every $(secs "$POLL_MS")s with $HASH; on a change: $ACTION"

misses=0
while :; do
  pause "$POLL_MS"
  if ! current=$(fingerprint 2>&1) || [ -z "$current" ]; then
    # One miss can be a race with the kubelet removing the previous timestamped directory.
    misses=$((misses + 1))
    [ "$misses" -lt 3 ] || die "cannot fingerprint $WATCH_DIR three times in a row: ${current:-empty output}"
    log "cannot fingerprint $WATCH_DIR (${current:-empty output}); retrying at the next poll"
    continue
  fi
  misses=0
  [ "$current" = "$last" ] && continue
  delay=$BACKOFF_MS
  while :; do
    # Re-read right before acting, so that quick successive rotations end on the latest content.
    fresh=$(fingerprint 2>/dev/null) && [ -n "$fresh" ] && current=$fresh
    run_action "$@" && break
    log "reload failed; retrying in $(secs "$delay")s"
    pause "$delay"
    delay=$((delay * 2))
    [ "$delay" -le "$BACKOFF_MAX_MS" ] || delay=$BACKOFF_MAX_MS
  done
  last=$current
  log "reloaded after a change in $WATCH_DIR"
done
