// The client matrix for Node: one client library (the first argument, a
// package alias of package.json) against the sluice on 127.0.0.1:$SLUICE_PORT.
// It asserts decisions, pipelines, transactions, errors and a reconnect
// after the server restarts: it prints RESTART, waits for a line on stdin,
// and goes on. It prints the raw decision reply and the protocol the
// client chose, and exits non-zero with a message on the first wrong
// result.
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import assert from 'node:assert/strict';

const require = createRequire(import.meta.url);
const name = process.argv[2];
const port = Number(process.env.SLUICE_PORT);
const tag = `${name}:${Date.now()}`;

// adapter gives every library the same four calls.
async function adapter() {
  if (name.startsWith('ioredis')) {
    const m = require(name);
    const Redis = m.default || m.Redis || m;
    const c = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 50, retryStrategy: () => 50 });
    c.on('error', () => {});
    const unpack = (rs) => rs.map(([err, v]) => (err ? err : v));
    return {
      call: (...a) => c.call(...a),
      pipeline: async (cmds) => unpack(await cmds.reduce((p, a) => p.call(...a), c.pipeline()).exec()),
      multi: async (cmds) => unpack(await cmds.reduce((p, a) => p.call(...a), c.multi()).exec()),
      close: () => c.disconnect(),
    };
  }
  const m = require(name);
  const c = m.createClient({ socket: { port, host: '127.0.0.1', reconnectStrategy: () => 50 } });
  c.on('error', () => {});
  await c.connect();
  const str = (a) => a.map(String);
  return {
    call: (...a) => c.sendCommand(str(a)),
    pipeline: (cmds) => cmds.reduce((p, a) => p.addCommand(str(a)), c.multi()).execAsPipeline(),
    multi: (cmds) => cmds.reduce((p, a) => p.addCommand(str(a)), c.multi()).exec(),
    close: () => (c.destroy ? c.destroy() : c.disconnect()),
  };
}

const c = await adapter();
const hello = await c.call('HELLO');
const proto = Array.isArray(hello) ? hello[hello.indexOf('proto') + 1] : hello.proto;

// Decisions: five integers, whatever the protocol.
const first = await c.call('RL.TOKEN', `${tag}:dec`, '10/s', 20);
assert.deepEqual(first, [1, 20, 19, 0, 100], 'RL.TOKEN');
await c.call('RL.TOKEN', `${tag}:deny`, '1/h', 1);
const denied = await c.call('RL.TOKEN', `${tag}:deny`, '1/h', 1);
const [allowed] = denied;
assert.equal(allowed, 0, 'const [allowed] = reply on a denial');
assert.deepEqual(denied.slice(0, 3), [0, 1, 0], 'a denial');
assert.ok(denied[3] > 3590000 && denied[3] <= 3600000, `retry_after_ms ${denied[3]}`);

// A pipeline.
const piped = await c.pipeline(Array.from({ length: 5 }, () => ['RL.FIXED', `${tag}:pipe`, 3, '1h']));
assert.deepEqual(piped.map((r) => r.slice(0, 3)), [[1, 3, 2], [1, 3, 1], [1, 3, 0], [0, 3, 0], [0, 3, 0]], 'pipeline');

// A transaction, then one that EXECABORT discards whole.
const tx = await c.multi([['RL.FIXED', `${tag}:tx`, 2, '1h'], ['RL.FIXED', `${tag}:tx`, 2, '1h'], ['RL.FIXED', `${tag}:tx`, 2, '1h']]);
assert.deepEqual(tx.map((r) => r.slice(0, 3)), [[1, 2, 1], [1, 2, 0], [0, 2, 0]], 'MULTI/EXEC');
await assert.rejects(c.multi([['RL.FIXED', `${tag}:abort`, 2, '1h'], ['RL.TOKEN', `${tag}:abort2`, 'ten/s', 2]]),
  /EXECABORT|invalid rate/, 'a transaction with a queueing error');
assert.equal(await c.call('EXISTS', `${tag}:abort`, `${tag}:abort2`), 0, 'EXECABORT applied nothing');

// Errors.
await assert.rejects(c.call('RL.TOKEN', `${tag}:dec`, '10/s'), /^.*ERR wrong number of arguments for 'rl.token' command/);
await assert.rejects(c.call('RL.TOKEN', `${tag}:tx`, '10/s', 20), /WRONGTYPE Operation against a key holding the wrong kind of value/);

// A reconnect after the server restarts.
console.log('RESTART');
const rl = createInterface({ input: process.stdin });
await new Promise((resolve) => rl.once('line', resolve));
rl.close();
let after;
for (let i = 0; ; i++) {
  try {
    after = await c.call('RL.TOKEN', `${tag}:after`, '10/s', 20);
    break;
  } catch (e) {
    if (i >= 100) throw e;
    await new Promise((r) => setTimeout(r, 50));
  }
}
assert.deepEqual(after, [1, 20, 19, 0, 100], 'RL.TOKEN after the restart');
await c.close();
console.log(`RESULT proto=${proto} decision=${JSON.stringify(first)} denial=${JSON.stringify(denied.slice(0, 3))}`);
process.exit(0);
