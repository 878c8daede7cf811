// A private PostgreSQL server for one e2e suite, from Debian's `postgresql` package: initdb in a
// temporary folder, pg_ctl start listening only on a unix socket in that folder, stopped and
// removed by stop(). As root (CI containers) the server runs as the `postgres` user, which
// PostgreSQL requires. Suites call postgresAbsence() first and skip with its message when the
// binaries are truly absent.
import { execFileSync } from 'node:child_process';
import { accessSync, chownSync, constants, existsSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// The folder holding initdb and pg_ctl, or '' (PATH first, then /usr/lib/postgresql/*/bin).
function postgresBin() {
  const dirs = (process.env.PATH || '').split(':').filter(Boolean);
  if (existsSync('/usr/lib/postgresql')) {
    for (const v of readdirSync('/usr/lib/postgresql')) dirs.push(path.join('/usr/lib/postgresql', v, 'bin'));
  }
  for (const d of dirs) {
    try {
      accessSync(path.join(d, 'initdb'), constants.X_OK);
      accessSync(path.join(d, 'pg_ctl'), constants.X_OK);
      return path.dirname(realpathSync(path.join(d, 'initdb'))); // where createdb lies beside it
    } catch {
      // not here
    }
  }
  return '';
}

function postgresUser() {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    return null;
  }
}

const asRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

// Why no server can be started here ('' when one can).
export function postgresAbsence() {
  if (!postgresBin()) {
    return 'PostgreSQL server binaries (initdb, pg_ctl) not found: scripts/setup installs the postgresql package';
  }
  if (asRoot() && !postgresUser()) return 'running as root and no `postgres` user to run PostgreSQL as';
  return '';
}

// Starts the server; returns { url(db), createDatabase(name), stop(), start(), dir }. The URL
// reaches it through the socket folder: postgresql://postgres@/DB?host=DIR.
export function startPostgres() {
  const bin = postgresBin();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs_e2e_pg_'));
  const user = asRoot() ? postgresUser() : null;
  if (user) chownSync(dir, user.uid, user.gid);
  const run = (tool, args) => {
    const file = path.join(bin, tool);
    const [cmd, argv] = user ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
    return execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120000 });
  };
  const data = path.join(dir, 'data');
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const options = `-k ${dir} -c listen_addresses='' -c fsync=off -c full_page_writes=off -c max_connections=200`;
  let running = false;
  const server = {
    dir,
    url: (db = 'postgres') => `postgresql://postgres@/${db}?host=${dir}`,
    start() {
      run('pg_ctl', ['-D', data, '-w', '-t', '60', '-l', path.join(dir, 'server.log'), '-o', options, 'start']);
      running = true;
    },
    // `-m immediate`: as abrupt as a crash; the tests that need a database outage use it too.
    stop({ remove = true } = {}) {
      if (running) {
        try {
          run('pg_ctl', ['-D', data, '-w', '-t', '60', '-m', 'immediate', 'stop']);
        } catch {
          // already gone
        }
        running = false;
      }
      if (remove) rmSync(dir, { recursive: true, force: true });
    },
    createDatabase(name) {
      execFileSync(path.join(bin, 'createdb'), ['-h', dir, '-U', 'postgres', name], {
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 60000,
      });
      return server.url(name);
    },
  };
  server.start();
  process.on('exit', () => server.stop());
  return server;
}
