#!/usr/bin/env bash
# The demo: set-up (packages, build), then the example queries of sql/demo.sql
# in the sqlite3 shell against a Kafka partition shipped in the repository.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/tests/setup.sh" build
cd "$here"
# The writing example makes a new log in this directory, removed afterwards.
rm -rf /tmp/kafkalog-demo && mkdir /tmp/kafkalog-demo
trap 'rm -rf /tmp/kafkalog-demo' EXIT
# Box mode without wrapping: no value is cut mid-word.
sqlite3 -cmd ".load build/kafkalog" -cmd ".headers on" -cmd ".mode box --wrap 0" :memory: < sql/demo.sql
