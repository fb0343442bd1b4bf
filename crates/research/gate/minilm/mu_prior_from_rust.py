#!/usr/bin/env python3
"""Reads prior::MINILM (src/relevance/prior.rs) into data/mu_prior_minilm.npy."""
import os, re, numpy as np
t = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', 'src', 'relevance', 'prior.rs')).read()
m = re.search(r"MINILM: \[f32; 384\] = \[(.*?)\];", t, re.S)
v = np.array([float(x) for x in re.findall(r"-?\d+\.\d+(?:e-?\d+)?|-?\d+e-?\d+", m.group(1))])
assert len(v) == 384, len(v)
print(len(v), np.linalg.norm(v)); np.save('data/mu_prior_minilm.npy', v)
