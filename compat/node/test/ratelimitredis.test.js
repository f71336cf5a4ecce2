'use strict';
// rate-limit-redis (6.0.1, 5.0.0 and 4.2.0) as express-rate-limit 8's store, in an express 5
// app, once on sluice and once on Redis: the documented example (a limit of
// 3 per minute, standard headers), and each request's HTTP status and
// rate-limit headers must be the same (reset within a second).
const test = require('node:test');
const assert = require('node:assert');
const express = require('express');
const { rateLimit } = require('express-rate-limit');
const versions = [
  ['6.0.1', require('rate-limit-redis').RedisStore],
  ['5.0.0', require('rate-limit-redis5').RedisStore],
  ['4.2.0', require('rate-limit-redis4').RedisStore],
];
const { servers, ioredis } = require('./servers');

async function app(RedisStore, ver, s, clients) {
  const c = ioredis(s);
  clients.push(c);
  const a = express();
  a.use(rateLimit({
    windowMs: 60 * 1000,
    limit: 3,
    standardHeaders: 'draft-6',
    legacyHeaders: true,
    store: new RedisStore({ sendCommand: (...args) => c.call(...args), prefix: `rlr${ver}:` }),
  }));
  a.get('/', (req, res) => res.send('ok'));
  return new Promise((resolve) => {
    const srv = a.listen(0, '127.0.0.1', () => resolve(srv));
  });
}

function headers(r) {
  const h = {};
  for (const k of ['ratelimit-limit', 'ratelimit-remaining', 'x-ratelimit-limit', 'x-ratelimit-remaining']) h[k] = r.headers.get(k);
  return { status: r.status, ...h, reset: Number(r.headers.get('ratelimit-reset')), retry: r.headers.get('retry-after') };
}

for (const [ver, RedisStore] of versions) test(`rate-limit-redis ${ver} behind express-rate-limit: the same statuses and headers as on Redis`, async (t) => {
  const clients = [];
  const apps = [];
  for (const s of servers()) apps.push(await app(RedisStore, ver, s, clients));
  t.after(() => { apps.forEach((a) => a.close()); clients.forEach((c) => c.disconnect()); });
  for (let i = 1; i <= 5; i++) {
    const [a, b] = await Promise.all(apps.map((srv) => fetch(`http://127.0.0.1:${srv.address().port}/`).then(headers)));
    const { reset: ra, retry: ta, ...restA } = a;
    const { reset: rb, retry: tb, ...restB } = b;
    assert.deepStrictEqual(restA, restB, `request ${i}: sluice ${JSON.stringify(a)}; Redis ${JSON.stringify(b)}`);
    assert.ok(Math.abs(ra - rb) <= 1, `request ${i}: RateLimit-Reset sluice ${ra}; Redis ${rb}`);
    assert.ok((ta === null) === (tb === null) && (ta === null || Math.abs(Number(ta) - Number(tb)) <= 1),
      `request ${i}: Retry-After sluice ${ta}; Redis ${tb}`);
    assert.strictEqual(a.status, i <= 3 ? 200 : 429, `request ${i}`);
  }
});
