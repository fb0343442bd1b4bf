"""MiniLM embeddings of every gathered set, cached in data/ for the other scripts."""
from common import embeddings
import sys, time
for n in sys.argv[1:] or ["banking", "metatool", "clinc", "stb"]:
    t = time.time(); embeddings(n, "minilm"); print(n, f"{time.time()-t:.0f}s", flush=True)
