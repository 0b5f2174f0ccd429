/**
 * `lab probe --port … --protocol …`: items read as check, matrix and assert read a port (numbers,
 * 53/udp, names), the documented `--port 53,8080 --protocol TCP,UDP` as before, names resolved
 * to the numbers the lab's pods give them, and the same messages about a bad one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseProbePorts, probePorts } from '../../src/cli/probe-ports.ts';
import type { LabPod } from '../../src/lab/index.ts';

const pod = (id: string, ports: LabPod['ports']): LabPod => ({
  id,
  namespace: id.split('/')[0] as string,
  name: id.split('/')[1] as string,
  labels: {},
  ports,
  node: 'n1',
  ips: ['10.0.0.1'],
  netns: id,
  hostInterface: 'veth0',
});

const PODS = [
  pod('kube-system/coredns', [
    { name: 'dns', port: 53, protocol: 'UDP' },
    { name: 'dns-tcp', port: 53, protocol: 'TCP' },
  ]),
  pod('shop/api', [{ name: 'http', port: 8000, protocol: 'TCP' }]),
  pod('shop/web', [{ name: 'http', port: 8080, protocol: 'TCP' }]),
];

/** The ports probed for `--port` and `--protocol` (undefined: the default TCP), as `TCP/53`. */
const probed = (port: string | undefined, protocol?: string): string[] =>
  probePorts(parseProbePorts(port, protocol ?? 'TCP', protocol !== undefined), PODS).ports.map(
    (p) => `${p.protocol}/${p.port}`,
  );

const refusal = (port: string | undefined, protocol?: string): string => {
  try {
    probed(port, protocol);
  } catch (error) {
    return (error as Error).message;
  }
  return 'not refused';
};

describe('lab probe --port', () => {
  it('keeps the documented form: each port on each protocol listed', () => {
    assert.deepEqual(probed('53,8080', 'TCP,UDP'), ['TCP/53', 'UDP/53', 'TCP/8080', 'UDP/8080']);
    assert.deepEqual(probed('80'), ['TCP/80']);
    assert.deepEqual(probed(' 80 , 80 ', 'tcp'), ['TCP/80']);
  });

  it('takes a port naming its protocol, and a name for the numbers pods give it', () => {
    assert.deepEqual(probed('53/udp,8080'), ['UDP/53', 'TCP/8080']);
    assert.deepEqual(probed('53/UDP', 'TCP,UDP'), ['UDP/53']);
    assert.deepEqual(probed('http'), ['TCP/8000', 'TCP/8080']);
    assert.deepEqual(probed('dns/udp,dns-tcp'), ['UDP/53', 'TCP/53']);
    // A name on one of the protocols listed is probed there.
    assert.deepEqual(probed('dns', 'TCP,UDP'), ['UDP/53']);
  });

  it('says what check and matrix say about a bad port', () => {
    assert.equal(refusal('53/udp', 'TCP'), '--port 53/udp says UDP but --protocol says TCP');
    assert.equal(refusal('0'), '--port 0 is not between 1 and 65535');
    assert.equal(refusal('80,'), '--port "": give a port number or name');
    assert.equal(
      refusal('HTTP'),
      '--port "HTTP" is neither a port number nor a port name (port names are lower case: "http")',
    );
    assert.equal(
      refusal('53/sctp'),
      '--port 53/sctp: the lab probes TCP and UDP only (Node has no SCTP sockets)',
    );
    assert.equal(refusal('53', 'SCTP'), '--protocol must be one of TCP, UDP, not "SCTP"');
    assert.equal(
      refusal(undefined, 'UDP'),
      '--protocol needs --port (without it, every container port is probed on its protocol)',
    );
    // A name no pod has (on the protocol asked) would probe nothing.
    assert.equal(
      refusal('dns'),
      '--port dns: no pod in the lab has a TCP container port named "dns" (some have one on UDP: --port dns/UDP)',
    );
    assert.equal(
      refusal('dns', 'TCP'),
      '--port dns: no pod in the lab has a TCP container port named "dns" (some have one on UDP: --port dns --protocol UDP)',
    );
    assert.equal(refusal('redis'), '--port redis: no pod in the lab has a TCP container port named "redis"');
    assert.equal(
      refusal('redis', 'TCP,UDP'),
      '--port redis: no pod in the lab has a TCP or UDP container port named "redis"',
    );
  });

  it('probes every container port without --port', () => {
    assert.deepEqual(probed(undefined), ['TCP/53', 'UDP/53', 'TCP/8000', 'TCP/8080']);
  });
});
