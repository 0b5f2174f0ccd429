// A TCP relay that can stop moving bytes (a partition: nothing is refused, nothing arrives), run as
// a process of its own: inside the test process, its bytes waited whenever a trial computed a
// fresh render there (seconds, on a loaded machine), and agents starting behind it found etcd
// silent for their whole first read.
//
// Usage: node relay-process.mjs TARGET_PORT. Prints "listening PORT" once; then reads one command
// per line on stdin — cut, reconnect, reset — and answers "ok" to each once it has taken effect.
// Exits when stdin closes, so it never outlives the test that started it.
import { connect, createServer } from 'node:net';
import process from 'node:process';
import { createInterface } from 'node:readline';

const target = Number(process.argv[2]);
let cut = false;
const sockets = new Set();
/** Connections accepted while cut: linked upstream when the relay reconnects. */
const held = [];

function track(socket) {
  sockets.add(socket);
  socket.on('error', () => socket.destroy());
  socket.on('close', () => sockets.delete(socket));
}

function link(client) {
  if (client.destroyed) return;
  const upstream = connect(target, '127.0.0.1');
  track(upstream);
  client.pipe(upstream);
  upstream.pipe(client);
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
  if (cut) for (const s of [client, upstream]) s.pause();
}

const server = createServer((client) => {
  track(client);
  if (cut) {
    client.pause();
    held.push(client);
  } else link(client);
});

const commands = {
  // Stops every byte both ways (data waits in the kernel's buffers, as behind a lost route).
  cut() {
    cut = true;
    for (const s of sockets) s.pause();
  },
  reconnect() {
    cut = false;
    for (const s of sockets) s.resume();
    for (const client of held.splice(0)) link(client);
  },
  // Drops every connection (as a peer's timeout would); new ones go through.
  reset() {
    for (const s of sockets) s.destroy();
  },
};

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
const input = createInterface({ input: process.stdin });
input.on('line', (line) => {
  const command = commands[line.trim()];
  if (command) command();
  process.stdout.write(command ? 'ok\n' : `unknown command: ${line}\n`);
});
input.on('close', () => {
  for (const s of sockets) s.destroy();
  server.close();
  process.exit(0);
});
