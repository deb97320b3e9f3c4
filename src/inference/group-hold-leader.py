# The preStop hook of a multi-node serving worker whose engines keep their connections to the
# leader on ports the leader picks at run time (vLLM's data-parallel engines: their sockets to the
# leader's front end and coordinator); argv[1] the longest hold in seconds (preStop + drain, within
# the grace period). group-hold.py is the same hold on a fixed rendezvous port.
#
# A worker holds while it has an ESTABLISHED connection to the leader's address
# (LWS_LEADER_ADDRESS, which LeaderWorkerSet sets in every container of the group), that is while
# the leader's engine runs: the leader's in-flight requests run on every rank, so a worker that
# stopped first would fail them. A connection leaves ESTABLISHED (CLOSE_WAIT) when the leader's
# process exits, and a leader whose name no longer resolves is gone: a worker deleted after its
# leader stops at once. /proc/net/tcp{,6} list the sockets of the pod's network namespace, which
# the hook shares; they write an address as 32-bit words in host (little-endian) order.
import ipaddress
import os
import socket
import sys
import time

DEADLINE = time.monotonic() + float(sys.argv[1])
ESTABLISHED = "01"


def leader_addresses():
    try:
        infos = socket.getaddrinfo(os.environ["LWS_LEADER_ADDRESS"], None, proto=socket.IPPROTO_TCP)
    except (KeyError, OSError):
        return set()
    return {ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos}


def address(hex_ip):
    raw = bytes.fromhex(hex_ip)
    ip = ipaddress.ip_address(b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)))
    return (ip.ipv4_mapped or ip) if ip.version == 6 else ip


LEADER = leader_addresses()


def connected():
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == ESTABLISHED and address(fields[2].rsplit(":", 1)[0]) in LEADER:
                        return True
        except (OSError, StopIteration, IndexError, ValueError):
            continue
    return False


while LEADER and connected() and time.monotonic() < DEADLINE:
    time.sleep(1)
