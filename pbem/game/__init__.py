"""The game: read-only questions, the one move path, conditional answers, clocks, ratings, results.

Imports only :mod:`pbem.core` and the engines.  What happens in a game reaches the mail as events
(:mod:`pbem.game.events`), never by an import of the mail.
"""
