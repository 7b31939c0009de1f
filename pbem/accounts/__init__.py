"""Accounts: sign-up, sign-in, settings, API tokens, mail keys and vacations."""
