"""Where games begin: challenges, open seats and the lobby."""
