"""One model of an episode, read the same way by every surface (``check``, the fleet, the viewer,
the headless line): see :mod:`smoldata_tui.episode.findings`."""
