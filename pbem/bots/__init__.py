"""``pbem bots``: the computer players' process.  It plays for every bot account over HTTP, through the
public JSON API and with each bot's own token, exactly as any program does; of the server it imports
nothing but the reading of its settings (an import contract in pyproject.toml holds it to that)."""
