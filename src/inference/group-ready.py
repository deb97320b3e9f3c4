# The readiness probe of a group whose every pod serves (vLLM's per-rank servers on every pod of a LeaderWorkerSet
# group): argv[1] is the port of each pod's supervisor, whose /health answers 200 while all of that pod's ranks serve
# and 503 from SIGTERM on.
#
# A pod is ready only while every pod of its group is: the experts' collectives need every rank, so a pod whose peer
# stopped cannot finish a request, yet its own supervisor still answers 200 (a rank's /health checks its own engine).
# Leaving the endpoints as soon as a peer drains stops new requests, which would keep the group's wave running on the
# draining peer until its shutdown timeout kills it, and lets the group's in-flight requests finish together.
#
# The pods' names come from LeaderWorkerSet's variables: LWS_LEADER_ADDRESS is `<leader>.<set>.<namespace>`, and a
# worker `i` of the group is `<leader>-<i>` under the same subdomain (its StatefulSet's pod, LWS's shared headless
# Service), for i in 1 .. LWS_GROUP_SIZE - 1.
import os
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor

PORT = int(sys.argv[1])
# Each connect and read within this; the probe's own timeout is longer.
TIMEOUT_SECONDS = 2
# Straight to the pods: a proxy from the container's http_proxy variables would stand between them, or refuse them.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def pods():
    leader = os.environ["LWS_LEADER_ADDRESS"]
    name, domain = leader.split(".", 1)
    size = int(os.environ["LWS_GROUP_SIZE"])
    return [leader] + ["%s-%d.%s" % (name, i, domain) for i in range(1, size)]


def health(pod):
    try:
        with OPENER.open("http://%s:%d/health" % (pod, PORT), timeout=TIMEOUT_SECONDS) as r:
            return pod, r.status == 200, str(r.status)
    except Exception as e:  # refused, unresolvable, timed out, 503: not serving
        return pod, False, str(e)


group = pods()
with ThreadPoolExecutor(max_workers=len(group)) as pool:
    answers = list(pool.map(health, group))
down = ["%s (%s)" % (pod, why) for pod, ok, why in answers if not ok]
if down:
    print("group not serving: " + ", ".join(down))
    sys.exit(1)
