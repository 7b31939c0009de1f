"""The archive of finished games: its filters and pages, feeds, standings, records (export and import)."""
