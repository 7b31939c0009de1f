"""Replies shaped as real mail programs write them, built from the very mail they answer.

``original`` reads a move request the server sent; ``langs`` holds what mail programs write in each
language (attributions, header blocks, phone footers); ``clients`` has one builder per mail program
family; ``cases`` is the table the corpus test (tests/server/test_mail_shapes.py) runs.
"""
