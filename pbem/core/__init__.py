"""The data and its transaction: settings, extensions, models, the database's write lock, errors.

Imports nothing else of pbem: every other layer stands on it.
"""
