"""``python -m perplexed``: the same as the ``perplexed`` command (needs the ``cli`` extra)."""

from __future__ import annotations

from perplexed.cli import main

raise SystemExit(main())
