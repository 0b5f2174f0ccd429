/**
 * The nftables renderer: what its transactions contain, against a recording runner and the fake
 * nft (no root; in the kernel: nftables-kernel.root.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalTable } from '../../src/configurator/index.ts';
import { parseCidr } from '../../src/net/ip.ts';
import { PolicyPipeline, changesBetween } from '../../src/pipeline/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import { NftablesRenderer, NodeFleetRenderer, renderTableChain } from '../../src/datapaths/nftables/index.ts';
import { DataplaneError, FakeNft, recordingRunner, type NftRunner } from '../../src/dataplane/index.ts';
import { clusterOf, namespace, pod, policy } from '../helpers/builders.ts';

const cidr = (text: string) => {
  const parsed = parseCidr(text);
  assert.ok(parsed.ok);
  return parsed.value;
};

const base = [
  namespace('shop', { team: 'shop' }),
  pod('shop', 'web', { app: 'web' }, { ips: ['10.0.0.1'], node: 'n1' }),
  pod('shop', 'api', { app: 'api' }, { ips: ['10.0.0.2'], node: 'n1' }),
  pod('shop', 'db', { app: 'db' }, { ips: ['10.0.0.3'], node: 'n2' }),
  policy('shop', 'api-from-web', {
    podSelector: { matchLabels: { app: 'api' } },
    ingress: [
      {
        from: [{ podSelector: { matchLabels: { app: 'web' } } }],
        ports: [{ port: 80 }, { port: 53, protocol: 'UDP' }],
      },
    ],
  }),
];

function nodeRenderer(runner: NftRunner = recordingRunner()) {
  const state = new ClusterState();
  const renderer = new NftablesRenderer({ state, runner, podCidrs: [cidr('10.0.0.0/24')] });
  const pipeline = new PolicyPipeline({ state, node: 'n1', renderers: [renderer] });
  return { renderer, pipeline };
}

describe('nftables table chains', () => {
  it('merges the ports of rules with the same peer into one set lookup, and ends with drop', () => {
    const table = canonicalTable([
      {
        action: 'permit',
        protocol: 'TCP',
        src: { kind: 'group', group: 'g' },
        dst: { kind: 'any' },
        dstPorts: [80, 80],
      },
      {
        action: 'permit',
        protocol: 'UDP',
        src: { kind: 'group', group: 'g' },
        dst: { kind: 'any' },
        dstPorts: [53, 60],
      },
      {
        action: 'permit',
        protocol: 'TCP',
        src: { kind: 'cidr', cidr: cidr('192.168.0.0/16') },
        dst: { kind: 'any' },
      },
      { action: 'deny', protocol: 'ANY', src: { kind: 'any' }, dst: { kind: 'any' } },
    ]);
    const chain = renderTableChain(table);
    assert.deepEqual(chain.groups, ['g']);
    assert.equal(chain.lines.at(-1), 'drop');
    const groupLines = chain.lines.filter((l) => l.includes('@g_'));
    assert.equal(groupLines.length, 2, 'one rule per family, not per port');
    assert.match(
      groupLines[0] ?? '',
      /meta l4proto \. th dport \{ (tcp \. 80, udp \. 53-60|udp \. 53-60, tcp \. 80) \} return$/,
    );
    assert.ok(chain.lines.includes('ip saddr 192.168.0.0/16 meta l4proto tcp return'));
  });

  it('keeps address ranges in sets keyed by address and family, which nft does not read before each commit', () => {
    // nft dumps every single-field interval set of the table before any transaction touching an
    // element; a concatenation with the (constant) family is checked by the kernel instead.
    const table = canonicalTable([
      ...['10.0.0.0/16', '10.2.0.0/16'].map((block) => ({
        action: 'permit' as const,
        protocol: 'TCP' as const,
        src: { kind: 'cidr' as const, cidr: cidr(block) },
        dst: { kind: 'any' as const },
      })),
      { action: 'deny', protocol: 'ANY', src: { kind: 'any' }, dst: { kind: 'any' } },
    ]);
    const chain = renderTableChain(table, [4]);
    const [set] = chain.sets;
    assert.ok(set, 'two separate ranges make one named set');
    assert.deepEqual(set.elements, ['10.0.0.0/16 . ipv4', '10.2.0.0/16 . ipv4']);
    assert.ok(chain.lines.includes(`ip saddr . meta nfproto @${set.name} meta l4proto tcp return`));
    const state = new ClusterState();
    const runner = recordingRunner();
    const renderer = new NftablesRenderer({ state, runner, families: [4] });
    const pipeline = new PolicyPipeline({ state, node: 'n1', renderers: [renderer] });
    pipeline.apply({
      type: 'resync',
      cluster: clusterOf([
        ...base,
        policy('shop', 'from-two-blocks', {
          podSelector: { matchLabels: { app: 'web' } },
          ingress: [{ from: [{ ipBlock: { cidr: '10.1.0.0/16' } }, { ipBlock: { cidr: '10.3.0.0/16' } }] }],
        }),
      ]),
    });
    assert.match(
      runner.scripts[0] ?? '',
      /set n_\w+_4 \{\n\t\ttype ipv4_addr \. nf_proto;\n\t\tflags interval;/,
    );
  });
});

describe('nftables transactions', () => {
  it('first commit replaces the whole table atomically; a label change sends only elements and entries', () => {
    const runner = recordingRunner();
    const { pipeline } = nodeRenderer(runner);
    const cluster = clusterOf(base);
    pipeline.apply({ type: 'resync', cluster });
    const first = runner.scripts[0] ?? '';
    assert.match(first, /^table inet palisade \{\}\ndelete table inet palisade\ntable inet palisade \{/);
    assert.match(first, /ct state established ct mark and 0xffff0000 == 0x00020000 accept/);
    assert.match(first, /ip daddr @podcidr_4 drop/, 'fail closed for the pod CIDR');

    const relabelled = clusterOf(
      base.map((o) =>
        (o.metadata as { name?: string }).name === 'web'
          ? pod('shop', 'web', { app: 'other' }, { ips: ['10.0.0.1'], node: 'n1' })
          : o,
      ),
    );
    pipeline.applyBatch(changesBetween(cluster, relabelled));
    const second = runner.scripts[1] ?? '';
    assert.doesNotMatch(second, /table inet palisade \{/, 'no table replace for a pod event');
    assert.match(second, /delete element inet palisade g_[0-9a-f]+_4 \{ 10\.0\.0\.1 \}/);
  });

  it('two phases across nodes: first old ∧ new through an intersection chain, then the new table', () => {
    const state = new ClusterState();
    const runners = new Map([
      ['n1', recordingRunner()],
      ['n2', recordingRunner()],
    ]);
    const renderers = new Map([...runners].map(([n, r]) => [n, new NftablesRenderer({ state, runner: r })]));
    const pipeline = new PolicyPipeline({ state, renderers: [new NodeFleetRenderer(renderers)] });
    const cluster = clusterOf(base);
    pipeline.apply({ type: 'resync', cluster });
    const changed = clusterOf([
      ...base.slice(0, 4),
      policy('shop', 'api-from-web', {
        podSelector: { matchLabels: { app: 'api' } },
        ingress: [{ ports: [{ port: 8080 }] }],
      }),
    ]);
    pipeline.applyBatch(changesBetween(cluster, changed));
    const [restrict, relax] = runners.get('n1')?.scripts.slice(1) ?? [];
    assert.match(restrict ?? '', /add chain inet palisade x_[0-9a-f]{16}_[0-9a-f]{16}/);
    assert.match(restrict ?? '', /add element inet palisade in_4 \{ 10\.0\.0\.2 : goto x_/);
    assert.match(relax ?? '', /add element inet palisade in_4 \{ 10\.0\.0\.2 : goto t_/);
    assert.match(relax ?? '', /delete chain inet palisade x_/);
  });

  it('a rejected transaction is checked by reading back, and the next commit sends it again', () => {
    const fake = new FakeNft();
    const { pipeline } = nodeRenderer(fake);
    const cluster = clusterOf(base);
    pipeline.apply({ type: 'resync', cluster });
    const moved = clusterOf(
      base.map((o) =>
        (o.metadata as { name?: string }).name === 'api'
          ? pod('shop', 'api', { app: 'api' }, { ips: ['10.0.0.9'], node: 'n1' })
          : o,
      ),
    );
    fake.inject('reject');
    assert.throws(
      () => pipeline.applyBatch(changesBetween(cluster, moved)),
      (error: Error) =>
        error instanceof DataplaneError &&
        /read back from the kernel: the table is as it was before/.test(error.message),
    );
    pipeline.applyBatch([]);
    const retried = fake.applied.at(-1) ?? '';
    assert.match(retried, /delete element inet palisade in_4 \{ 10\.0\.0\.2 \}/);
    assert.match(retried, /add element inet palisade in_4 \{ 10\.0\.0\.9 : goto t_/);
  });
});
