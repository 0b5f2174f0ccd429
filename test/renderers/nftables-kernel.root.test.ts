/**
 * The nftables renderer in the kernel (root, a scratch network namespace): both runners apply,
 * report what nft rejects and read back; the kernel accepts every transaction of random
 * incremental histories and ends up holding exactly the renderer's model.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Cluster } from '../../src/model/types.ts';
import { PolicyPipeline, changesBetween } from '../../src/pipeline/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import { NftablesRenderer } from '../../src/datapaths/nftables/index.ts';
import {
  DataplaneError,
  execNftRunner,
  libnftablesRunner,
  nftRunner,
  run,
} from '../../src/dataplane/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { needsRoot, scratchNetns } from '../helpers/kernel.ts';
import { clusterOf, namespace, pod, policy } from '../helpers/builders.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

describe(
  'nftables in the kernel',
  { skip: needsRoot('applying rulesets (a scratch network namespace)') },
  () => {
    const NETNS = scratchNetns('palisade-nft-test');

    for (const [kind, make] of [
      ['libnftables', () => libnftablesRunner({ netns: NETNS })],
      ['the nft executable', () => execNftRunner({ netns: NETNS })],
    ] as const)
      it(`applies through ${kind}, reports what nft rejects, reads back, and keeps the table`, async () => {
        const helper = make();
        assert.ok(helper, 'libnftables loads (Debian libnftables1 and koffi)');
        try {
          await run('nft', ['delete', 'table', 'inet', 'palisade'], { netns: NETNS });
          helper.apply('table inet palisade {\n\tset s {\n\t\ttype ipv4_addr;\n\t}\n}\n');
          assert.throws(
            () => helper.apply('add element inet palisade s { 10.0.0.300 }\n'),
            (error: Error) => {
              assert.ok(error instanceof DataplaneError);
              assert.match(
                error.message,
                /nft rejected the transaction in network namespace .*\n.*10\.0\.0\.300/s,
              );
              assert.doesNotMatch(error.message, /previous ruleset is in place/, 'nothing claimed unchecked');
              return true;
            },
          );
          helper.apply('add element inet palisade s { 10.0.0.3 }\n');
          const listed = await run('nft', ['list', 'set', 'inet', 'palisade', 's'], { netns: NETNS });
          assert.match(listed.stdout, /elements = \{ 10\.0\.0\.3 \}/);
          const json = JSON.parse(helper.query('list set inet palisade s') ?? '{}') as {
            nftables: unknown[];
          };
          assert.deepEqual(json.nftables.at(-1), {
            set: {
              family: 'inet',
              name: 's',
              table: 'palisade',
              type: 'ipv4_addr',
              handle: (json.nftables.at(-1) as { set: { handle: number } }).set.handle,
              elem: ['10.0.0.3'],
            },
          });
          assert.equal(helper.query('list set inet palisade nosuch'), undefined);
        } finally {
          helper.close();
        }
        if (helper.kind === 'library')
          assert.throws(() => helper.apply('add table inet x\n'), DataplaneError);
      });

    it('accepts every transaction of random incremental histories and holds what the renderer models', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(clusterArb({ maxPods: 6, maxPolicies: 4 }), { minLength: 2, maxLength: 4 }),
          async (histories) => {
            await run('nft', ['delete', 'table', 'inet', 'palisade'], { netns: NETNS });
            const state = new ClusterState();
            const renderer = new NftablesRenderer({ state, runner: nftRunner({ netns: NETNS }) });
            const pipeline = new PolicyPipeline({ state, node: 'n1', renderers: [renderer] });
            let previous: Cluster | undefined;
            for (const objects of histories) {
              const cluster = clusterOf(objects);
              if (previous) pipeline.applyBatch(changesBetween(previous, cluster));
              else pipeline.apply({ type: 'resync', cluster });
              previous = cluster;
            }
            const listed = await run('nft', ['-j', 'list', 'table', 'inet', 'palisade'], { netns: NETNS });
            assert.equal(listed.code, 0, listed.stderr);
            const kernel = JSON.parse(listed.stdout) as {
              nftables: Record<string, { name?: string; elem?: unknown[] }>[];
            };
            const chains = kernel.nftables
              .filter((o) => o.chain)
              .map((o) => o.chain?.name)
              .sort();
            const expected = renderer
              .fullScript()
              .match(/^\tchain (\S+) \{/gm)
              ?.map((l) => l.slice(7, -2))
              .sort();
            assert.deepEqual(chains, expected);
            const entries = (name: string) =>
              (kernel.nftables.find((o) => o.map?.name === name)?.map?.elem ?? []).length;
            assert.equal(entries('in_4') + entries('in_6'), renderer.stats().mapEntries / 4);
            // Read back from the kernel, the table is exactly the renderer's model.
            assert.equal(renderer.attach(), 0);
          },
        ),
        { numRuns: Math.max(5, Math.ceil(RUNS / 10)), seed: 4 },
      );
    });

    for (const [kind, make] of [
      ['libnftables', () => libnftablesRunner({ netns: NETNS })],
      ['the nft executable', () => execNftRunner({ netns: NETNS })],
    ] as const)
      it(`a replace through ${kind} learns its chains from its own echo: an edit right after it is an edit`, async () => {
        await run('nft', ['delete', 'table', 'inet', 'palisade'], { netns: NETNS });
        const runner = make();
        assert.ok(runner, 'libnftables loads');
        try {
          const state = new ClusterState();
          const renderer = new NftablesRenderer({ state, runner });
          new PolicyPipeline({ state, node: 'n1', renderers: [renderer] }).apply({
            type: 'resync',
            cluster: clusterOf([
              namespace('shop'),
              pod('shop', 'db', { app: 'db' }, { node: 'n1', ips: ['10.244.0.2'] }),
              pod('shop', 'web', { app: 'web' }, { node: 'n2', ips: ['10.250.0.1'] }),
              policy('shop', 'db', {
                podSelector: { matchLabels: { app: 'db' } },
                ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }],
              }),
            ]),
          });
          assert.equal(renderer.replaceAll(), true, 'the echo held the chains');
          // Another writer, before any audit: a rule of a table chain replaced by accept.
          const listed = JSON.parse(
            (await run('nft', ['-j', 'list', 'table', 'inet', 'palisade'], { netns: NETNS })).stdout,
          ) as {
            nftables: { rule?: { chain: string; handle: number } }[];
          };
          const rule = listed.nftables.find((i) => i.rule?.chain.startsWith('t_'))?.rule;
          assert.ok(rule, 'a table chain has a rule');
          const edited = await run(
            'nft',
            ['replace', 'rule', 'inet', 'palisade', rule.chain, 'handle', String(rule.handle), 'accept'],
            { netns: NETNS },
          );
          assert.equal(edited.code, 0, edited.stderr);
          // Learning allowed: what the echo taught wins over what the kernel holds now.
          assert.deepEqual(renderer.audit(true), [`chain ${rule.chain}'s rules were edited`]);
          renderer.replaceAll();
          assert.deepEqual(renderer.audit(true), [], 'replaced again, it holds what was committed');
        } finally {
          runner?.close();
        }
      });

    it('replaces the whole table with every element of a set and map larger than one script line', async () => {
      // 1,200 web pods elsewhere: the db pod's allowed-source set outgrows one line of elements.
      // A whole-table script once held only the last line's elements (each `elements =` in a
      // block replaces the one before), and the agent "repaired" that table every second.
      await run('nft', ['delete', 'table', 'inet', 'palisade'], { netns: NETNS });
      const webs = Array.from({ length: 1200 }, (_, i) =>
        pod('shop', `web-${i}`, { app: 'web' }, { node: 'n2', ips: [`10.250.${i >> 8}.${i & 255}`] }),
      );
      const locals = Array.from({ length: 600 }, (_, i) =>
        pod('shop', `db-${i}`, { app: 'db' }, { node: 'n1', ips: [`10.244.${i >> 7}.${(i & 127) + 1}`] }),
      );
      const cluster = clusterOf([
        namespace('shop'),
        ...webs,
        ...locals,
        policy('shop', 'db-from-web', {
          podSelector: { matchLabels: { app: 'db' } },
          ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }],
        }),
      ]);
      const state = new ClusterState();
      const runner = nftRunner({ netns: NETNS });
      try {
        const renderer = new NftablesRenderer({ state, runner });
        new PolicyPipeline({ state, node: 'n1', renderers: [renderer] }).apply({ type: 'resync', cluster });
        renderer.replaceAll();
        const listed = await run('nft', ['-j', 'list', 'table', 'inet', 'palisade'], { netns: NETNS });
        const kernel = JSON.parse(listed.stdout) as {
          nftables: Record<string, { name?: string; elem?: unknown[] }>[];
        };
        const sizes = (kind: 'set' | 'map') =>
          kernel.nftables.flatMap((o) => (o[kind] ? [o[kind].elem?.length ?? 0] : []));
        assert.ok(
          sizes('set').includes(1200),
          `a set holds all 1,200 web pods (sizes: ${sizes('set').join(', ')})`,
        );
        assert.ok(
          sizes('map').includes(600),
          `a dispatch map holds all 600 local pods (sizes: ${sizes('map').join(', ')})`,
        );
        // The audit first: it compares the kernel with what the replace committed.
        assert.deepEqual(renderer.audit(true), [], 'the audit finds nothing to repair');
        assert.equal(renderer.attach(), 0, "read back, the table is exactly the renderer's model");
      } finally {
        runner.close();
      }
    });
  },
);
