// The cluster client matrix for Node: one library's cluster client (the
// first argument, a package alias of package.json: ioredis Cluster or
// node-redis createCluster) seeded with 127.0.0.1:$SLUICE_PORT, a sluice
// single node, a member of a replicated group or of a sharded cluster. It
// connects, takes each key of $SLUICE_KEYS (comma-separated; default one
// fresh key) of capacity 5 seven times and a {tag}ged pair, and prints
// "RESULT admitted=<n> slots=<ranges>", the ranges in slot order; it exits
// non-zero with a message on the first wrong result.
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const require = createRequire(import.meta.url);
const name = process.argv[2];
const port = Number(process.env.SLUICE_PORT);
const tag = `${name}:${Date.now()}`;

async function adapter() {
  const m = require(name);
  if (name.startsWith('ioredis')) {
    const Redis = m.default || m.Redis || m;
    const c = new Redis.Cluster([{ host: '127.0.0.1', port }], { clusterRetryStrategy: () => 100 });
    c.on('error', () => {});
    await new Promise((resolve, reject) => {
      c.once('ready', resolve);
      c.once('end', () => reject(new Error('the cluster connection ended before ready')));
    });
    // ioredis routes only the commands of its own table by key; call()
    // sends any other to a random master. A Command whose keys are set
    // before it is sent is routed by them ($SLUICE_ROUTE_BY_KEY).
    const byKey = (key, ...a) => {
      const cmd = new m.Command('RL.TOKEN', [key, ...a]);
      cmd.keys = [key];
      return c.sendCommand(cmd);
    };
    return {
      take: process.env.SLUICE_ROUTE_BY_KEY ? byKey : (key, ...a) => c.call('RL.TOKEN', key, ...a),
      slots: () => c.call('CLUSTER', 'SLOTS'),
      close: () => c.disconnect(),
    };
  }
  const c = m.createCluster({ rootNodes: [{ socket: { host: '127.0.0.1', port } }] });
  c.on('error', () => {});
  await c.connect();
  const str = (a) => a.map(String);
  return {
    take: (key, ...a) => c.sendCommand(key, false, str(['RL.TOKEN', key, ...a])),
    slots: () => c.sendCommand(undefined, true, ['CLUSTER', 'SLOTS']),
    close: () => (c.destroy ? c.destroy() : c.disconnect()),
  };
}

const keys = process.env.SLUICE_KEYS ? process.env.SLUICE_KEYS.split(',') : [`${tag}:cap5`];
const c = await adapter();
let admitted = 0;
for (const key of keys) {
  let mine = 0;
  for (let i = 0; i < 7; i++) {
    const r = await c.take(key, '1/h', 5);
    assert.equal(r.length, 5, `RL.TOKEN ${key} reply ${JSON.stringify(r)}`);
    mine += r[0];
    assert.equal(r[2], Math.max(0, 4 - i), `${key}: remaining after take ${i + 1}`);
  }
  assert.equal(mine, 5, `${key}: a key of capacity 5 taken 7 times`);
  admitted += mine;
}
const a = await c.take(`{${tag}}.a`, '10/s', 20);
const b = await c.take(`{${tag}}.b`, '10/s', 20);
assert.deepEqual([a, b], [[1, 20, 19, 0, 100], [1, 20, 19, 0, 100]], 'two keys with one tag');
const slots = await c.slots();
const ranges = slots.sort((x, y) => x[0] - y[0]).map((s) => `${s[0]}-${s[1]}:${s.length - 2}`).join(',');
await c.close();
console.log(`RESULT admitted=${admitted} slots=${ranges}`);
