import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ALL_PORTS, portSetOf, subtractPorts } from '../../model/port-set.ts';
import { portListText } from './ports-text.ts';

describe('port lists as people read them', () => {
  it('a short list as it is', () => {
    const ports = portSetOf([
      { protocol: 'TCP', from: 53, to: 53 },
      { protocol: 'UDP', from: 53, to: 53 },
    ]);
    assert.equal(portListText(ports), 'TCP 53; UDP 53');
    assert.equal(portListText(ALL_PORTS), 'all');
  });

  it('every port but a few (hundreds of ranges): what it leaves out', () => {
    const holes = Array.from({ length: 300 }, (_, i) => ({
      protocol: 'TCP' as const,
      from: 1000 + 2 * i,
      to: 1000 + 2 * i,
    }));
    const ports = subtractPorts(ALL_PORTS, portSetOf([...holes, { protocol: 'UDP', from: 1, to: 65535 }]));
    // Every TCP port but 300 single ports, and SCTP: 301 ranges as they are.
    assert.equal(ports.ranges.TCP.length, 301);
    const text = portListText(ports);
    assert.ok(text.startsWith('all but TCP 1000,1002,1004,'), text);
    assert.ok(text.endsWith(',1598; UDP all'), text);
  });

  it('a long list whose complement is longer: as it is', () => {
    const ports = portSetOf(
      Array.from({ length: 40 }, (_, i) => ({
        protocol: 'TCP' as const,
        from: 2000 + 3 * i,
        to: 2000 + 3 * i,
      })),
    );
    assert.equal(portListText(ports), `TCP ${Array.from({ length: 40 }, (_, i) => 2000 + 3 * i).join(',')}`);
  });
});
