"""The one run loop: the chain (sequential, hedged, merge, adaptive), the attempt pipeline, governance
(cache, cool-downs, rate limits, budgets, spend), hit normalisation and the usage ledger's writes."""
