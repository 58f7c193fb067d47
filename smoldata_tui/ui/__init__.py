"""The Textual app: ``smoldata-tui replay``. Only this package imports Textual."""
