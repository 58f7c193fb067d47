"""The episode store: the names of the files an episode leaves beside its trace (``run.meta.json``
and its siblings), reading and writing them, who owns a run, and a batch's summary. Below every
layer that runs, trains on or shows an episode; no Textual here."""
