"""Moved to ``testkit.loopback`` (import ``from testkit.loopback import ...``). This alias lives only until
every branch in flight has moved; the lead deletes it before the submission."""

import sys

from testkit import loopback as _moved

sys.modules[__name__] = _moved
