"""How the cudaMallocAsync pool behind PyTorch's `backend:cudaMallocAsync` places requests, and
how much of a ballasted card the driver really hands out: small experiments, each in a fresh
process, one JSON line each. What they show is the model in harness/src/allocators/torch/.

  python3 probe_async.py            all experiments
  python3 probe_async.py NAME       one, in this process (used by the above)
"""
import json
import os
import subprocess
import sys

MIB = 1 << 20


def alloc(torch, n):
    return torch.empty(n, dtype=torch.uint8, device="cuda")


def reserved(torch):
    return torch.cuda.memory_reserved()


def steps(torch, plan):
    """plan: list of ("a", name, MiB) or ("f", name); reports reserved and offsets after each."""
    held = {}
    out = []
    base = None
    for step in plan:
        if step[0] == "a":
            t = alloc(torch, int(step[2] * MIB))
            held[step[1]] = t
            ptr = t.data_ptr()
            base = ptr if base is None else base
            out.append([step[1], step[2], reserved(torch) // MIB, (ptr - base) / MIB])
        else:
            del held[step[1]]
            out.append(["free " + step[1], reserved(torch) // MIB])
    return out


def placement(torch):
    return {
        # does a request take the free tail of another request's chunk?
        "tail": steps(torch, [("a", "x", 40), ("a", "y", 10), ("a", "z", 20)]),
        # is a freed large chunk split for smaller requests, and reused whole?
        "split": steps(torch, [("a", "x", 100), ("f", "x"), ("a", "y", 50), ("a", "z", 50),
                               ("a", "w", 50)]),
        # do two freed chunks serve one request that spans both?
        "join": steps(torch, [("a", "x", 32), ("a", "y", 32), ("f", "x"), ("f", "y"),
                              ("a", "z", 64)]),
        # a free chunk too small for a request: kept beside the new one, or given to it?
        "grow": steps(torch, [("a", "x", 64), ("f", "x"), ("a", "y", 65)]),
        # best fit or first fit inside a chunk: holes of 10 and 6 MiB, then 5 MiB
        "fit": steps(torch, [("a", "a", 10), ("a", "b", 2), ("a", "c", 6), ("a", "d", 14),
                             ("f", "a"), ("f", "c"), ("a", "e", 5)]),
        # small requests: how many share a chunk, and where
        "small": steps(torch, [("a", f"s{i}", 0.1) for i in range(6)]),
    }


def ballast_leaving(torch, cupy, left):
    alloc(torch, 1)
    torch.cuda.empty_cache()
    free = torch.cuda.mem_get_info()[0]
    want = (free - left) // (2 * MIB) * (2 * MIB)
    return cupy.cuda.runtime.malloc(want), torch.cuda.mem_get_info()[0]


def driver_pages():
    """With a ballast leaving N MiB free (cudaMemGetInfo), how many 2 MiB cudaMallocs fit?"""
    import cupy
    import torch

    out = []
    for left in (64 * MIB, 512 * MIB, 2048 * MIB, 8192 * MIB):
        ballast, free = ballast_leaving(torch, cupy, left)
        got = []
        while True:
            try:
                got.append(cupy.cuda.runtime.malloc(2 * MIB))
            except cupy.cuda.runtime.CUDARuntimeError:
                break
        out.append({"free": free, "free_pages": free // (2 * MIB), "fitted": len(got)})
        for p in got:
            cupy.cuda.runtime.free(p)
        cupy.cuda.runtime.free(ballast)
    return {"pages": out}


def async_pressure(torch):
    """Under a ballast: which requests the pool serves when the device is full."""
    import cupy

    ballast, free = ballast_leaving(torch, cupy, 256 * MIB)
    result = {"free": free}
    try:
        result["steps"] = steps(torch, [("a", "x", 100), ("a", "y", 100), ("f", "x"),
                                        ("a", "z", 120), ("f", "y"), ("f", "z"), ("a", "w", 200)])
    except torch.OutOfMemoryError as e:
        result["oom"] = str(e).splitlines()[0][:160]
    torch.cuda.empty_cache()
    cupy.cuda.runtime.free(ballast)
    return result


EXPERIMENTS = {
    "placement": ("backend:cudaMallocAsync", placement),
    "async_pressure": ("backend:cudaMallocAsync", async_pressure),
    "driver_pages": ("", lambda torch: driver_pages()),
}


def main():
    if len(sys.argv) > 1:
        import torch

        name = sys.argv[1]
        try:
            result = EXPERIMENTS[name][1](torch)
        except Exception as e:  # noqa: BLE001 - reported, not raised
            result = {"error": repr(e)[:400]}
        print(json.dumps({"experiment": name, **result}), flush=True)
        return 0
    for name, (conf, _) in EXPERIMENTS.items():
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=conf)
        subprocess.run([sys.executable, os.path.abspath(__file__), name], env=env, check=False,
                       timeout=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
