// One decision (RL.TOKEN <key> 1/h 5) through one client library (the first
// argument, a package alias of package.json) with its default options,
// against the sluice on 127.0.0.1:$SLUICE_PORT. It prints "RESULT error=<the
// error the call surfaced>" or "RESULT reply=<the reply>": the Go test
// arranges an unknown outcome and counts the attempts the server saw.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const [name, key] = process.argv.slice(2);
const port = Number(process.env.SLUICE_PORT);

let c, call, close;
if (name.startsWith('ioredis')) {
  const m = require(name);
  const Redis = m.default || m.Redis || m;
  c = new Redis({ port, host: '127.0.0.1' });
  call = (...a) => c.call(...a);
  close = () => c.disconnect();
} else {
  c = require(name).createClient({ socket: { port, host: '127.0.0.1' } });
  await c.connect();
  call = (...a) => c.sendCommand(a.map(String));
  close = () => (c.destroy ? c.destroy() : c.disconnect());
}
c.on('error', () => {});
try {
  console.log(`RESULT reply=${JSON.stringify(await call('RL.TOKEN', key, '1/h', 5))}`);
} catch (e) {
  console.log(`RESULT error=${e.message}`);
}
await close();
