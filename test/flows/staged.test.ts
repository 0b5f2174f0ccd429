/**
 * Staged policy (audit mode): a policy marked `palisade.dev/staged` is read apart from the
 * enforced ones (and survives the reflector's reduction into etcd), answers about the cluster
 * leave it out, and a flow's record says what the enforced set with the staged policies applied
 * would decide instead — only when that differs, with the staged rule, on the sides the
 * reporting node judged.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  attributeEvent,
  attributionContext,
  flowText,
  matchesFlow,
  parseFlowFilter,
  stagedView,
  withStagedApplied,
  type FlowRecord,
  type VerdictEvent,
} from '../../src/flows/index.ts';
import { evaluate, indexCluster } from '../../src/semantics/index.ts';
import { STAGED_ANNOTATION } from '../../src/model/types.ts';
import { decodeValue, encodeObject, KeyLayout } from '../../src/reflected/index.ts';
import { addr, clusterOf, load, namespace, pod, policy, type Raw } from '../helpers/builders.ts';

const staged = (object: Raw, value = 'true'): Raw => ({
  ...object,
  metadata: { ...(object.metadata as Raw), annotations: { [STAGED_ANNOTATION]: value } },
});

const base = [
  namespace('prod', { team: 'shop' }),
  pod('prod', 'web', { app: 'web' }, { ips: ['10.0.1.1'], node: 'n1' }),
  pod('prod', 'db', { app: 'db' }, { ips: ['10.0.2.1'], node: 'n2' }),
  policy('prod', 'db-ingress', {
    podSelector: { matchLabels: { app: 'db' } },
    ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 5432 }] }],
  }),
];
/** web's egress only to DNS: would deny web → db:5432. */
const webEgress = policy('prod', 'web-egress', {
  podSelector: { matchLabels: { app: 'web' } },
  policyTypes: ['Egress'],
  egress: [{ ports: [{ port: 53, protocol: 'UDP' }] }],
});
/** db's port 80 open to web: would newly allow web → db:80. */
const db80 = policy('prod', 'db-80', {
  podSelector: { matchLabels: { app: 'db' } },
  ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 80 }] }],
});
const denyShop = {
  apiVersion: 'policy.networking.k8s.io/v1alpha1',
  kind: 'AdminNetworkPolicy',
  metadata: { name: 'no-db' },
  spec: {
    priority: 10,
    subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'db' } } } },
    ingress: [{ name: 'nobody', action: 'Deny', from: [{ namespaces: {} }] }],
  },
};

const event = (port: number, verdict: VerdictEvent['verdict']): VerdictEvent => ({
  at: Date.parse('2026-01-01T00:00:00Z'),
  protocol: 'TCP',
  src: '10.0.1.1',
  dst: '10.0.2.1',
  srcPort: 40000,
  port,
  verdict,
});

describe('staged policies as read', () => {
  it('are held apart from the enforced ones, with a diagnostic; "false" is enforced', () => {
    const result = load([...base, staged(webEgress), staged(denyShop), staged(db80, 'false')]);
    const { cluster } = result;
    assert.deepEqual(
      cluster.policies.map((p) => p.name),
      ['db-80', 'db-ingress'],
    );
    assert.deepEqual(cluster.clusterPolicies, []);
    assert.deepEqual(
      cluster.staged?.policies.map((p) => p.name),
      ['web-egress'],
    );
    assert.deepEqual(
      cluster.staged?.clusterPolicies.map((p) => p.name),
      ['no-db'],
    );
    assert.deepEqual(
      result.diagnostics.filter((d) => d.code === 'POLICY_STAGED').map((d) => [d.object, d.line > 0]),
      [
        ['NetworkPolicy prod/web-egress', true],
        ['AdminNetworkPolicy no-db', true],
      ],
    );
  });

  it('takes any other value as staged, with a warning', () => {
    const result = load([...base, staged(webEgress, 'yes')]);
    assert.deepEqual(
      result.cluster.staged?.policies.map((p) => p.name),
      ['web-egress'],
    );
    assert.deepEqual(
      result.diagnostics.filter((d) => d.severity !== 'info').map((d) => d.code),
      ['STAGED_VALUE_INVALID'],
    );
  });

  it('keep their mark through the reflector into etcd and back', () => {
    const layout = new KeyLayout('/test');
    for (const object of [staged(webEgress), staged(denyShop)]) {
      const encoded = encodeObject(layout, object, 'test');
      assert.ok(encoded.value);
      const decoded = decodeValue(encoded.key, encoded.value);
      assert.equal(decoded.object?.kind, 'Staged');
    }
  });

  it('change no answer about the cluster (check evaluates the enforced set)', () => {
    const enforced = clusterOf(base);
    const withStaged = clusterOf([...base, staged(webEgress), staged(denyShop), staged(db80)]);
    for (const port of [80, 5432]) {
      const connection = (c: typeof enforced) => ({
        src: addr(c, 'prod/web'),
        dst: addr(c, 'prod/db'),
        protocol: 'TCP' as const,
        port,
        family: 4 as const,
      });
      assert.deepEqual(
        JSON.parse(JSON.stringify(evaluate(indexCluster(withStaged), connection(withStaged)))),
        JSON.parse(JSON.stringify(evaluate(indexCluster(enforced), connection(enforced)))),
      );
    }
  });
});

describe('staged evaluation of flows', () => {
  it('names the flow a staged policy would deny, with the staged rule', () => {
    const cluster = clusterOf([...base, staged(webEgress)]);
    const record = attributeEvent(attributionContext(cluster, undefined), event(5432, 'allowed'));
    assert.equal(record.verdict, 'allowed');
    assert.deepEqual(record.staged, {
      verdict: 'denied',
      decidedBy: [
        {
          direction: 'egress',
          tier: 'NetworkPolicy',
          outcome: 'deny',
          isolatedBy: ['prod/web-egress'],
        },
      ],
    });
    assert.match(
      flowText(record),
      /staged: would be denied \(egress: isolated by prod\/web-egress, no rule allows it\)$/,
    );
  });

  it('names the flow a staged policy would newly allow, and one an admin policy would deny', () => {
    const allowing = clusterOf([...base, staged(db80)]);
    const allowed = attributeEvent(attributionContext(allowing, undefined), event(80, 'denied'));
    assert.equal(allowed.staged?.verdict, 'allowed');
    assert.deepEqual(
      allowed.staged?.decidedBy.map((d) => [d.direction, d.outcome, d.policy, d.rule]),
      [
        ['egress', 'not-isolated', undefined, undefined],
        ['ingress', 'allow', 'prod/db-80', 0],
      ],
    );
    const denying = clusterOf([...base, staged(denyShop)]);
    const denied = attributeEvent(attributionContext(denying, undefined), event(5432, 'allowed'));
    assert.deepEqual(denied.staged, {
      verdict: 'denied',
      decidedBy: [
        {
          direction: 'ingress',
          tier: 'Admin',
          outcome: 'deny',
          policy: 'anp/no-db',
          rule: 0,
          ruleName: 'nobody',
        },
      ],
    });
  });

  it('says nothing when no policy is staged or the staged set decides alike', () => {
    const none = attributeEvent(attributionContext(clusterOf(base), undefined), event(5432, 'allowed'));
    assert.equal('staged' in none, false);
    // Allowing 5432 once more changes nothing.
    const same = clusterOf([...base, staged(policy('prod', 'again', (base[3]!.spec as Raw) ?? {}))]);
    assert.equal(
      'staged' in attributeEvent(attributionContext(same, undefined), event(5432, 'allowed')),
      false,
    );
  });

  it('speaks only for the sides the reporting node judged', () => {
    const cluster = clusterOf([...base, staged(denyShop), staged(webEgress)]);
    // n2 holds db: its ingress would be denied by the admin policy, web's egress is n1's to judge.
    const onDb = attributeEvent(attributionContext(cluster, 'n2'), event(5432, 'allowed'));
    assert.deepEqual(
      onDb.staged?.decidedBy.map((d) => d.policy ?? d.isolatedBy?.join()),
      ['anp/no-db'],
    );
    const onWeb = attributeEvent(attributionContext(cluster, 'n1'), event(5432, 'allowed'));
    assert.deepEqual(
      onWeb.staged?.decidedBy.map((d) => d.policy ?? d.isolatedBy?.join()),
      ['prod/web-egress'],
    );
    const justAdmin = clusterOf([...base, staged(denyShop)]);
    assert.equal(
      'staged' in attributeEvent(attributionContext(justAdmin, 'n1'), event(5432, 'allowed')),
      false,
    );
  });

  it('applies the staged set over the enforced one, and leaves the cluster without staged ones as it is', () => {
    const cluster = clusterOf([...base, staged(webEgress), staged(denyShop)]);
    const applied = withStagedApplied(cluster);
    assert.deepEqual(
      applied?.policies.map((p) => p.name),
      ['db-ingress', 'web-egress'],
    );
    assert.deepEqual(
      applied?.clusterPolicies.map((p) => p.name),
      ['no-db'],
    );
    assert.equal(applied && 'staged' in applied, false);
    assert.equal(withStagedApplied(clusterOf(base)), undefined);
  });

  it('filters on staged=true (the agent answers `palisade flows --staged`)', () => {
    const cluster = clusterOf([...base, staged(webEgress)]);
    const context = attributionContext(cluster, undefined);
    const filter = parseFlowFilter(new URLSearchParams('staged=true'));
    assert.deepEqual(filter, { staged: true });
    assert.equal(matchesFlow(attributeEvent(context, event(5432, 'allowed')), { staged: true }), true);
    assert.equal(matchesFlow(attributeEvent(context, event(53, 'allowed')), { staged: true }), false);
    assert.deepEqual(parseFlowFilter(new URLSearchParams('staged=yes')), {
      error: 'staged must be true or false, not "yes"',
    });
  });
});

describe('flows --staged over every node (stagedView)', () => {
  const record = (
    node: string,
    port: number,
    verdict: FlowRecord['verdict'],
    staged?: FlowRecord['verdict'],
  ): FlowRecord => ({
    src: { ip: '10.0.1.1', pod: 'prod/web' },
    dst: { ip: '10.0.2.1', pod: 'prod/db' },
    protocol: 'TCP',
    port,
    verdict,
    decidedBy: [],
    count: 1,
    firstSeen: '2026-01-01T00:00:00.000Z',
    lastSeen: '2026-01-01T00:00:00.000Z',
    node,
    ...(staged ? { staged: { verdict: staged, decidedBy: [] } } : {}),
  });

  it('keeps what breaks or opens a connection, not a side that denies what another node denies', () => {
    const breaks = record('n1', 80, 'allowed', 'denied');
    const alreadyDenied = record('n1', 81, 'allowed', 'denied');
    const opens = record('n2', 82, 'denied', 'allowed');
    const staysShut = record('n2', 83, 'denied', 'allowed');
    const view = stagedView([
      breaks,
      record('n2', 80, 'allowed'),
      alreadyDenied,
      record('n2', 81, 'denied'),
      opens,
      record('n1', 82, 'allowed'),
      staysShut,
      record('n1', 83, 'denied'),
      record('n1', 84, 'allowed'),
    ]);
    assert.deepEqual(view, [breaks, opens]);
  });

  it("reads each node's latest record of a connection: an older one no longer speaks for it", () => {
    const at = (r: FlowRecord, time: string): FlowRecord => ({ ...r, firstSeen: time, lastSeen: time });
    const stagedThen = at(record('n2', 90, 'denied', 'allowed'), '2026-01-01T00:00:01.000Z');
    const enforcedNow = at(record('n2', 90, 'allowed'), '2026-01-01T00:00:02.000Z');
    assert.deepEqual(stagedView([stagedThen, enforcedNow]), []);
    const before = at(record('n1', 91, 'allowed'), '2026-01-01T00:00:01.000Z');
    const stagedNow = at(record('n1', 91, 'allowed', 'denied'), '2026-01-01T00:00:02.000Z');
    assert.deepEqual(stagedView([before, stagedNow]), [stagedNow]);
  });
});
