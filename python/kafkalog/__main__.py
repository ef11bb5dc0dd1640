"""The kafkalog command: the sqlite3 shell over a Kafka directory with this
package's module loaded (the shell script shipped beside it)."""
import os
import sys

from . import loadable_path


def main():
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kafkalog.sh")
    env = dict(os.environ, KAFKALOG_MODULE=loadable_path() + ".so")
    try:
        os.execve("/bin/sh", ["/bin/sh", script] + sys.argv[1:], env)
    except OSError as e:
        sys.exit("kafkalog: cannot run %s: %s" % (script, e))


if __name__ == "__main__":
    main()
