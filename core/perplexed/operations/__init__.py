"""The entry points of the two web operations: ``search`` (with page enrichment inside its deadline) and
``fetch`` (a URL down a chain of fetch providers). One absolute deadline is made here and passed down."""
