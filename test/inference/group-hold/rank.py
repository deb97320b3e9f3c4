# One rank of a two-rank torch.distributed group on 127.0.0.1, as a multi-node serving group's
# engines join theirs: argv[1] rank, argv[2] the rendezvous port (the store on rank 0, the leader),
# argv[3] seconds to stay up after joining. Prints "up" once the group has formed.
import os
import sys
import time

import torch.distributed as dist

rank, port, stay = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
print("up", flush=True)
time.sleep(stay)
print("exiting", flush=True)
sys.stdout.flush()
os._exit(0)
