#!/usr/bin/env node
/**
 * A local OpenStack Neutron for trying `palisade agent --datapath neutron` (Debian's
 * neutron-server and python3-neutron; see docs/NEUTRON.md): started on loopback with noauth,
 * SQLite and a free port in a temp dir, with a network for the lab's pods that has one subnet per
 * CIDR given. Prints `NEUTRON=<url>` and `NETWORK=<id>` (shell assignments), then runs until
 * SIGINT or SIGTERM, when it stops the server by pid and removes its directory. Needs the build
 * (`npm run build`, which `npm ci` runs).
 *
 *   node scripts/local-neutron.mjs 10.0.0.0/8 172.16.0.0/12
 */
import process from 'node:process';
import { createPodNetwork, NeutronClient, startNeutron } from '../dist/datapaths/neutron/index.js';

const cidrs = process.argv.slice(2);
const server = await startNeutron();
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.stop();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
try {
  const network = await createPodNetwork(
    new NeutronClient({ url: server.url, project: 'palisade' }),
    'pods',
    cidrs,
  );
  process.stdout.write(`NEUTRON=${server.url}\nNETWORK=${network}\n`);
} catch (error) {
  process.stderr.write(`local-neutron: ${error instanceof Error ? error.message : String(error)}\n`);
  await stop();
}
