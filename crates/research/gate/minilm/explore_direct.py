#!/usr/bin/env python3
import sys, time
import numpy as np
from fitopt import loso_direct
from fitlib import SOURCES
for line in sys.stdin.read().strip().splitlines():
    f = line.split(); t0 = time.time()
    r = loso_direct(f)
    mb = {k.replace('_np', ''): v for k, v in r['banking']['metrics'].items()}
    per = " ".join(f"{x}:{r[x]['obj']:.3f}" for x in SOURCES)
    b, w = r["all"]["coef"]
    print(f"{r['mean']:.4f} | {per} | bankOOS in {mb['banking']['in_right']:.3f} id {mb['banking']['id-oos_refused']:.3f} | bank77 {mb['bank77']['in_right']:.3f} | {' '.join(f)} | all: b={b:.3f} w={np.round(w,3).tolist()} train={r['all']['train']:.4f} ({time.time()-t0:.0f}s)", flush=True)
