// The module in Node (better-sqlite3): load it, run the README's queries,
// bind parameters, read BLOBs, and see a clear error for a missing directory.
//   node test.js <path of kafkalog.so> <tests/fixtures>
'use strict';
const Database = require('better-sqlite3');
const path = require('path');

const [module_, fixtures] = process.argv.slice(2);
const tiny = path.join(fixtures, 'a-tiny', 'orders-0');
const multi = path.join(fixtures, 'b-multi-segment', 'orders-0');
const broker = path.join(fixtures, 'broker');
let failures = 0;
function check(what, got, want) {
  const ok = JSON.stringify(got) === JSON.stringify(want);
  console.log((ok ? 'ok   ' : 'FAIL ') + what + (ok ? '' : `: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`));
  if (!ok) failures++;
}

const db = new Database(':memory:');
db.loadExtension(module_);

const rows = db.prepare('SELECT offset, value FROM kafka_log(?) WHERE offset BETWEEN ? AND ?')
  .all(multi, 100, 110);
check('offsets by parameter', rows.map((r) => r.offset), Array.from({ length: 11 }, (_, i) => 100 + i));
check('values are Buffers', Buffer.isBuffer(rows[0].value), true);
check('value bytes', rows[0].value.subarray(0, 8).toString(), 'val-100-');
check('a key as a BLOB', db.prepare('SELECT key FROM kafka_log(?) WHERE offset = 42').get(multi).key.toString(),
  '00000042');
check('key_type text', db.prepare("SELECT offset FROM kafka_log(?) WHERE key_type = 'text' AND key = ?")
  .get(multi, '00000042'), { offset: 42 });
check('count by topic in a log directory',
  db.prepare("SELECT topic, count(*) AS n FROM kafka_log(?) WHERE topic IN ('orders', 'payments') GROUP BY 1 ORDER BY 1")
    .all(broker), [{ topic: 'orders', n: 25910 }, { topic: 'payments', n: 1200 }]);
check('read_committed', db.prepare(
  "SELECT count(*) AS n FROM kafka_log(?) WHERE topic = 'payments' AND isolation = 'read_committed'").get(broker),
  { n: 766 });
check('named parameters', db.prepare(
  'SELECT count(*) AS n FROM kafka_log(@dir) WHERE timestamp >= @from AND timestamp < @to')
  .get({ dir: multi, from: 1700000010000, to: 1700000020000 }), { n: 1000 });
check('headers are JSON text', typeof db.prepare('SELECT headers FROM kafka_log(?) LIMIT 1').get(tiny).headers,
  'string');
try {
  db.prepare('SELECT * FROM kafka_log(?)').all('/nonexistent/orders-0');
  check('missing directory', 'no error', 'an error');
} catch (e) {
  check('missing directory: a clear error',
    /cannot open directory \/nonexistent\/orders-0: No such file or directory/.test(e.message), true);
}
const v = db.prepare('SELECT sqlite_version() AS v').get().v;
console.log(`node ${process.version}, better-sqlite3 SQLite ${v}: ${failures ? failures + ' failed' : 'all passed'}`);
process.exit(failures ? 1 : 0);
