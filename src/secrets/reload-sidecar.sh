# cdk8s-gpu reload sidecar. POSIX sh, tested under busybox sh (the pinned busybox:1.36.1 image and
# Debian's busybox 1.35) and dash.
#
# Watches a secret volume for the kubelet's atomic update (a new timestamped directory swapped in
# by renaming ..data_tmp over ..data) by polling a fingerprint of the watched keys' contents.
# inotify on a file misses that swap, since the file itself is never modified.
#
# Never loses a rotation: the fingerprint of the content the application last reloaded is kept in
# STATE_DIR (an emptyDir, which outlives container restarts), written only after a reload
# succeeded. On every start and every poll the sidecar compares it with the Secret and reloads
# when they differ, so a rotation that lands while the sidecar is down (OOM kill, a kill during a
# reload, its own exit, a dangling ..data repaired later) is acted on when it is back. A new pod
# has no record: the current content becomes the record before the application starts on it.
#
# Settings (env):
#   WATCH_DIR               the mounted secret directory                                 (required)
#   KEYS                    the keys to watch, separated by spaces (dot-files included)  (required)
#   ACTION                  exec | signal | http | sync                                  (required)
#   STATE_DIR               where the record of the last reload and the health mark live (required)
#   POLL_SECONDS            seconds between fingerprints, fractions allowed              (default 10)
#   ACTION_TIMEOUT_SECONDS  a reload that takes longer is killed and counts as failed    (default 30)
#   BACKOFF_SECONDS         first retry delay after a failed reload, then doubling       (default 5)
#   BACKOFF_MAX_SECONDS     retry delay cap                                              (default 300)
#   UNHEALTHY_AFTER         failed reloads in a row that make the sidecar unhealthy      (default 3)
#   SIGNAL, PROCESS_NAME    signal: the signal name (HUP) and the process name (comm)
#   RELOAD_URL              http: the URL to POST to
#   SYNC_DIR                sync: where the copies go, all keys swapped at once
#   RUN_ONCE                1: act once, record it and exit (to try an action by hand)
# For exec, the command is the script's arguments.
#
# Health: after UNHEALTHY_AFTER failed reloads in a row the file $STATE_DIR/unhealthy exists until
# a reload succeeds; the construct's liveness probe fails on it, so the kubelet reports the probe
# failure (an Unhealthy event) and restarts the sidecar (its restart count), which retries.
#
# Needs: sh with its POSIX builtins (command, kill, printf, read, trap, wait), sleep, setsid, mv,
# rm, one of sha256sum, md5sum or cksum; plus wget (http), cp, ln and mkdir (sync) or the command
# (exec). A missing tool stops the sidecar at start with a message (a visible CrashLoopBackOff),
# never a watcher that runs and silently does nothing.
set -u
# $KEYS is split unquoted: never let the shell expand a pattern in it.
set -f

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
: "${STATE_DIR:?STATE_DIR must be set}"

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

# Milliseconds as an argument for sleep: whole seconds when they are whole, so that a sleep
# without fractions would still work with the construct's whole-second settings.
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
# 0 would retry a failing reload in a busy loop.
[ "$BACKOFF_MS" -gt 0 ] || die "BACKOFF_SECONDS must be more than 0"
[ "$BACKOFF_MAX_MS" -ge "$BACKOFF_MS" ] || die "BACKOFF_MAX_SECONDS must be at least BACKOFF_SECONDS"
UNHEALTHY_AFTER=${UNHEALTHY_AFTER:-3}
case $UNHEALTHY_AFTER in
  '' | *[!0-9]* | 0*) die "UNHEALTHY_AFTER must be a whole number of reloads above 0 (got '$UNHEALTHY_AFTER')" ;;
esac

# Secret keys are [-._a-zA-Z0-9]+: nothing the shell would split or glob.
for key in $KEYS; do
  case $key in
    *[!-._a-zA-Z0-9]* | . | .. | ..*) die "KEYS holds '$key', which is not a Secret key a volume can project" ;;
  esac
done

need() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 \
      || die "this image has no '$tool' (PATH=${PATH:-}); the reload sidecar needs sh, sleep, setsid, mv, rm, one of sha256sum/md5sum/cksum, and for ACTION=$ACTION: $*"
  done
}

need sleep setsid mv rm
case $ACTION in
  exec)
    [ $# -gt 0 ] || die "ACTION=exec needs the command as the script's arguments"
    need "$1"
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
    ;;
  http)
    : "${RELOAD_URL:?RELOAD_URL must be set for ACTION=http}"
    need wget
    ;;
  sync)
    : "${SYNC_DIR:?SYNC_DIR must be set for ACTION=sync}"
    [ -d "$SYNC_DIR" ] || die "SYNC_DIR $SYNC_DIR is not a directory"
    need cp ln mkdir
    ;;
  *) die "unknown ACTION '$ACTION' (exec, signal, http or sync)" ;;
esac
[ -d "$STATE_DIR" ] || die "STATE_DIR $STATE_DIR is not a directory"

HASH=
for tool in sha256sum md5sum cksum; do
  if command -v "$tool" >/dev/null 2>&1; then
    HASH=$tool
    break
  fi
done
[ -n "$HASH" ] || die "this image has none of sha256sum, md5sum or cksum (PATH=${PATH:-}), so the sidecar cannot fingerprint $WATCH_DIR"

RECORD=$STATE_DIR/reloaded
UNHEALTHY=$STATE_DIR/unhealthy

# The process group of the reload the script waits for, and its deadline's, so that TERM stops them too.
child=
watchdog=
stop() {
  [ -z "$child" ] || kill -TERM -"$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null
  [ -z "$watchdog" ] || stop_watchdog
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
# The command leads a process group of its own (setsid), and the deadline signals the whole group:
# `timeout` signals only its direct child, so under busybox a timed-out reload's own children
# (a shell script's background jobs) would outlive it.
bounded() {
  setsid "$@" &
  child=$!
  # The deadline leads a process group of its own as well, so that stopping it stops its sleep.
  setsid sh -c 'sleep "$1"
    printf "reload-sidecar: reload timed out after %ss; TERM to its process group, KILL 5s later\n" "$1"
    kill -TERM -"$2" 2>/dev/null || exit 0
    sleep 5; kill -KILL -"$2" 2>/dev/null' deadline "$(secs "$TIMEOUT_MS")" "$child" &
  watchdog=$!
  wait "$child"
  rc=$?
  stop_watchdog
  child=
  return "$rc"
}

# The group, or the process itself if it has not called setsid yet (then it has no sleep to leave).
stop_watchdog() {
  kill -KILL -"$watchdog" 2>/dev/null || kill -KILL "$watchdog" 2>/dev/null
  wait "$watchdog" 2>/dev/null
  watchdog=
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
  # The one pattern the script expands.
  set +f
  set -- /proc/[0-9]*
  set -f
  for p in "$@"; do
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

# All keys at once, the kubelet's atomic writer's own pattern: the copies go into a new hidden
# directory (..a or ..b, whichever ..data does not point to), then one rename of a symlink over
# ..data switches every key; each key is a symlink <key> -> ..data/<key>. A reader sees the old
# set or the new one, never a mix; a copy that fails (a full folder) leaves the old set in place.
# Names starting with ".." are never Secret keys, so they never collide with one.
sync_files() {
  next=..a
  [ "$SYNC_DIR/..data" -ef "$SYNC_DIR/..a" ] && next=..b
  rm -rf "${SYNC_DIR:?}/$next" "$SYNC_DIR/..data_tmp" && mkdir "$SYNC_DIR/$next" || return 1
  for key in $KEYS; do
    if ! bounded cp "$WATCH_DIR/$key" "$SYNC_DIR/$next/$key"; then
      rm -rf "${SYNC_DIR:?}/$next"
      return 1
    fi
  done
  ln -s "$next" "$SYNC_DIR/..data_tmp" && mv -f -T "$SYNC_DIR/..data_tmp" "$SYNC_DIR/..data" || return 1
  for key in $KEYS; do
    [ -L "$SYNC_DIR/$key" ] && continue
    # A plain copy from an earlier layout is replaced by the link in one rename too.
    ln -s "..data/$key" "$SYNC_DIR/..link_tmp" && mv -f -T "$SYNC_DIR/..link_tmp" "$SYNC_DIR/$key" || return 1
  done
  previous=..a
  [ "$next" = ..a ] && previous=..b
  rm -rf "${SYNC_DIR:?}/$previous"
}

run_action() {
  case $ACTION in
    exec) bounded "$@" ;;
    signal) send_signal ;;
    http) bounded wget -q -O /dev/null --post-data= "$RELOAD_URL" ;;
    sync) sync_files ;;
  esac
}

# The record of what the application has, replaced in one rename so that a kill mid-write leaves
# the old record (and a reload again), never a torn one.
record() {
  printf '%s\n' "$1" >"$STATE_DIR/..reloaded.tmp" && mv -f "$STATE_DIR/..reloaded.tmp" "$RECORD" \
    || die "cannot write $RECORD"
}

# Reloads until it succeeds, re-reading the fingerprint before each attempt so that quick
# successive rotations end on the latest content, then records what the application now has.
reload_until_done() {
  delay=$BACKOFF_MS
  failures=0
  while :; do
    fresh=$(fingerprint 2>/dev/null) && [ -n "$fresh" ] && current=$fresh
    run_action "$@" && break
    failures=$((failures + 1))
    if [ "$failures" -ge "$UNHEALTHY_AFTER" ] && [ ! -e "$UNHEALTHY" ]; then
      printf '%s failed reloads in a row\n' "$failures" >"$UNHEALTHY"
      log "unhealthy: $failures reloads failed in a row; the liveness probe fails until one succeeds"
    fi
    log "reload failed ($failures in a row); retrying in $(secs "$delay")s"
    pause "$delay"
    delay=$((delay * 2))
    [ "$delay" -le "$BACKOFF_MAX_MS" ] || delay=$BACKOFF_MAX_MS
  done
  record "$current"
  last=$current
  rm -f "$UNHEALTHY"
}

# A restarted sidecar starts healthy and tries again; the kubelet keeps the restart count.
rm -f "$UNHEALTHY"
current=$(fingerprint 2>&1) || die "cannot fingerprint $WATCH_DIR with $HASH: $current"
[ -n "$current" ] || die "the fingerprint of $WATCH_DIR came back empty ($HASH printed nothing)"

if [ "${RUN_ONCE:-0}" = 1 ]; then
  run_action "$@" || die "initial $ACTION failed"
  record "$current"
  log "initial $ACTION done"
  exit 0
fi

if [ -f "$RECORD" ]; then
  last=$(cat "$RECORD") || die "cannot read $RECORD"
  if [ "$current" != "$last" ]; then
    log "$WATCH_DIR changed since the last reload (a rotation while the sidecar was down or reloading); reloading"
    reload_until_done "$@"
    log "reloaded after a change in $WATCH_DIR"
  fi
else
  # A new pod. The sidecar starts before the application (a native sidecar, whose startup probe
  # waits for the record): the application starts on the content recorded here, or a newer one,
  # which only costs one reload more. Sync makes the first copies first, so they exist before the
  # application starts; a failure exits, and the restarted sidecar tries again.
  if [ "$ACTION" = sync ]; then
    run_action "$@" || die "initial sync failed"
    log "initial sync done"
  fi
  record "$current"
  last=$current
fi
log "watching $KEYS in $WATCH_DIR every $(secs "$POLL_MS")s with $HASH; on a change: $ACTION"

misses=0
while :; do
  pause "$POLL_MS"
  if ! current=$(fingerprint 2>&1) || [ -z "$current" ]; then
    # One miss can be a race with the kubelet removing the previous timestamped directory. A
    # sidecar that exits loses nothing: the record makes it reload when it is back.
    misses=$((misses + 1))
    [ "$misses" -lt 3 ] || die "cannot fingerprint $WATCH_DIR three times in a row: ${current:-empty output}"
    log "cannot fingerprint $WATCH_DIR (${current:-empty output}); retrying at the next poll"
    continue
  fi
  misses=0
  [ "$current" = "$last" ] && continue
  reload_until_done "$@"
  log "reloaded after a change in $WATCH_DIR"
done
