"""OpenCode itself: installing the pinned binary, configuring it for an episode, and its tool names.
No Textual here."""
