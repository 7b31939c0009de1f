"""Mail out: the outbox, the mails a game and the scheduler send, bounce marks, the tokens mails carry."""
