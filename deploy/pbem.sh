#!/bin/sh
# /usr/local/bin/pbem: run a `pbem` command (as root) as the pbem user, with the settings the units use,
# e.g. `pbem status`, `pbem db upgrade`, `pbem user add alice alice@example.org`.
exec runuser -u pbem -- sh -c 'set -a; . /etc/pbem/pbem.env; set +a; cd /var/lib/pbem &&
    exec /opt/pbem/.venv/bin/pbem "$@"' pbem "$@"
