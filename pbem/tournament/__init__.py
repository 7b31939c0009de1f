"""Tournaments and ladders: round-robins, Swiss, knockouts and ladders whose games the server starts
itself and which are followed, joined and played by mail, on the web or through the API.

``organise`` is what people call (create, join, withdraw, start, pause, remove, cancel, challenge);
``rounds`` runs a tournament (pairs rounds, starts games, scores them as the move path reports their
end, mails the players); ``standings`` derives the standings, crosstables and tie-breaks from the
pairings and checks them against the games' records; ``pairing`` holds the pure pairing algorithms.
"""
