/**
 * Every VPP document the datapaths write, on random clusters (ordered cluster policy included),
 * checked against the definitions of the programs that read them: `vpp-acl` values against
 * ligato vpp-agent's ACL proto (protobufjs, proto3 JSON mapping, no unknown field, vpp-agent's
 * range annotations), `vpptcp` rules against VPP's `session_rule_add_del` (session.api). VPP and
 * vpp-agent do not run here: this checks the shape and types they accept, not how they act.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { aclDocuments, loadTarget, sessionDocuments, vppKeys } from '../../src/datapaths/index.ts';
import { renderCluster } from '../../src/pipeline/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf } from '../helpers/builders.ts';
import {
  aclProblems,
  INTERFACE_MESSAGE,
  proto3JsonProblems,
  sessionDocumentProblems,
  sessionRuleProblems,
} from '../helpers/vpp-schemas.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);
const VPP_ACL = await loadTarget('vpp-acl');
const VPPTCP = await loadTarget('vpptcp');

describe('VPP documents against vpp-agent’s and VPP’s own definitions', () => {
  it('every vpp-acl and vpptcp document of random clusters validates', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 7, maxPolicies: 4, maxClusterPolicies: 2 }), (objects) => {
        const cluster = clusterOf(objects);
        for (const { node, output } of renderCluster(VPP_ACL, cluster))
          for (const [key, text] of aclDocuments(output, vppKeys('vpp-acl', node ?? '').acl))
            assert.deepEqual(aclProblems(text), [], key);
        for (const { node, output } of renderCluster(VPPTCP, cluster))
          for (const [key, text] of sessionDocuments(output, vppKeys('vpptcp', node ?? '').sessions))
            assert.deepEqual(sessionDocumentProblems(text), [], key);
      }),
      { numRuns: RUNS },
    );
  });

  it('the checks refuse what vpp-agent or VPP would not read (they can fail)', () => {
    const acl = {
      name: 'a',
      rules: [{ action: 'PERMIT', ip_rule: { ip: { destination_network: '10.0.0.0/8', protocol: 6 } } }],
    };
    assert.deepEqual(aclProblems(JSON.stringify(acl)), []);
    assert.match(aclProblems(JSON.stringify({ ...acl, acl_name: 'x' })).join(), /ACL has no field acl_name/);
    assert.match(
      aclProblems(JSON.stringify({ ...acl, rules: [{ action: 'ALLOW' }] })).join(),
      /"ALLOW" is not one of DENY, PERMIT, REFLECT/,
    );
    assert.match(
      aclProblems(
        JSON.stringify({ ...acl, rules: [{ action: 1, ip_rule: { ip: { protocol: 256 } } }] }),
      ).join(),
      /256 is not an integer in 0\.\.255/,
    );
    // JSON names are proto3's too.
    assert.deepEqual(
      aclProblems(JSON.stringify({ name: 'a', rules: [{ ipRule: { ip: { sourceNetwork: '::/0' } } }] })),
      [],
    );
    assert.deepEqual(
      proto3JsonProblems(INTERFACE_MESSAGE, { name: 'tap-1', type: 'TAP', enabled: true }),
      [],
    );
    const rule = {
      transport_proto: 'TRANSPORT_PROTO_API_TCP',
      lcl: '10.1.0.3/32',
      rmt: '0.0.0.0/0',
      lcl_port: 0,
      rmt_port: 5432,
      action_index: 4294967294,
      is_add: true,
      scope: 'SESSION_RULE_SCOPE_API_LOCAL',
      tag: 'in-1',
    };
    assert.deepEqual(sessionRuleProblems(rule), []);
    assert.match(
      sessionRuleProblems({ ...rule, transport_proto: 6 }).join(),
      /6 is not one of TRANSPORT_PROTO_API_TCP/,
    );
    assert.match(sessionRuleProblems({ ...rule, is_ip4: true }).join(), /has no field is_ip4/);
    assert.match(sessionRuleProblems({ ...rule, rmt_port: 70000 }).join(), /70000 is not a u16/);
    assert.match(sessionRuleProblems({ ...rule, tag: 'x'.repeat(64) }).join(), /shorter than 64 bytes/);
    const { scope: _scope, ...withoutScope } = rule;
    void _scope;
    assert.match(sessionRuleProblems(withoutScope).join(), /scope: missing/);
  });
});
