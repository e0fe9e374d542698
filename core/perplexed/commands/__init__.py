"""The CLI's commands beside ``search``/``answer`` (``perplexed fetch``, ``providers``, ``eval``, ``usage``): each
parses its flags and prints its tables; ``perplexed.cli`` registers them."""
