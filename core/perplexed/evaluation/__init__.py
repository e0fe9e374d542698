"""``perplexed.evaluate``: a provider's worth on the user's own queries (the run, the report, its HTML page)."""
