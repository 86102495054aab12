// A WebSocket echo server (the npm ws package), run inside a sandbox by
// tests/integration/forward.sh: node ws-echo-server.js PORT
'use strict';
const { WebSocketServer } = require('ws');
const port = Number(process.argv[2]);
const wss = new WebSocketServer({ host: '127.0.0.1', port });
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
});
wss.on('listening', () => console.log(`listening ${port}`));
