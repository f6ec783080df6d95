#!/usr/bin/env python3
"""make_rmm_log.py ROWS OUT: a synthetic RMM log (rmm::mr::logging_resource_adaptor's CSV) of ROWS
rows, for the memory and frontier figures of bench/README.md: up to 2048 blocks live, sizes
256 B to 1 MiB (log-uniform), one row a microsecond, half allocations and half frees once blocks
are live. Deterministic (seed 7). 100M rows make a 4.8 GB file: generate it, don't commit it."""
import random, sys
rows, out = int(sys.argv[1]), sys.argv[2]
rng = random.Random(7)
live = []
addr = 0x7f0000000000
with open(out, "w") as f:
    f.write("Thread,Time,Action,Pointer,Size,Stream\n")
    buf = []
    for i in range(rows):
        us = i
        t = "%02d:%02d:%02d.%06d" % ((us // 3600000000) % 24, (us // 60000000) % 60, (us // 1000000) % 60, us % 1000000)
        if live and (len(live) >= 2048 or rng.random() < 0.5):
            k = rng.randrange(len(live))
            a, s = live[k]
            live[k] = live[-1]; live.pop()
            buf.append("1,%s,free,0x%x,%d,0\n" % (t, a, s))
        else:
            s = int(2 ** (8 + rng.random() * 12))
            buf.append("1,%s,allocate,0x%x,%d,0\n" % (t, addr, s))
            live.append((addr, s)); addr += 1 << 20
        if len(buf) >= 100000:
            f.write("".join(buf)); buf = []
    f.write("".join(buf))
