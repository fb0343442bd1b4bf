"""The model-level prior of the catalog mean: the mean embedding of CLINC150 *train*
messages (3,000 drawn with random.Random(0); typical requests to an assistant, none of
them a query of any benchmark here). Saved to data/mu_prior.<model>.npy and printed as
a list for the Rust side."""
import json, random, sys
import numpy as np
from common import encode
import os
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EVAL = os.environ.get("RUCHE_EVAL", os.path.join(REPO, "..", "shared", "eval"))

model = sys.argv[1] if len(sys.argv) > 1 else "static"
rows = [json.loads(l)["text"] for l in open(EVAL + "/clinc150/train.jsonl")]
rows = random.Random(0).sample(rows, 3000)
V = encode(rows, model)
mu = V.mean(0)
np.save(f"data/mu_prior.{model}.npy", mu)
print(model, "|mu_prior|", np.linalg.norm(mu))
