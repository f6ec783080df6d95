"""A Hugging Face GPT-2 (124M) training run on random tokens: bf16 autocast, AdamW, 1024 tokens.
Random weights from GPT2Config's defaults: nothing is downloaded.

  python3 gpt2_train.py --batch 6 --steps 3

Under a budget a little too small, this job fails in cuBLAS (CUBLAS_STATUS_ALLOC_FAILED when the
backward pass's thread creates its own cuBLAS handle) rather than in PyTorch's allocator.
"""
import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=6)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--seq", type=int, default=1024)
    args = p.parse_args()
    torch.manual_seed(0)
    config = GPT2Config()
    model = GPT2LMHeadModel(config).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    start = time.time()
    for step in range(args.steps):
        ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print("step %d loss %.3f reserved %d MiB" %
              (step, loss.item(), torch.cuda.memory_reserved() >> 20), flush=True)
    print("done: batch %d, %d steps in %.1f s, peak reserved %d MiB" %
          (args.batch, args.steps, time.time() - start, torch.cuda.max_memory_reserved() >> 20))


if __name__ == "__main__":
    main()
