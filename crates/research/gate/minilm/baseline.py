#!/usr/bin/env python3
"""Today's MiniLM gate through the engine (the engine's own relevance, default threshold 0.5),
and the gate off, per set. Usage: baseline.py set..."""
import sys
from gate import S, fmt
for name in sys.argv[1:]:
    s = S(name)
    m = s.metrics(s.rel >= 0.5)
    print(f"{name:9} today: {fmt(m)}  n={m['n']}")
    print(f"{'':9} gate off: in_right={s.gate_off_top1():.3f}")
