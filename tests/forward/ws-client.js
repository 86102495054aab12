// Exchange N messages with a WebSocket echo server and check every echo, in
// order: node ws-client.js URL N.  Prints "echoed N" and exits 0 on success.
'use strict';
const WebSocket = require('ws');
const [url, nstr] = process.argv.slice(2);
const n = Number(nstr);
const ws = new WebSocket(url);
let got = 0;
const fail = (why) => { console.error(why); process.exit(1); };
setTimeout(() => fail(`timed out after ${got} echoes`), 60000).unref();
ws.on('error', (e) => fail(`error: ${e.message}`));
ws.on('open', () => {
  // A few at a time in flight, text and binary, small and large.
  const send = (i) => {
    if (i % 2) ws.send(`message ${i} ` + 'x'.repeat(i % 500));
    else ws.send(Buffer.alloc(1 + (i * 37) % 20000, i % 256));
  };
  for (let i = 0; i < Math.min(n, 16); i++) send(i);
  ws.on('message', (data, isBinary) => {
    const i = got;
    const ok = i % 2 ? !isBinary && data.toString() === `message ${i} ` + 'x'.repeat(i % 500)
      : isBinary && data.length === 1 + (i * 37) % 20000 && data.every((b) => b === i % 256);
    if (!ok) fail(`echo ${i} is wrong`);
    got++;
    if (got + 15 < n) send(got + 15);
    if (got === n) { console.log(`echoed ${got}`); ws.close(); }
  });
});
ws.on('close', () => process.exit(got === n ? 0 : 1));
