/**
 * Authenticated etcd with least privilege, against a real etcd serving TLS with client-certificate
 * authentication and Palisade's RBAC roles: each identity may do exactly what its role says (an
 * agent reads policy and writes only its own status; the reader reads; the reflector writes
 * policy); a client without a certificate, or with one another CA signed, is refused at the
 * handshake; `status`, `reflect` and `agent` take --etcd-cacert/--etcd-cert/--etcd-key and a user
 * from a file or the environment, over https and unixs sockets; every refusal is one line.
 * The etcdctl commands of docs/commands/agent.md, run by etcdctl, make the same roles.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  agentUser,
  palisadeAuthPlan,
  READER_USER,
  REFLECTOR_USER,
  StatusKeys,
} from '../../src/agent/index.ts';
import {
  connectEtcd,
  enableEtcdAuth,
  ensureReachable,
  EtcdAccessError,
  etcdctlCommands,
  issueCertificates,
  ROOT_USER,
  startEtcd,
  type EtcdConnection,
  type EtcdPki,
  type EtcdServer,
  type EtcdStore,
} from '../../src/etcd/index.ts';
import { KeyLayout } from '../../src/reflected/index.ts';
import { cli } from '../helpers/cli.ts';
import { palisadeArgv } from '../helpers/executable.ts';
import { policy, smallCluster } from '../agent/helpers.ts';
import { needsEtcd, needsOpenssl } from './etcd-fixture.ts';

const ROOT = '/palisade';
const layout = new KeyLayout(ROOT);
const status = new StatusKeys(layout);
const NODES = ['n1', 'n2'];
const policyKey = layout.key('NetworkPolicy', 'shop', 'db-from-web');

describe(
  'authenticated etcd: TLS client certificates and Palisade roles (RBAC)',
  { skip: needsEtcd || needsOpenssl },
  () => {
    const dir = mkdtempSync(join(tmpdir(), `palisade-etcd-auth-${process.pid}-`));
    let pki: EtcdPki;
    let rogue: EtcdPki;
    let server: EtcdServer;
    const stores: EtcdStore[] = [];
    const children: ChildProcess[] = [];

    /** A connection as `identity` (its certificate), over loopback or the unix socket. */
    const as = (identity: string, via: 'https' | 'unixs' = 'https'): EtcdConnection => ({
      endpoints: [via === 'https' ? server.endpoint : server.unixEndpoint!],
      caFile: pki.caFile,
      ...pki.client(identity),
    });
    const connect = async (connection: EtcdConnection): Promise<EtcdStore> => {
      const store = await connectEtcd(connection);
      stores.push(store);
      return store;
    };
    /** The CLI's flags for a connection. */
    const flags = (c: EtcdConnection): string[] => [
      '--etcd',
      c.endpoints.join(','),
      ...(c.caFile ? ['--etcd-cacert', c.caFile] : []),
      ...(c.certFile ? ['--etcd-cert', c.certFile, '--etcd-key', c.keyFile!] : []),
    ];

    before(async () => {
      if (needsEtcd || needsOpenssl) return;
      pki = issueCertificates(join(dir, 'pki'), [
        ROOT_USER,
        REFLECTOR_USER,
        READER_USER,
        ...NODES.map(agentUser),
        'stranger',
      ]);
      rogue = issueCertificates(join(dir, 'rogue'), [ROOT_USER]);
      server = await startEtcd({
        dataDir: join(dir, 'data'),
        unixSocket: join(dir, 'etcd.sock:0'),
        tls: { caFile: pki.caFile, ...pki.server },
      });
      const plan = palisadeAuthPlan(layout, NODES);
      await enableEtcdAuth(as(ROOT_USER), {
        roles: plan.roles,
        users: [...plan.users, { name: 'ops', password: 'correct horse', roles: [READER_USER] }],
      });
    });
    after(async () => {
      for (const child of children)
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      for (const store of stores) store.close();
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it("the CA's key is gone once the certificates are issued; keys are 0600 in a 0700 directory", () => {
      assert.equal(existsSync(join(pki.dir, 'ca.key')), false);
      const mode = (path: string): string => execFileSync('stat', ['-c', '%a', path]).toString().trim();
      assert.equal(mode(pki.dir), '700');
      assert.equal(mode(pki.client(agentUser('n1')).keyFile), '600');
    });

    it('the reflector writes policy (reflect -f with its certificate)', async () => {
      const file = join(dir, 'cluster.yaml');
      writeFileSync(
        file,
        smallCluster()
          .map((o) => JSON.stringify(o))
          .join('\n---\n'),
      );
      const result = await cli(['reflect', ...flags(as(REFLECTOR_USER)), '-f', file]);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /synced in .*: 6 keys, 6 written/);
      const reader = await connect(as(READER_USER));
      assert.ok((await reader.get(policyKey))?.value.includes('5432'));
    });

    it("an agent's identity reads and watches policy, writes its own status, and may not write policy", async () => {
      const agent = await connect(as(agentUser('n1'), 'unixs'));
      assert.ok((await agent.range(layout.objects)).kvs.length > 0);
      // The range an agent watches: the objects and the reflector's records.
      const watch = await agent.watch(
        layout.objects,
        1,
        { onEvents: () => undefined, onCompacted: () => undefined },
        {
          end: `${layout.resourceVersions.slice(0, -1)}0`,
        },
      );
      await watch.cancel();
      const lease = await agent.grantLease(5);
      await agent.txn([], [{ type: 'put', key: status.node('n1'), value: '{}', lease: lease.id }]);
      await agent.txn([], [{ type: 'put', key: status.agent('n1'), value: '{}' }]);
      await lease.revoke();
      // Its own keys, deleted again (a registration without status reads as a dead agent).
      await agent.txn([], [{ type: 'delete', key: status.agent('n1') }]);
      const denied = async (what: string, op: () => Promise<unknown>): Promise<void> =>
        assert.rejects(op, (error: Error) => {
          assert.match(error.message, /permission denied/, what);
          return true;
        });
      const allowEverything = JSON.stringify(policy('shop', 'db-from-web', {}, {}));
      await denied('put a policy', () =>
        agent.txn([], [{ type: 'put', key: policyKey, value: allowEverything }]),
      );
      await denied('delete a policy', () => agent.txn([], [{ type: 'delete', key: policyKey }]));
      await denied("another node's status", () =>
        agent.txn([], [{ type: 'put', key: status.node('n2'), value: '{}' }]),
      );
      await denied('the leader key', () => agent.txn([], [{ type: 'put', key: layout.leader, value: 'me' }]));
      const reader = await connect(as(READER_USER));
      assert.ok((await reader.get(policyKey))?.value.includes('5432'), 'the policy is unchanged');
      await denied('the reader writes', () =>
        reader.txn([], [{ type: 'put', key: status.node('n1'), value: '' }]),
      );
    });

    it('refuses a client without a certificate, or with one another CA signed, at the handshake', async () => {
      for (const connection of [
        { endpoints: [server.endpoint], caFile: pki.caFile },
        { endpoints: [server.unixEndpoint!], caFile: pki.caFile },
        { endpoints: [server.endpoint], caFile: pki.caFile, ...rogue.client(ROOT_USER) },
      ]) {
        const store = await connect(connection);
        await assert.rejects(ensureReachable(store, connection.endpoints, layout.leader), (error: Error) => {
          assert.ok(error instanceof EtcdAccessError);
          assert.match(
            error.message,
            /^cannot talk to etcd at \S+: etcd refused the TLS handshake: it wants a client certificate signed by a CA it trusts$/,
          );
          return true;
        });
      }
      // etcd's certificate checked against a CA that did not sign it.
      const wrongCa = await connect({ ...as(READER_USER), caFile: rogue.caFile });
      await assert.rejects(
        ensureReachable(wrongCa, [server.endpoint], layout.leader),
        /^Error: cannot talk to etcd at .*: the TLS handshake failed: /,
      );
    });

    it('status, reflect and agent say in one line what etcd refused, and exit non-zero', async () => {
      const noCert = await cli(['status', '--etcd', server.endpoint, '--etcd-cacert', pki.caFile]);
      assert.equal(noCert.code, 1);
      assert.match(
        noCert.stderr,
        /^palisade: cannot talk to etcd at https:\/\/127\.0\.0\.1:\d+: etcd refused the TLS handshake: .*\n$/,
      );
      const plain = await cli(['status', '--etcd', server.endpoint.replace('https:', 'http:')]);
      assert.equal(plain.code, 1);
      assert.match(plain.stderr, /^palisade: cannot reach etcd at http:\/\/127\.0\.0\.1:\d+: .*\n$/);
      // The agent's identity reflecting: campaigning for leadership is a write it may not make.
      const file = join(dir, 'cluster.yaml');
      const asAgent = await cli(['reflect', ...flags(as(agentUser('n1'))), '-f', file, '--once']);
      assert.equal(asAgent.code, 2);
      assert.match(
        asAgent.stderr,
        /^palisade: etcd denied campaigning for leadership \(\/palisade\/v1\/meta\/reflector\/leader\) to this identity \(.*permission denied\)\n$/,
      );
      // With leadership skipped, the write itself is refused: one line, not a retry loop.
      const changed = join(dir, 'changed.yaml');
      writeFileSync(changed, JSON.stringify(policy('shop', 'db-from-web', {}, {})));
      const unelected = await cli([
        'reflect',
        ...flags(as(agentUser('n1'))),
        '-f',
        changed,
        '--once',
        '--no-elect',
      ]);
      assert.equal(unelected.code, 2);
      assert.match(
        unelected.stderr,
        /^palisade: etcd denied writing under \/palisade\/v1\/ to this identity \(.*permission denied\)\n$/,
      );
      const missing = await cli([
        'status',
        ...flags({ ...as(READER_USER), certFile: join(dir, 'nope.crt') }),
      ]);
      assert.equal(missing.code, 1);
      assert.equal(
        missing.stderr,
        `palisade: cannot read the etcd client certificate ${join(dir, 'nope.crt')}: no such file\n`,
      );
      const mismatched = await cli([
        'status',
        ...flags({ ...as(READER_USER), keyFile: pki.client(REFLECTOR_USER).keyFile }),
      ]);
      assert.equal(mismatched.code, 1);
      assert.match(mismatched.stderr, /^palisade: cannot use .* for TLS: .*key values mismatch\n$/);
      const agentMissing = await cli([
        'agent',
        '--node',
        'n1',
        '--datapath',
        'classifier',
        '--listen',
        'off',
        ...flags({ ...as(agentUser('n1')), caFile: join(dir, 'nope.crt') }),
      ]);
      assert.equal(agentMissing.code, 1);
      assert.match(
        agentMissing.stderr,
        /^palisade: cannot read the etcd CA bundle .*nope\.crt: no such file\n$/,
      );
      // node-1's certificate on node-2's agent: its first write (its registration) is refused.
      const wrongNode = await cli([
        'agent',
        '--node',
        'n2',
        '--datapath',
        'classifier',
        '--listen',
        'off',
        '--log-level',
        'silent',
        ...flags(as(agentUser('n1'))),
      ]);
      assert.equal(wrongNode.code, 1);
      assert.match(
        wrongNode.stderr,
        /^palisade: etcd at \S+ denied a request to this identity \(etcdserver: permission denied\)\n$/,
      );
    });

    it('a user and password from a file or the environment (never the command line)', async () => {
      // etcd wants a certificate at the handshake; one whose CN is no user, so the password decides.
      const stranger = flags(as('stranger'));
      const userFile = join(dir, 'user');
      writeFileSync(userFile, 'ops:correct horse\n', { mode: 0o600 });
      const fromFile = await cli(['status', ...stranger, '--etcd-user-file', userFile]);
      assert.equal(fromFile.code, 0, fromFile.stderr);
      assert.match(fromFile.stdout, /^store revision \d+, policy revision \d+; /);
      const env = { PALISADE_ETCD_USER: 'ops', PALISADE_ETCD_PASSWORD: 'correct horse' };
      const fromEnv = await cli(['status', ...stranger], { env });
      assert.equal(fromEnv.code, 0, fromEnv.stderr);
      const wrong = await cli(['status', ...stranger], { env: { ...env, PALISADE_ETCD_PASSWORD: 'wrong' } });
      assert.equal(wrong.code, 1);
      assert.match(
        wrong.stderr,
        /^palisade: etcd at \S+ refused the user name or password \(.*authentication failed.*\)\n$/,
      );
      const noUser = await cli(['status', ...stranger]);
      assert.equal(noUser.code, 1);
      assert.match(
        noUser.stderr,
        /^palisade: etcd at \S+ denied reading \/palisade\/v1\/meta\/reflector\/leader to this identity \(.*permission denied\)\n$/,
      );
    });

    it('refuses inconsistent options with a usage error', async () => {
      const usage = async (args: string[], message: RegExp, env: NodeJS.ProcessEnv = {}): Promise<void> => {
        const result = await cli(['status', ...args], { env });
        assert.equal(result.code, 2, result.stderr);
        assert.match(result.stderr, message);
      };
      await usage(
        ['--etcd', server.endpoint, '--etcd-cert', pki.server.certFile],
        /--etcd-cert and --etcd-key go together/,
      );
      await usage(
        ['--etcd', 'http://127.0.0.1:2379', '--etcd-cacert', pki.caFile],
        /is not TLS \(use https:\/\/ or unixs:\/\/\)/,
      );
      await usage(['--etcd', 'http://a:1,https://b:2'], /mixes TLS and plain endpoints/);
      await usage(['--etcd', 'ftp://a:1'], /etcd URLs are http:\/\/, https:\/\/, unix:\/\/ or unixs:\/\//);
      const bad = join(dir, 'bad-user');
      writeFileSync(bad, 'no colon here\n');
      await usage(
        ['--etcd', server.endpoint, '--etcd-user-file', bad],
        /--etcd-user-file .*: expected one line user:password/,
      );
      await usage(
        ['--etcd', server.endpoint, '--etcd-user-file', join(dir, 'none')],
        /--etcd-user-file .*: cannot read it \(no such file\)/,
      );
      await usage(['--etcd', server.endpoint, '--etcd-user-file', bad], /not both/, {
        PALISADE_ETCD_USER: 'x',
        PALISADE_ETCD_PASSWORD: 'y',
      });
      await usage(['--etcd', server.endpoint], /PALISADE_ETCD_USER and PALISADE_ETCD_PASSWORD go together/, {
        PALISADE_ETCD_USER: 'x',
      });
    });

    it('an agent process with its certificate over the unix socket (unixs://) realizes and reports', async () => {
      const connection = as(agentUser('n1'), 'unixs');
      const child = spawn(
        process.execPath,
        [
          ...palisadeArgv(),
          'agent',
          '--node',
          'n1',
          ...flags(connection),
          '--datapath',
          'classifier',
          '--listen',
          'off',
          '--status-interval',
          '50',
          '--lease-ttl',
          '5',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      children.push(child);
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      const deadline = Date.now() + 45_000;
      let last = '';
      for (;;) {
        const result = await cli(['status', ...flags(as(READER_USER)), '-o', 'json']);
        last = result.stdout + result.stderr;
        const parsed =
          result.code === 0
            ? (JSON.parse(result.stdout) as {
                nodes: { node: string; state: string; record?: { phase: string } }[];
              })
            : undefined;
        if (parsed?.nodes.some((n) => n.node === 'n1' && n.state === 'alive' && n.record?.phase === 'ready'))
          break;
        if (Date.now() > deadline) assert.fail(`the agent did not report ready:\n${last}\n${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      assert.doesNotMatch(output, /permission denied/);
    });

    it("docs/commands/agent.md's etcdctl commands, run by etcdctl, make the same roles", async (t) => {
      const etcdctl = ['/usr/bin/etcdctl', '/usr/local/bin/etcdctl'].find((p) => existsSync(p));
      if (!etcdctl) return t.skip('needs etcdctl (apt-get install etcd-client)');
      const page = readFileSync(
        join(import.meta.dirname, '..', '..', 'docs', 'commands', 'agent.md'),
        'utf8',
      );
      const block =
        /<!-- etcd-roles: checked by test\/live\/etcd-auth\.etcd\.test\.ts -->\s*```sh\n([\s\S]*?)```/.exec(
          page,
        )?.[1];
      assert.ok(block, 'docs/commands/agent.md has the etcd-roles block');
      const commands = etcdctlCommands(palisadeAuthPlan(layout, ['node-1']));
      assert.deepEqual(block.trim().split('\n'), commands);
      // Run them on a second etcd (auth off until the last one), then compare each role with the first's.
      const other = await startEtcd({
        dataDir: join(dir, 'other'),
        tls: { caFile: pki.caFile, ...pki.server },
      });
      try {
        const ctl = (target: EtcdServer, args: string[]): string =>
          execFileSync(
            etcdctl,
            [
              '--endpoints',
              target.endpoint,
              '--cacert',
              pki.caFile,
              '--cert',
              pki.client(ROOT_USER).certFile,
              '--key',
              pki.client(ROOT_USER).keyFile,
              ...args,
            ],
            { env: { ETCDCTL_API: '3' } },
          ).toString();
        for (const command of commands) ctl(other, command.replace(/^etcdctl /, '').split(' '));
        const first = palisadeAuthPlan(layout, ['node-1']);
        // The first etcd has n1 and n2; compare the roles both share.
        for (const role of first.roles.filter((r) => r.name !== agentUser('node-1')))
          assert.equal(
            ctl(other, ['role', 'get', role.name]),
            ctl(server, ['role', 'get', role.name]),
            role.name,
          );
        assert.match(
          ctl(other, ['role', 'get', agentUser('node-1')]),
          /\/palisade\/v1\/status\/nodes\/node-1/,
        );
        assert.match(
          ctl(other, ['user', 'get', agentUser('node-1')]),
          /Roles: palisade-agent palisade-agent-node-1/,
        );
        // Auth is on: a certificate whose CN is no user may read nothing.
        const stranger = await connect({
          endpoints: [other.endpoint],
          caFile: pki.caFile,
          ...pki.client('stranger'),
        });
        await assert.rejects(stranger.get(layout.leader), /permission denied/);
      } finally {
        await other.stop();
      }
    });
  },
);
