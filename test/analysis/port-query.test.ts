/**
 * The one reader of port queries (`check --port`, `matrix --port`, `assert`'s `port:`): every
 * form any of them took before still reads the same, and each bad form gets its message.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FILE_SPELLING, parsePortQuery, type PortQueryOptions } from '../../src/analysis/port-query.ts';

const ok = (text: string, options?: PortQueryOptions) => {
  const parsed = parsePortQuery(text, options);
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
  return parsed.query;
};
const bad = (text: string, options?: PortQueryOptions) => {
  const parsed = parsePortQuery(text, options);
  assert.ok(!parsed.ok, `${text} was read as ${JSON.stringify(parsed)}`);
  return [parsed.field, parsed.message];
};

describe('parsePortQuery', () => {
  it('reads a number, a name and either with its protocol, in any case', () => {
    assert.deepEqual(ok('80'), { port: 80, protocol: 'TCP' });
    assert.deepEqual(ok('1'), { port: 1, protocol: 'TCP' });
    assert.deepEqual(ok('65535'), { port: 65535, protocol: 'TCP' });
    assert.deepEqual(ok('http'), { port: 'http', protocol: 'TCP' });
    assert.deepEqual(ok('53/UDP'), { port: 53, protocol: 'UDP' });
    assert.deepEqual(ok('53/udp'), { port: 53, protocol: 'UDP' });
    assert.deepEqual(ok('dns/Sctp'), { port: 'dns', protocol: 'SCTP' });
    assert.deepEqual(ok('metrics-2'), { port: 'metrics-2', protocol: 'TCP' });
  });

  it('takes a protocol given apart, which a port naming its own must agree with', () => {
    assert.deepEqual(ok('53', { protocol: 'udp' }), { port: 53, protocol: 'UDP' });
    assert.deepEqual(ok('53/UDP', { protocol: 'UDP' }), { port: 53, protocol: 'UDP' });
    assert.deepEqual(bad('53/UDP', { protocol: 'TCP' }), [
      'protocol',
      '--port 53/UDP says UDP but --protocol says TCP',
    ]);
    // A default for many ports is overridden by a port that names its own.
    assert.deepEqual(ok('53/UDP', { protocol: 'TCP', protocolIsForThisPort: false }), {
      port: 53,
      protocol: 'UDP',
    });
  });

  it('says what is wrong, naming the fields as the caller does', () => {
    assert.deepEqual(bad('0'), ['port', '--port 0 is not between 1 and 65535']);
    assert.deepEqual(bad('70000'), ['port', '--port 70000 is not between 1 and 65535']);
    assert.deepEqual(bad('HTTP'), [
      'port',
      '--port "HTTP" is neither a port number nor a port name (port names are lower case: "http")',
    ]);
    assert.deepEqual(bad('a b'), [
      'port',
      `--port "a b" is neither a port number nor a port name (a port name must contain only lower-case alphanumeric characters and '-')`,
    ]);
    assert.deepEqual(bad('a-very-long-port-name'), [
      'port',
      '--port "a-very-long-port-name" is neither a port number nor a port name (a port name must be no more than 15 characters)',
    ]);
    assert.deepEqual(bad('80/ICMP'), ['port', '--port 80/ICMP: "ICMP" is not TCP, UDP or SCTP']);
    assert.deepEqual(bad('80/'), ['port', '--port 80/: no protocol after "/" (TCP, UDP or SCTP)']);
    assert.deepEqual(bad('http/UDP/x'), ['port', '--port http/UDP/x: "x" is not TCP, UDP or SCTP']);
    assert.deepEqual(bad('/UDP'), ['port', '--port "/UDP": give a port number or name']);
    assert.deepEqual(bad(''), ['port', '--port "": give a port number or name']);
    assert.deepEqual(bad('80', { protocol: 'icmp' }), [
      'protocol',
      '--protocol "icmp" is not TCP, UDP or SCTP',
    ]);
    // An empty protocol given apart (`--protocol ''`, `protocol: ""`) has no "/" to speak of.
    assert.deepEqual(bad('80', { protocol: '' }), ['protocol', '--protocol is empty (TCP, UDP or SCTP)']);
    const file = { spelling: FILE_SPELLING };
    assert.deepEqual(bad('53/UDP', { ...file, protocol: 'TCP' }), [
      'protocol',
      'port 53/UDP says UDP but protocol says TCP',
    ]);
    assert.deepEqual(bad('70000', file), ['port', 'port 70000 is not between 1 and 65535']);
  });
});
