"""Redaction of keys in log records, by filters on perplexed's own loggers and on httpx's and httpcore's.

A library must not change the process's logging on import: no record factory is replaced, no handler added, no
level set. What it does is attach a filter (:class:`RedactingFilter`) to the loggers whose records can carry a
key: ``httpx`` and ``httpcore`` print URLs with key parameters and response headers (``WWW-Authenticate``, a
``Location`` with ``user:key@``); perplexed's own loggers print upstream messages. A logger's filters see only
the records logged on that logger, not its children's (filters do not apply to propagated records), so the
filter sits on every logger of those trees: on httpx's and httpcore's (all of them, by name, before httpcore
creates the ones it makes lazily), and on each of perplexed's, which its modules get from :func:`get_logger`.
The record is redacted in place before any handler, on any logger, formats it.
"""

from __future__ import annotations

import logging
import traceback

from perplexed._errors import redact

__all__ = ["REDACTED_LOGGERS", "RedactingFilter", "get_logger", "redact_loggers", "scrub_record"]

#: the trees of loggers whose records are redacted
REDACTED_LOGGERS = ("httpx", "httpcore", "perplexed")

#: the loggers httpx and httpcore use (httpcore creates some only when a module is first imported, e.g.
#: ``httpcore.http2``): filtered by name, so they carry the filter whenever they come to exist
HTTP_LOGGERS = (
    "httpx",
    "httpcore",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
)


def scrub_record(record: logging.LogRecord) -> None:
    """Redact a log record in place: its message (formatted once, then kept without arguments when it
    changed), its traceback and its stack text."""
    if getattr(record, "_perplexed_scrubbed", False):
        return
    record._perplexed_scrubbed = True
    try:
        message = record.getMessage()
    except Exception:  # a malformed record is not ours to fix
        return
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and not record.exc_text:
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        clean = redact(text)
        if clean != text:  # what a formatter would print; the live exception (and its repr) is dropped
            record.exc_text, record.exc_info = clean, None
    elif record.exc_text:
        record.exc_text = redact(record.exc_text)
    if record.stack_info:
        record.stack_info = redact(record.stack_info)


class RedactingFilter(logging.Filter):
    """Redacts every record of the logger it is attached to (it never drops one). Also usable on a handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        scrub_record(record)
        return True


def _filtered(logger: logging.Logger) -> logging.Logger:
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())
    return logger


def get_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` for a perplexed module, with the redacting filter on it."""
    return _filtered(logging.getLogger(name))


def redact_loggers() -> None:
    """Put the filter on httpx's and httpcore's loggers and on every logger of the redacted trees that exists."""
    existing = [n for n in list(logging.root.manager.loggerDict) if n.partition(".")[0] in REDACTED_LOGGERS]
    for name in (*HTTP_LOGGERS, "perplexed", *existing):
        _filtered(logging.getLogger(name))


# on import: whoever can log through perplexed (every module that logs imports this one) finds httpx's and
# httpcore's loggers filtered already, whichever of perplexed's modules was loaded first
redact_loggers()
