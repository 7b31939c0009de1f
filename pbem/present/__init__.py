"""What web pages and the API show alike: a game as its viewer sees it, *My games*, the new-game form."""
