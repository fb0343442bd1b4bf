from common import embeddings
import sys, time
for n in sys.argv[1:] or ["banking", "metatool", "clinc", "stb"]:
    t = time.time(); embeddings(n, "minilm"); print(n, f"{time.time()-t:.0f}s", flush=True)
