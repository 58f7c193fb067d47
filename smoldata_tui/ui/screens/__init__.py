"""Screens of the replay app: the episode, the fleet table, help and the filter dialog."""
