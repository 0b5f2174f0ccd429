/**
 * A Cilium or Calico port entry with an invalid protocol and an invalid port gets both problems
 * reported in one run (fixing the protocol would otherwise only reveal the port), and nothing
 * that follows from the protocol being invalid rather than absent.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadFromTexts } from '../../src/ingest/load.ts';

const found = (text: string): string[] =>
  loadFromTexts([{ name: 'p.yaml', text }]).diagnostics.map((d) => `${d.code} ${d.line}:${d.column}`);

describe('a port entry with an invalid protocol', () => {
  it('Cilium toPorts: PROTOCOL_INVALID and PORT_OUT_OF_RANGE, or PORT_NAME_INVALID, together', () => {
    const text = [
      'apiVersion: cilium.io/v2',
      'kind: CiliumNetworkPolicy',
      'metadata: {name: c, namespace: a}',
      'spec:',
      '  endpointSelector: {}',
      '  ingress:',
      '  - toPorts:',
      '    - ports:',
      '      - {port: "99999", protocol: TCPX}',
      '      - {port: "80", endPort: 70000, protocol: TCPX}',
      '      - {port: "-bad-", protocol: TCPX}',
      '',
    ].join('\n');
    assert.deepEqual(found(text).sort(), [
      'PORT_NAME_INVALID 11:16',
      'PORT_OUT_OF_RANGE 10:31',
      'PORT_OUT_OF_RANGE 9:16',
      'PROTOCOL_INVALID 10:48',
      'PROTOCOL_INVALID 11:35',
      'PROTOCOL_INVALID 9:35',
    ]);
  });

  it('Calico: PROTOCOL_INVALID and PORT_OUT_OF_RANGE, without saying the ports lack a protocol', () => {
    const text = [
      'apiVersion: projectcalico.org/v3',
      'kind: GlobalNetworkPolicy',
      'metadata: {name: g}',
      'spec:',
      '  selector: all()',
      '  ingress:',
      '  - action: Allow',
      '    protocol: TCPX',
      '    destination: {ports: [99999], notPorts: ["1:70000"]}',
      '  - action: Allow',
      '    protocol: ICMPX',
      '    icmp: {type: 8}',
      '',
    ].join('\n');
    assert.deepEqual(found(text).sort(), [
      'PORT_OUT_OF_RANGE 9:27',
      'PORT_OUT_OF_RANGE 9:46',
      'PROTOCOL_INVALID 11:15',
      'PROTOCOL_INVALID 8:15',
    ]);
  });

  it('Calico: ports with no protocol at all still need one (RULE_INVALID)', () => {
    const text = [
      'apiVersion: projectcalico.org/v3',
      'kind: GlobalNetworkPolicy',
      'metadata: {name: g}',
      'spec:',
      '  selector: all()',
      '  ingress:',
      '  - action: Allow',
      '    destination: {ports: [80]}',
      '  - action: Allow',
      '    icmp: {type: 8}',
      '',
    ].join('\n');
    assert.deepEqual(found(text), ['RULE_INVALID 8:26', 'RULE_INVALID 10:11']);
  });
});
