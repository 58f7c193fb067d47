"""Widgets of the episode screen."""
