// The npm package as a project uses it: require('kafkalog') from the
// project's node_modules, load(db) into better-sqlite3, getLoadablePath().
//   node test.js <tests/fixtures> <the package's directory>
'use strict';
const Database = require('better-sqlite3');
const fs = require('fs');
const path = require('path');

const [fixtures, pkgDir] = process.argv.slice(2);
let failures = 0;
function check(what, got, want) {
  const ok = JSON.stringify(got) === JSON.stringify(want);
  console.log((ok ? 'ok   ' : 'FAIL ') + what + (ok ? '' : `: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`));
  if (!ok) failures++;
}

const kafkalog = require('kafkalog');
const p = kafkalog.getLoadablePath();
check('getLoadablePath: the module the install script built in the package',
  [fs.realpathSync(p), fs.existsSync(p)], [fs.realpathSync(path.join(pkgDir, 'node', 'kafkalog.so')), true]);
check('resolved from the project', fs.realpathSync(require.resolve('kafkalog')),
  fs.realpathSync(path.join(pkgDir, 'node', 'index.js')));

const db = new Database(':memory:');
kafkalog.load(db);
check('load(db): kafka_log over a partition', db.prepare(
  'SELECT count(*) AS n, kafka_time(min(timestamp)) AS t FROM kafka_log(?)').get(path.join(fixtures, 'a-tiny', 'orders-0')),
  { n: 10, t: '2023-11-14T22:13:20.000Z' });
check('a window by kafka_ms', db.prepare(
  "SELECT count(*) AS n FROM kafka_log(?) WHERE topic = 'orders' AND timestamp >= kafka_ms(?)")
  .get(path.join(fixtures, 'broker'), '2023-11-14 23:15:30+01:00'), { n: 7000 });
check('kafka_log_debug names the SQLite it runs on',
  db.prepare('SELECT kafka_log_debug() AS d').get().d.includes(
    `sqlite running on: ${db.prepare('SELECT sqlite_version() AS v').get().v} (`), true);
process.env.KAFKALOG_MODULE = '/nonexistent/kafkalog.so';
try {
  kafkalog.getLoadablePath();
  check('a missing module', 'no error', 'an error');
} catch (e) {
  check('a missing module: a clear error', e.message.startsWith('kafkalog: no module at /nonexistent/kafkalog.so'), true);
}
console.log(`node ${process.version}: ${failures ? failures + ' failed' : 'all passed'}`);
process.exit(failures ? 1 : 0);
