// npm's install script: the module-only CMake build (Release, no tests) in
// build-npm/ of the package, its kafkalog.so copied beside index.js.  Needs
// cmake, a C compiler and the -dev packages tests/setup.sh lists.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const root = path.join(__dirname, '..');
const build = path.join(root, 'build-npm');
function run(cmd, args) {
  try {
    execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  } catch (e) {
    const hint = e.code === 'ENOENT'
      ? `${cmd} is not installed (Debian: apt-get install cmake gcc pkg-config libsqlite3-dev ` +
        'zlib1g-dev liblz4-dev libzstd-dev libsnappy-dev libxxhash-dev)'
      : `${cmd} ${args.join(' ')} failed`;
    console.error(`kafkalog: ${hint}`);
    process.exit(1);
  }
}
run('cmake', ['-S', root, '-B', build, '-DBUILD_TESTING=OFF', '-DCMAKE_BUILD_TYPE=Release']);
run('cmake', ['--build', build, '--target', 'kafkalog', '-j', String(os.cpus().length || 1)]);
fs.copyFileSync(path.join(build, 'kafkalog.so'), path.join(__dirname, 'kafkalog.so'));
