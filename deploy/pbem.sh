#!/bin/sh
# /usr/local/bin/pbem: run a `pbem` command with the settings the units use, as the pbem user.
# Run by root (an operator: `pbem status`, `pbem db upgrade`, `pbem import records.jsonl`) it becomes
# pbem; run as pbem (Postfix's pipe to `pbem ingest`) it goes on as it is.
# It stays in the directory it was started in, so relative paths work, unless pbem may not read there
# (root's home, say): then it runs in the data directory and says so.  For `pbem ingest`, whatever keeps
# the message from being stored or refused (settings that cannot be read, a program that cannot start)
# ends in exit 75 (EX_TEMPFAIL): the MTA keeps the mail and tries again later, instead of bouncing it.
PBEM_USER=pbem
PBEM_ENV=/etc/pbem/pbem.env
PBEM_HOME=/var/lib/pbem
PBEM_BIN=/opt/pbem/.venv/bin/pbem

if [ "$(id -u)" = 0 ]; then
    exec runuser -u "$PBEM_USER" -- "$0" "$@"
fi
if [ "$(id -un)" != "$PBEM_USER" ]; then
    echo "pbem: run this as root or as $PBEM_USER" >&2
    exit 77
fi
if [ ! -r "$PBEM_ENV" ]; then
    echo "pbem: $PBEM_USER cannot read $PBEM_ENV (it should be root:$PBEM_USER, mode 0640)" >&2
    exit 75
fi
set -a
. "$PBEM_ENV" || exit 75
set +a
if [ ! -r . ] || [ ! -x . ]; then
    echo "pbem: $PBEM_USER may not read $(pwd), so this runs in $PBEM_HOME: name files by absolute" \
        "paths $PBEM_USER can read, or give them on standard input (pbem import - < FILE)" >&2
    cd "$PBEM_HOME" || exit 75
fi
if [ "$1" != ingest ]; then
    exec "$PBEM_BIN" "$@"
fi
"$PBEM_BIN" "$@"
status=$?
case $status in
    0|65) exit $status ;;
    *) exit 75 ;;
esac
