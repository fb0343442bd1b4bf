"""Today's gate (relevance >= 0.5) re-scored from the gathered candidates."""
from evalgate import Set, fmt
for n in ["clinc", "banking", "metatool"]:
    s = Set(n)
    print(n, fmt(s.metrics(s.f("rel0") >= 0.5)), "| gate off:", fmt(s.metrics(s.f("rel0") >= 0)))
