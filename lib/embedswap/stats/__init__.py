"""Pure statistics, knowing nothing of servers or summaries: the one cosine and norm, the equivalence verdict and
its intervals, the latency ratio's test. Every decision above is built from these."""
