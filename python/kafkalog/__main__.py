"""The kafkalog command: the sqlite3 shell over a Kafka directory with this
package's module loaded (the shell script pip installs beside it, or the
one the Debian package installs as /usr/bin/kafkalog)."""
import os
import sys

from . import loadable_path


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    script = os.path.join(here, "kafkalog.sh")
    if not os.path.isfile(script):  # /usr/lib/python3/dist-packages/kafkalog -> /usr/bin
        script = os.path.normpath(os.path.join(here, "..", "..", "..", "..", "bin", "kafkalog"))
    env = dict(os.environ, KAFKALOG_MODULE=loadable_path() + ".so")
    try:
        os.execve("/bin/sh", ["/bin/sh", script] + sys.argv[1:], env)
    except OSError as e:
        sys.exit("kafkalog: cannot run %s: %s" % (script, e))


if __name__ == "__main__":
    main()
