'use strict';
// The two servers every test talks to, side by side: sluice (SLUICE_ADDR)
// and a real Redis (REDIS_ADDR), both host:port on 127.0.0.1. The Go test
// TestNodeLibrariesAgreeWithRedis (compat/libraries) starts them and runs
// `npm test` with these set.
const Redis = require('ioredis');
const { createClient } = require('redis');

function addr(name) {
  const a = process.env[name];
  if (!a) throw new Error(`${name} is not set: run through go test ./compat/libraries -run Node`);
  const i = a.lastIndexOf(':');
  return { host: a.slice(0, i), port: Number(a.slice(i + 1)) };
}

const servers = () => [
  { name: 'sluice', ...addr('SLUICE_ADDR') },
  { name: 'redis', ...addr('REDIS_ADDR') },
];

// ioredis client (rate-limiter-flexible's default, rate-limit-redis's sendCommand).
function ioredis(s) {
  return new Redis({ host: s.host, port: s.port, maxRetriesPerRequest: 1, enableOfflineQueue: true, lazyConnect: false });
}

// node-redis 4+ client (rate-limiter-flexible's useRedisPackage).
async function nodeRedis(s) {
  const c = createClient({ socket: { host: s.host, port: s.port, reconnectStrategy: false } });
  c.on('error', () => {});
  await c.connect();
  return c;
}

// hasMulti reports whether the server serves MULTI/EXEC, which
// rate-limiter-flexible's get, set, block and duration-0 consume send.
async function hasMulti(client) {
  try {
    await client.call('MULTI');
    await client.call('DISCARD');
    return true;
  } catch (e) {
    return false;
  }
}

// close(ms) is within the clocks' granularity: each side reads its own
// clock, a moment apart.
function close(a, b, ms = 60) {
  return Math.abs(a - b) <= ms;
}

module.exports = { servers, ioredis, nodeRedis, hasMulti, close };
