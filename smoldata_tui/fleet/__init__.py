"""Many episodes at once: per-trace summaries computed on every CPU, cached, aggregated, watched.

The core of ``check`` over folders and of the fleet table. No Textual here.
"""
