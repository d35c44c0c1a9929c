"""The Textual app. Everything that imports Textual lives under this package."""
