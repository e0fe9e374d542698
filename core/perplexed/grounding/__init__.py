"""Grounded answers and citation checks: ``answer()`` (the plan, the grounding prompt), ``verify()`` and its
lexical checker with its word tables."""
