"""A tiny data-parallel "training" for the launch wrapper's tests: gloo on the CPU, a few seconds.

Each worker appends what it does to $WORK/events (one line per event) and takes its faults from
files in $WORK, each named for the pod ordinal (NODE_RANK, set by the StatefulSet):
  crash-<node>        exit 1 after the first step, while the other ranks are in a collective
  fail-late-<node>    exit 1 after the last collective, while the other ranks finish
each holding how many more times (empty: every time)
  hang                keep stepping until stopped (a peer lost in a collective fails the others)
  idle                after the first step, wait until stopped without collectives (for SIGTERM
                      tests: a worker whose TERM comes a moment after its peer's must not fail in a
                      collective first)
"""
import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

work = os.environ["WORK"]
node = os.environ["NODE_RANK"]
rank = int(os.environ["RANK"])


def event(what):
    with open(os.path.join(work, "events"), "a") as f:
        f.write(f"{what} node={node} rank={rank} restart={os.environ.get('TORCHELASTIC_RESTART_COUNT')} pid={os.getpid()}\n")


def flag(name):
    return os.path.join(work, f"{name}-{node}")


def fault(name):
    """Whether to inject the fault `name` now, counting it down in its file."""
    path = flag(name)
    try:
        with open(path) as f:
            left = f.read().strip()
    except FileNotFoundError:
        return False
    if left == "1":
        os.remove(path)
    elif left:
        with open(path, "w") as f:
            f.write(str(int(left) - 1))
    return True


def on_term(signum, frame):
    # torchrun forwards the pod's SIGTERM to its workers: a real script would checkpoint here.
    event("term")
    sys.exit(143)


signal.signal(signal.SIGTERM, on_term)
event("start")
# A bound on the gang's re-rendezvous after an in-place restart: a round whose workers cannot
# connect fails (and torchrun restarts it) instead of hanging for gloo's default 30 minutes.
dist.init_process_group("gloo", timeout=timedelta(seconds=30))
steps = int(os.environ.get("STEPS", "3"))
step = 0
while step < steps or os.path.exists(os.path.join(work, "hang")) or os.path.exists(os.path.join(work, "idle")):
    if step >= 1 and os.path.exists(os.path.join(work, "idle")):
        time.sleep(0.1)
        continue
    t = torch.ones(4) * (rank + 1)
    dist.all_reduce(t)
    step += 1
    if step == 1:
        event("step")
    if step == 1 and fault("crash"):
        event("crash")
        sys.exit(1)
    time.sleep(0.1)
dist.barrier()
dist.destroy_process_group()
if fault("fail-late"):
    # After the last collective: the peers' workers have finished and their torchrun is in its exit barrier.
    time.sleep(0.5)
    event("fail-late")
    sys.exit(1)
event("done")
