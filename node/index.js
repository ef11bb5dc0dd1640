// kafkalog for Node: the path of the loadable module this package built,
// and load(db) for a better-sqlite3 (or node:sqlite) database.
//   const db = require('better-sqlite3')(':memory:');
//   require('kafkalog').load(db);
'use strict';
const fs = require('fs');
const path = require('path');

// The module npm's install script built (node/install.js), or the one
// $KAFKALOG_MODULE names.
function getLoadablePath() {
  const p = process.env.KAFKALOG_MODULE || path.join(__dirname, 'kafkalog.so');
  if (!fs.existsSync(p)) {
    throw new Error(`kafkalog: no module at ${p} (its install script builds it: npm rebuild kafkalog)`);
  }
  return p;
}

// Load the module into db: anything with loadExtension(path), as
// better-sqlite3's Database and node:sqlite's DatabaseSync (opened with
// allowExtension: true) have.
function load(db) {
  db.loadExtension(getLoadablePath());
}

module.exports = { getLoadablePath, load };
