"""Inbound mail, handled as a queue: receive and store (:mod:`.receive`), then process (later stages).

The listener (:mod:`.smtpd`) and the pipe (:mod:`.ingest`) only store; nothing a player sends is acted
on before it is safely in the database, so a crash loses nothing.
"""
