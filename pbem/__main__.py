"""``python -m pbem``: the same as the ``pbem`` command."""

from pbem.cli import main

main(prog_name="pbem")
