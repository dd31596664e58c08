#!/usr/bin/python3
"""Ctrl-C during sbrank.analyse: SIGINT sent to the process while the Gram path runs over a
2.4 GB float32 array raises KeyboardInterrupt within a block (AnalyseOptions::poll, asked after
every block of 4096 rows and before the eigensolver), and the module works again afterwards.

The array (T = 100000, M = 6000; its rows a 10000-row random block repeated, which costs the
Gram pass what random rows do) makes the Gram pass ~3.6e12 flops, about a minute on 2 cores; one
block is 4096 / 100000 of it. The signal goes at 2 s; the test asserts KeyboardInterrupt came
within 10 s of it, or within twice a block's product measured first where a loaded machine
makes a block longer (a block and the time to notice, with room for the load to change between
the measurement and the run: 17.3 s against 1.5 x 10.7 s beside a build), and long before the
analysis would have ended. The size of a block, not of the matrix, sets the delay: a larger
matrix only lengthens what is saved. Argument 1: the build directory.
"""
import os
import signal
import sys
import threading
import time

build = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(build, "python"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fixtures"))
import numpy as np  # noqa: E402

import sbrank  # noqa: E402
from checks import check, finish  # noqa: E402

T, M, SIGNAL_AT, BLOCK = 100000, 6000, 2.0, 4096
rng = np.random.default_rng(0)
a = np.tile(rng.standard_normal((T // 10, M), dtype=np.float32), (10, 1))  # (T, M), 2.4 GB
# What one block costs on this machine now (a loaded machine stretches every block): the block's
# float64 product with itself, 2 BLOCK M^2 flops, twice the Gram update's BLOCK M^2. The signal
# must be answered within about a block: 10 s, or 2 of these where the machine is slower.
block = a[:BLOCK].astype(np.float64)
t0 = time.monotonic()
block.T @ block
block_seconds = time.monotonic() - t0
del block
limit = max(10.0, 2.0 * block_seconds)
lines = []
timer = threading.Timer(SIGNAL_AT, lambda: os.kill(os.getpid(), signal.SIGINT))
start = time.monotonic()
timer.start()
caught, result = None, None
try:
    result = sbrank.analyse(a, head="softmax", d=10, bias=1, method="gram", input="logits",
                            progress=lines.append, threads=2)
except KeyboardInterrupt:
    caught = time.monotonic()
timer.cancel()
delay = None if caught is None else caught - start - SIGNAL_AT
eta = [line for line in lines if "ETA" in line]
check(caught is not None and result is None,
      f"SIGINT during the Gram pass raises KeyboardInterrupt ({len(lines)} progress lines)")
check(delay is not None and 0 <= delay < limit,
      f"... within {limit:.1f} s of the signal (a block's product took {block_seconds:.1f} s): "
      f"{delay if delay is None else round(delay, 2)} s; last line {lines[-1] if lines else None!r}")
small = sbrank.analyse(a[:500, :300], head="softmax", d=10, bias=1, method="gram",
                       input="logits")
check(small["rank"] == 300, f"the module analyses again after the interrupt (rank {small['rank']})")
sys.exit(finish())
