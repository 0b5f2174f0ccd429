/**
 * docs/NEUTRON.md's examples are real: the page's steps run (a local neutron-server with the pods'
 * network, a real etcd, `palisade reflect --once` of the Kuryr seed's policies, `palisade agent
 * --datapath neutron` as a process), then every ```console block starting with `$ curl` runs in a
 * shell with NEUTRON set, and its output must be exactly what the page shows. UPDATE_DOCS=1
 * rewrites the page's outputs.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import {
  createPodNetwork,
  NeutronClient,
  neutronUnavailable,
  startNeutron,
  type NeutronServer,
} from '../../src/datapaths/neutron/index.ts';
import { cli } from '../helpers/cli.ts';
import { palisadeArgv } from '../helpers/executable.ts';
import { needsEtcd, suiteEtcd } from '../live/etcd-fixture.ts';

const PAGE = new URL('../../docs/NEUTRON.md', import.meta.url);
const skip =
  needsEtcd ||
  neutronUnavailable() ||
  (existsSync('/usr/bin/curl') ? undefined : 'curl is not installed') ||
  (process.getuid?.() !== 0 ? 'the local Neutron tests run as root (as CI does)' : false);

/** The page's curl examples: the command and the output shown. */
function examples(text: string): { command: string; output: string }[] {
  return [...text.matchAll(/```console\n\$ (curl .+)\n([\s\S]*?)```/g)].map((m) => ({
    command: m[1]!,
    output: m[2]!,
  }));
}

describe('docs/NEUTRON.md examples', { skip }, () => {
  const etcd = suiteEtcd();
  let server: NeutronServer;
  let agent: ChildProcess | undefined;

  before(async () => {
    server = await startNeutron();
    // What scripts/local-neutron.mjs does.
    const network = await createPodNetwork(
      new NeutronClient({ url: server.url, project: 'palisade' }),
      'pods',
      ['10.0.0.0/8', '172.16.0.0/12'],
    );
    const reflected = await cli([
      'reflect',
      '-f',
      'examples/kuryr/seed-examples.yaml',
      '--etcd',
      etcd.server.endpoint,
      '--once',
    ]);
    assert.equal(reflected.code, 0, reflected.stderr);
    agent = spawn(
      process.execPath,
      [
        ...palisadeArgv(),
        'agent',
        '--node',
        'kuryr-controller',
        '--etcd',
        etcd.server.endpoint,
        '--datapath',
        'neutron',
        '--neutron-url',
        server.url,
        '--neutron-network',
        network,
        '--listen',
        'off',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let log = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        // Seconds alone; minutes in CI, where Neutron shares two cores with the whole suite.
        () => reject(new Error(`the agent realized nothing within 300 s:\n${log}`)),
        300_000,
      );
      agent!.stdout!.on('data', (chunk: Buffer) => {
        log += chunk.toString();
        if (log.includes('first snapshot realized')) {
          clearTimeout(timer);
          resolve();
        }
      });
      agent!.once('exit', (code) => reject(new Error(`the agent exited (${String(code)}):\n${log}`)));
    });
  });
  after(async () => {
    if (agent && agent.exitCode === null && agent.signalCode === null) {
      const exited = new Promise((resolve) => agent!.once('exit', resolve));
      agent.kill('SIGTERM');
      await exited;
    }
    await server?.stop();
  });

  it('every curl example prints what the page shows', () => {
    let text = readFileSync(PAGE, 'utf8');
    const found = examples(text);
    assert.ok(found.length >= 2, 'the page has its curl examples');
    for (const { command, output } of found) {
      const result = spawnSync('sh', ['-c', command], {
        encoding: 'utf8',
        env: { ...process.env, NEUTRON: server.url },
      });
      assert.equal(result.status, 0, result.stderr);
      if (process.env.UPDATE_DOCS === '1')
        text = text.replace(`$ ${command}\n${output}`, `$ ${command}\n${result.stdout}`);
      else assert.equal(result.stdout, output, command);
    }
    if (process.env.UPDATE_DOCS === '1') writeFileSync(PAGE, text);
  });
});
