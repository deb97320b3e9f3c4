# The preStop hook of a multi-node serving worker: argv[1] is the group's rendezvous port on the
# leader (vLLM --master-port, SGLang --dist-init-addr), argv[2] the longest hold in seconds
# (preStop + drain, within the grace period).
#
# A worker holds while its engine still has an ESTABLISHED connection to that port, that is while
# the leader's engine runs: the leader's in-flight requests run on every rank, so a worker that
# stopped first would fail them. The connection is the torch.distributed store client every rank
# keeps for the life of its process group; it leaves ESTABLISHED (CLOSE_WAIT) when the leader's
# process exits. So a worker evicted under a serving leader holds through the leader's drain, and a
# worker deleted after its leader is gone (a rolling update: LWS deletes the leader, the workers
# follow by garbage collection) stops at once instead of holding GPUs and its pod name for nothing.
# /proc/net/tcp{,6} list the sockets of the pod's network namespace, which the hook shares.
import sys
import time

PORT = "%04X" % int(sys.argv[1])
DEADLINE = time.monotonic() + float(sys.argv[2])
ESTABLISHED = "01"


def connected():
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[2].rsplit(":", 1)[1] == PORT and fields[3] == ESTABLISHED:
                        return True
        except (OSError, StopIteration, IndexError):
            continue
    return False


while connected() and time.monotonic() < DEADLINE:
    time.sleep(1)
