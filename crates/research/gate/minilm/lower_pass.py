#!/usr/bin/env python3
"""With today's gate: how often is the answer (first passing candidate) not the engine's top
candidate, and is it right then? And the same gate restricted to the engine's top
candidate ("the top or nothing")."""
import numpy as np
from fitlib import get, SOURCES
from fitopt import prep
z0 = lambda s: -5.6107 + 12.4699 * s.cen + 1.3509 * s.cov - 11.5081 * s.bg
for n in ["clinc", "clinc_ho0", "banking", "bank77", "metatool", "metatool_ho0"]:
    s = get(n)
    p = z0(s) >= 0
    f = s.first(p)
    ans = f >= 0
    low = ans & (s.rank[np.maximum(f, 0)] > 0)
    ins = s.qgrp == "in"
    m_all = s.metrics(p)
    m_top = s.metrics(p & (s.rank == 0))
    print(f"{n:13} answered below the top: in-scope {low[ins].mean():.3f} (right {np.mean(s.y[f[low & ins]] > 0) if (low & ins).any() else 0:.2f}), "
          f"out-of-scope {low[~ins].mean():.3f} | acc today {m_all['acc']:.3f} -> top-or-nothing {m_top['acc']:.3f} (in_right {m_all['in_right']:.3f}->{m_top['in_right']:.3f})")
