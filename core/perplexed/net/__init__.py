"""I/O: the pooled HTTP client and its bounded body reader, decoding, the private-address guard (one URL, read
one way), the sync portal, and a page's network fetch (robots.txt, redirects)."""
