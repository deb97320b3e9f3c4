# The model-download init container of every serving engine: argv[1] is the engine (tgi, vllm,
# sglang), argv[2] the model (`org/name`, or vLLM's `org/name:QUANT` GGUF form), argv[3] the revision
# ('' for the default branch); for a LoRA adapter, argv[4] is a path to link to the complete snapshot
# (the server names it before the commit is known) and argv[5] the largest LoRA rank the server
# accepts ('' for no check). It fills the hub cache (HF_HOME / HF_HUB_CACHE, the layout
# huggingface_hub and TGI's router read) with what the engine's server and router open offline,
# and nothing else.
#
# Why not snapshot_download or TGI's download-weights:
# - TGI's `text-generation-server download-weights` fetches config.json and the weights only
#   (server/text_generation_server/cli.py, utils/hub.py), while the router reads tokenizer.json,
#   tokenizer_config.json and the chat template from the cache (router/src/server.rs) and the
#   server loads the tokenizer first: offline, a cache it filled fails ("Can't load tokenizer").
# - snapshot_download falls back to the partial local snapshot when a retry's repo_info call fails
#   (its refs/main was written first), so a shard can be missing after "done"; its per-file
#   `.incomplete` file and flock are shared between replicas on one cache, which NFS `nolock`
#   turns into concurrent appends.
# So: the revision is resolved to a commit once (model_info with files_metadata=True, which also
# gives every file's size, git blob sha1 and, for LFS files, sha256); each file is fetched by the
# real hf_hub_download pinned to that commit into a private cache of this filler, checked against
# those checksums, and renamed into the shared cache (same filesystem: the rename is atomic, so
# readers see a whole verified file or none). refs/<revision> and a completion marker per model,
# commit and selection are written only after every file is in place; a warm start that finds the
# marker makes no network call at all.
import fnmatch
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

ENGINE, MODEL, REVISION = sys.argv[1], sys.argv[2], sys.argv[3] or None
LINK = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
MAX_RANK = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] else None


def log(msg):
    print(f"model-download: {msg}", flush=True)


def fail(msg):
    log(f"error: {msg}")
    sys.exit(1)


def env_num(name, default):
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        fail(f"{name} must be a number (got {os.environ[name]!r})")


# The whole download's deadline: past it the init container exits non-zero and the kubelet
# restarts it (with back-off) instead of waiting forever.
DEADLINE = time.monotonic() + env_num("DOWNLOAD_DEADLINE_SECONDS", 6 * 3600)
# A file that grows less than STALL_BYTES (or to its end) in STALL_SECONDS is a stalled transfer
# (a server trickling a byte every few seconds never trips a read timeout): its fetch is killed
# and retried.
STALL_SECONDS = env_num("DOWNLOAD_STALL_SECONDS", 120)
STALL_BYTES = env_num("DOWNLOAD_STALL_BYTES", 1 << 20)
# A download lock whose holder stopped refreshing it this long ago is broken (its holder died).
LOCK_STALE = env_num("DOWNLOAD_LOCK_STALE_SECONDS", 60)
ATTEMPTS = int(env_num("DOWNLOAD_ATTEMPTS", 6))
# Back-off between attempts: BACKOFF x 2^n seconds, at most 30.
BACKOFF = env_num("DOWNLOAD_BACKOFF_SECONDS", 1)
# huggingface_hub's per-request timeouts (constants.py: HF_HUB_ETAG_TIMEOUT, HF_HUB_DOWNLOAD_TIMEOUT,
# 10 s by default in 1.x and 2.0), read when it is imported.
os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "30")
os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "30")

from huggingface_hub import constants  # noqa: E402  (after the timeouts above)

# This filler's name: the pod name, stable across restarts of its init container, so a restart
# resumes its own partial files; two pods never share one.
FILLER = re.sub(r"[^A-Za-z0-9_.-]", "_", os.environ.get("HOSTNAME") or socket.gethostname())

repo, _, quant = MODEL.partition(":")
# vLLM's `repo_id:quant_type` form loads the GGUF file of that quantization from the repository
# (docs/features/quantization/gguf.md).
HUB = constants.HF_HUB_CACHE
REPO_DIR = os.path.join(HUB, "models--" + repo.replace("/", "--"))
OWN = os.path.join(HUB, ".cdk8s-gpu")
SELECTION = ENGINE + (f"-gguf-{quant}" if quant else "")
SHA = re.compile(r"^[0-9a-f]{40}$")


def marker(sha):
    return os.path.join(OWN, "complete", os.path.basename(REPO_DIR), f"{sha}.{SELECTION}.json")


def write_atomic(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{FILLER}-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def complete(sha):
    """Whether the marker of this commit is there and every file it lists is in the snapshot."""
    try:
        with open(marker(sha)) as f:
            files = json.load(f)["files"]
    except (OSError, ValueError, KeyError):
        return False
    for name, size in files.items():
        p = os.path.join(REPO_DIR, "snapshots", sha, name)
        if not os.path.isfile(p) or (size is not None and os.path.getsize(p) != size):
            log(f"{name} is missing or changed in the cached snapshot {sha}: not complete")
            return False
    return True


def cached_commit():
    if REVISION and SHA.match(REVISION):
        return REVISION
    try:
        with open(os.path.join(REPO_DIR, "refs", REVISION or "main")) as f:
            return f.read().strip()
    except OSError:
        return None


def finish(sha):
    """For an adapter: check its rank against the server's limit, then link the snapshot (atomically)."""
    if not LINK:
        return
    snapshot = os.path.join(REPO_DIR, "snapshots", sha)
    if MAX_RANK is not None:
        try:
            with open(os.path.join(snapshot, "adapter_config.json")) as f:
                rank = json.load(f).get("r")
        except (OSError, ValueError) as e:
            fail(f"{MODEL}@{sha} is not a LoRA adapter: no readable adapter_config.json ({e})")
        # PEFT's LoraConfig: `r` is the rank; a server started with a smaller maximum refuses the adapter.
        if not isinstance(rank, int) or rank > MAX_RANK:
            fail(f"{MODEL}@{sha} has LoRA rank {rank}, above the server's maximum {MAX_RANK} (raise maxLoraRank)")
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    tmp = f"{LINK}.tmp-{FILLER}-{os.getpid()}"
    if os.path.lexists(tmp):
        os.remove(tmp)
    # Relative, so the link holds wherever the cache volume is mounted.
    os.symlink(os.path.relpath(snapshot, os.path.dirname(LINK)), tmp)
    os.replace(tmp, LINK)
    log(f"{LINK} -> {snapshot}")


# A warm, complete cache: no network call. An unpinned revision stays on the commit its ref names
# until the cache is cleared or a revision is pinned.
warm = cached_commit()
if warm and complete(warm):
    log(f"{MODEL}@{warm}: complete in the cache ({marker(warm)}), nothing to download")
    finish(warm)
    sys.exit(0)

# Wait mode (MODEL_CACHE_WAIT_SECONDS set): the serving pods of a shared cache that a fill Job
# (MODEL_CACHE_FILL_JOB) fills. No network call, ever: poll for the ref and the completion marker
# the filler writes only after every file is verified in place, then go on as a warm start. Past
# the deadline, exit non-zero: the kubelet restarts the wait with back-off, and the pod shows why.
if os.environ.get("MODEL_CACHE_WAIT_SECONDS") is not None:
    wait_for = env_num("MODEL_CACHE_WAIT_SECONDS", 0)
    poll = env_num("MODEL_CACHE_WAIT_POLL_SECONDS", 10)
    job = os.environ.get("MODEL_CACHE_FILL_JOB") or "the fill Job"
    until = time.monotonic() + wait_for
    log(f"waiting up to {wait_for:g} s for {job} to fill {MODEL}@{REVISION or 'main'} (no download here)")
    while True:
        warm = cached_commit()
        if warm and complete(warm):
            log(f"{MODEL}@{warm}: complete in the cache ({marker(warm)}), filled by {job}")
            finish(warm)
            sys.exit(0)
        if time.monotonic() >= until:
            fail(f"{MODEL}@{REVISION or 'main'} is not complete in the cache after {wait_for:g} s: see kubectl logs job/{job}")
        time.sleep(max(0.05, min(poll, until - time.monotonic())))


def on_deadline(*_):
    raise TimeoutError("DOWNLOAD_DEADLINE_SECONDS passed")


signal.signal(signal.SIGALRM, on_deadline)
signal.alarm(max(1, int(DEADLINE - time.monotonic())))

from huggingface_hub import HfApi  # noqa: E402

PERMANENT = (401, 403, 404)


def status_of(e):
    return getattr(getattr(e, "response", None), "status_code", None)


def resolve():
    """The commit and file metadata, retried on server errors and rate limits, never guessed."""
    for attempt in range(ATTEMPTS):
        try:
            return HfApi().model_info(repo, revision=REVISION, files_metadata=True)
        except TimeoutError:
            raise
        except Exception as e:
            code = status_of(e)
            if code in PERMANENT:
                fail(f"{repo}@{REVISION or 'main'}: the hub answered {code} ({type(e).__name__}); check the model id, revision and HF_TOKEN")
            log(f"resolving {repo}@{REVISION or 'main'} failed ({code or type(e).__name__}), attempt {attempt + 1} of {ATTEMPTS}")
            time.sleep(min(BACKOFF * 2**attempt, 30))
    fail(f"could not resolve {repo}@{REVISION or 'main'} after {ATTEMPTS} attempts")


try:
    info = resolve()
except TimeoutError as e:
    fail(str(e))
sha = info.sha
if sha and complete(sha):
    write_atomic(os.path.join(REPO_DIR, "refs", REVISION or "main"), sha) if not (REVISION and SHA.match(REVISION)) else None
    log(f"{MODEL}@{sha}: completed by another replica, nothing to download")
    finish(sha)
    sys.exit(0)


def lfs_sha256(s):
    lfs = getattr(s, "lfs", None)
    if lfs is None:
        return None
    return getattr(lfs, "sha256", None) or (lfs.get("sha256") if isinstance(lfs, dict) else None)


meta = {s.rfilename: (s.size, getattr(s, "blob_id", None), lfs_sha256(s)) for s in info.siblings}
top = [f for f in meta if "/" not in f]

# Weight formats: vLLM and SGLang load the first of *.safetensors, *.bin, *.pt the top level has
# (download_weights_from_hf in vllm/model_executor/model_loader/weight_utils.py, SGLang's copy);
# the others are never read. Meta's original/ holds consolidated checkpoints no engine reads.
LOADED = ["*.safetensors", "*.bin", "*.pt"]
WEIGHTS = LOADED + ["*.pth", "*.msgpack", "*.h5", "*.onnx", "*.onnx_data", "*.ot", "*.gguf", "*.tflite", "*.mlmodel", "*.ckpt", "*.npz"]


def weight(f):
    return any(fnmatch.fnmatch(f, p) for p in WEIGHTS)


# Every other top-level file is small and some engine reads it offline: config.json,
# generation_config.json, the tokenizer (tokenizer.json, tokenizer_config.json, tokenizer.model,
# vocab/merges, special_tokens_map.json, added_tokens.json: transformers' AutoTokenizer), the chat
# template (chat_template.jinja / chat_template.json, or inside tokenizer_config.json; TGI's router
# reads tokenizer_config.json and the template, router/src/server.rs), preprocessor and processor
# configs, params.json for Mistral-format checkpoints. additional_chat_templates/ holds named
# templates transformers also loads.
wanted = [f for f in top if not weight(f)] + [f for f in meta if f.startswith("additional_chat_templates/")]

if quant:
    ggufs = [f for f in meta if f.endswith(".gguf") and quant.lower() in os.path.basename(f).lower()]
    if not ggufs:
        fail(f"{repo} has no .gguf file for {quant} (it has: {' '.join(f for f in meta if f.endswith('.gguf')) or 'none'})")
    weights = ggufs
elif ENGINE == "tgi":
    # TGI loads *.safetensors only (utils/hub.py weight_files / _cached_weight_files glob them in
    # the snapshot offline); its download-weights converts .bin checkpoints, this download does not.
    weights = [f for f in top if f.endswith(".safetensors")]
    if not weights:
        fail(f"{repo} has no .safetensors weights at its top level: TGI loads only those (its download-weights would convert .bin files; convert the checkpoint, or serve it with vLLM or SGLang)")
else:
    chosen = next((p for p in LOADED if fnmatch.filter(top, p)), None)
    if chosen is None:
        fail(f"{repo} has no weights ({' '.join(LOADED)}) at its top level; for a GGUF repository give the model as {repo}:QUANT")
    weights = fnmatch.filter(top, chosen)

INDEX = "model.safetensors.index.json"

if not quant and INDEX in meta and any(w.endswith(".safetensors") for w in weights):
    weights = None  # decided once the index is in the cache: see below


# ---- fetching one file ---------------------------------------------------------------------------

PRIVATE = os.path.join(OWN, "tmp", FILLER)
LOCKS = os.path.join(OWN, "locks", os.path.basename(REPO_DIR))
# One process fetches a batch of files in turn (one import of huggingface_hub), writing each
# finished name to a file the parent watches; the parent can kill it when it stalls.
CHILD = r"""
import sys
from huggingface_hub import hf_hub_download
repo, sha, cache, done = sys.argv[1:5]
for name in sys.argv[5:]:
    try:
        hf_hub_download(repo, name, revision=sha, cache_dir=cache)
    except Exception as e:
        code = getattr(getattr(e, "response", None), "status_code", None)
        print(f"model-download: {name}: {code or ''} {type(e).__name__}: {(str(e).splitlines() or [''])[0]}", flush=True)
        sys.exit(3 if code in (401, 403, 404) else 1)
    with open(done, "a") as f:
        f.write(name + "\n")
"""


def digest(path, algo):
    h = hashlib.new(algo)
    if algo == "sha1":  # a git blob id: sha1 of "blob <size>\0" + content
        h.update(b"blob %d\0" % os.path.getsize(path))
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verified(path, name):
    size, blob, sha256 = meta[name]
    if not os.path.isfile(path) or (size is not None and os.path.getsize(path) != size):
        return False
    if sha256:
        return digest(path, "sha256") == sha256
    return blob is None or digest(path, "sha1") == blob


def private_bytes():
    blobs = os.path.join(PRIVATE, os.path.basename(REPO_DIR), "blobs")
    try:
        return sum(e.stat().st_size for e in os.scandir(blobs))
    except OSError:
        return 0


def drop_partials():
    shutil.rmtree(os.path.join(PRIVATE, os.path.basename(REPO_DIR), "blobs"), ignore_errors=True)
    shutil.rmtree(os.path.join(PRIVATE, os.path.basename(REPO_DIR), "snapshots"), ignore_errors=True)


def heartbeat(lock):
    try:
        os.utime(lock)
    except OSError:
        pass


def fetch(locks):
    """Fetches the locked files in one child process, placing each verified file as it finishes.
    Returns the names placed and whether the child failed (stalled, errored or wrong bytes)."""
    names = list(locks)
    done_file = os.path.join(PRIVATE, f"done-{os.getpid()}")
    if os.path.exists(done_file):
        os.unlink(done_file)
    child = subprocess.Popen([sys.executable, "-c", CHILD, repo, sha, PRIVATE, done_file, *names])
    placed, bad = set(), False
    mark, window, last_beat = private_bytes(), time.monotonic(), time.monotonic()

    def collect():
        nonlocal bad
        try:
            with open(done_file) as f:
                finished = [n for n in f.read().split("\n") if n and n not in placed]
        except FileNotFoundError:
            return 0
        for name in finished:
            snap = os.path.realpath(os.path.join(PRIVATE, os.path.basename(REPO_DIR), "snapshots", sha, name))
            placed.add(name)
            if verified(snap, name):
                place(snap, name)
                log(f"{name}: verified")
            else:
                log(f"{name}: checksum or size differs from the hub's, discarding it")
                placed.discard(name)
                bad = True
                for p in (snap, os.path.join(PRIVATE, os.path.basename(REPO_DIR), "snapshots", sha, name)):
                    if os.path.lexists(p):
                        os.unlink(p)
        return len(finished)

    try:
        while child.poll() is None:
            time.sleep(0.2)
            now = time.monotonic()
            if now - last_beat > LOCK_STALE / 4:
                for lock in locks.values():
                    heartbeat(lock)
                last_beat = now
            finished = collect()
            if finished:
                window, mark = now, private_bytes()
            elif now - window >= STALL_SECONDS:
                grown = private_bytes() - mark
                if grown < STALL_BYTES:
                    log(f"{grown} bytes in {STALL_SECONDS:g} s, stalled: retrying")
                    child.kill()
                    child.wait()
                    break
                window, mark = now, private_bytes()
    except BaseException:
        child.kill()
        child.wait()
        raise
    collect()
    if child.returncode == 3:
        fail("the hub refused a file (see above); check the model id, revision and HF_TOKEN")
    return placed, bad or child.returncode != 0


def place(src, name):
    """Renames a verified blob into the shared cache and links the snapshot to it, both atomically."""
    blob = os.path.join(REPO_DIR, "blobs", os.path.basename(src))
    os.makedirs(os.path.dirname(blob), exist_ok=True)
    os.replace(src, blob)
    link(blob, name)


def link(blob, name):
    path = os.path.join(REPO_DIR, "snapshots", sha, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{FILLER}-{os.getpid()}"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(os.path.relpath(blob, os.path.dirname(path)), tmp)
    os.replace(tmp, path)


def shared_verified(name):
    """A file another filler (or an earlier run) already placed, checked, never trusted."""
    path = os.path.join(REPO_DIR, "snapshots", sha, name)
    if verified(path, name):
        return True
    # The blob of this content may be there already under another commit's snapshot.
    size, blob, sha256 = meta[name]
    for key in (sha256, blob):
        candidate = key and os.path.join(REPO_DIR, "blobs", key)
        if candidate and verified(candidate, name):
            link(candidate, name)
            return True
    return False


def try_lock(name):
    """An O_EXCL lock file per file, refreshed while held: no flock/fcntl, which NFS `nolock` lacks.
    A lock not refreshed for LOCK_STALE seconds is broken. It only spares duplicate downloads: a
    filler that loses its lock still writes nothing but a verified whole file by rename."""
    lock = os.path.join(LOCKS, hashlib.sha256(f"{sha}/{name}".encode()).hexdigest() + ".lock")
    os.makedirs(LOCKS, exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            os.write(fd, f"{FILLER} {name}\n".encode())
            os.close(fd)
            return lock
        except FileExistsError:
            try:
                age = time.time() - os.stat(lock).st_mtime
            except FileNotFoundError:
                continue
            if age < LOCK_STALE:
                return None
            log(f"{name}: breaking a lock not refreshed for {age:.0f} s")
            try:
                os.replace(lock, f"{lock}.broken-{FILLER}")
                os.unlink(f"{lock}.broken-{FILLER}")
            except FileNotFoundError:
                pass
    return None


def unlock(lock):
    try:
        os.unlink(lock)
    except FileNotFoundError:
        pass


def fill(names):
    pending, failures = list(names), 0
    while True:
        pending = [n for n in pending if not shared_verified(n)]
        if not pending:
            return
        locks = {}
        for name in pending:
            lock = try_lock(name)
            if lock:
                locks[name] = lock
        if not locks:
            # Every remaining file is being fetched by another filler: wait for it.
            time.sleep(0.5)
            continue
        try:
            # Another filler may have finished one between the check and the lock.
            for name in [n for n in locks if shared_verified(n)]:
                unlock(locks.pop(name))
            placed, failed = fetch(locks) if locks else (set(), False)
        finally:
            for lock in locks.values():
                unlock(lock)
        pending = [n for n in pending if n not in placed]
        if failed:
            failures += 1
            if failures >= ATTEMPTS or time.monotonic() > DEADLINE:
                fail(f"{' '.join(pending)}: no verified copy after {failures} attempts")
            if failures >= 2:
                # A partial file that failed twice may be what fails (a proxy ignoring Range answers
                # a resume with 416 forever; a corrupted partial is resumed): start afresh.
                drop_partials()
            time.sleep(min(BACKOFF * 2**failures, 30))


def clean_private():
    # Locks huggingface_hub left in this filler's private cache belong to a dead run of it (a
    # restarted init container): a soft lock file there would hang the next hf_hub_download.
    shutil.rmtree(os.path.join(PRIVATE, ".locks"), ignore_errors=True)
    os.makedirs(PRIVATE, exist_ok=True)


try:
    clean_private()
    log(f"{MODEL}@{REVISION or 'main'} is commit {sha}")
    if weights is None:
        fill([INDEX])
        with open(os.path.join(REPO_DIR, "snapshots", sha, INDEX)) as f:
            # vLLM's filter_duplicate_safetensors_files: with an index, only the files of its
            # weight_map are loaded (a consolidated copy next to the shards is not).
            weights = sorted(set(json.load(f)["weight_map"].values()))
    missing = [w for w in weights if w not in meta]
    if missing:
        fail(f"{INDEX} names files the repository does not have: {' '.join(missing)}")
    files = sorted(set(wanted) | set(weights))
    log(f"{len(files)} files for {ENGINE}: weights {' '.join(weights)}")
    fill(files)
except TimeoutError as e:
    fail(str(e))

write_atomic(marker(sha), json.dumps({"model": MODEL, "commit": sha, "engine": ENGINE, "files": {f: meta[f][0] for f in files}}, indent=1))
if not (REVISION and SHA.match(REVISION)):
    # The ref moves only to a complete snapshot: a restarting server never reads a half-filled one.
    write_atomic(os.path.join(REPO_DIR, "refs", REVISION or "main"), sha)
shutil.rmtree(PRIVATE, ignore_errors=True)
finish(sha)
log("done")
