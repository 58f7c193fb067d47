"""The Textual apps, and the one place screens are opened from (navigation)."""
