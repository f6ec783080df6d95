"""A 2-rank DDP training job whose rank 1 takes a heavier batch (issue 27's job): an MLP trained
on random data with torch.distributed (nccl), each rank on its own GPU (LOCAL_RANK), so that under
one budget on every device only rank 1 runs out of memory and rank 0 is left waiting in the
gradient all-reduce. Runs with any number of ranks (--nproc-per-node 1 too).

  torchrun --standalone --nproc-per-node 2 tests/data/exec/ddp_uneven.py --batch0 1024 \
      --batch1 8192 --steps 10

Prints one line per step on each rank ("rank R step S loss L reserved M MiB") and, at the end,
each rank's peak reserved memory. Uncaught errors are written to torchrun's error file (@record).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch0", type=int, default=1024, help="rank 0's batch (and every rank but 1)")
    p.add_argument("--batch1", type=int, default=8192, help="rank 1's batch")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--layers", type=int, default=6)
    return p.parse_args()


@record
def main():
    args = parse()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    rank = dist.get_rank()
    batch = args.batch1 if rank == 1 else args.batch0
    torch.manual_seed(rank)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(args.hidden, 10)).cuda()
    model = DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    start = time.time()
    for step in range(args.steps):
        x = torch.randn(batch, args.hidden, device="cuda")
        y = torch.randint(0, 10, (batch,), device="cuda")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # DDP's all-reduce: a rank that failed leaves the others waiting here
        optimizer.step()
        print("rank %d step %d loss %.4f reserved %d MiB" %
              (rank, step, loss.item(), torch.cuda.memory_reserved() >> 20), flush=True)
    torch.cuda.synchronize()
    print("rank %d done: batch %d, %d steps in %.1f s, peak reserved %d MiB" %
          (rank, batch, args.steps, time.time() - start, torch.cuda.max_memory_reserved() >> 20),
          flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
