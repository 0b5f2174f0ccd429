/**
 * The commands as users run them: outputs, the JSON contract, exit codes, and no stack traces.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { cli } from '../helpers/cli.ts';
import { loadCluster } from '../../src/ingest/load.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { palisadeArgv } from '../helpers/executable.ts';

const EXAMPLE = 'examples/shop';
const LEGACY = 'test/fixtures/legacy.yaml';

describe('palisade check', () => {
  it('explains an allowed connection', async () => {
    const r = await cli([
      'check',
      '-f',
      EXAMPLE,
      '--from',
      'shop/frontend',
      '--to',
      'shop/api',
      '--port',
      'http',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^shop\/frontend → shop\/api TCP\/http \(8000\): ALLOWED/);
    assert.match(r.stdout, /egress +allow +allowed by shop\/frontend egress\[0\]/);
    assert.match(r.stdout, /ingress allow +allowed by shop\/api ingress\[0\]/);
  });
  it('explains a denied connection rule by rule', async () => {
    const r = await cli([
      'check',
      '-f',
      EXAMPLE,
      '--from',
      'shop/frontend',
      '--to',
      'shop/db',
      '--port',
      '5432',
    ]);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /DENIED/);
    assert.match(r.stdout, /shop\/frontend egress\[0\]: shop\/db does not match/);
  });
  it('gives the same as JSON', async () => {
    const r = await cli([
      'check',
      '-f',
      EXAMPLE,
      '--from',
      'payments/gateway',
      '--to',
      '203.0.113.10',
      '--port',
      '443',
      '-o',
      'json',
    ]);
    const json = JSON.parse(r.stdout) as { verdict: { allowed: boolean; egress: { matches: unknown[] } } };
    assert.equal(json.verdict.allowed, true);
    assert.deepEqual(json.verdict.egress.matches, [
      { policy: 'payments/gateway', rule: 0, peer: 0, port: 0 },
    ]);
  });
  it('--expect turns a verdict into an exit code', async () => {
    const args = [
      'check',
      '-f',
      EXAMPLE,
      '--from',
      'payments/gateway',
      '--to',
      '203.0.113.200',
      '--port',
      '443',
    ];
    assert.equal((await cli([...args, '--expect', 'deny'])).code, 0);
    const wrong = await cli([...args, '--expect', 'allow']);
    assert.equal(wrong.code, 3);
    assert.match(wrong.stderr, /expected allow, but the connection is denied/);
  });
  it('a wrong verdict (3) is told apart from an invalid object elsewhere in the input (1)', async () => {
    // Issue 19 §1.4: both were 1, so CI could not tell a failed policy test from a typo.
    const args = [
      'check',
      '-f',
      EXAMPLE,
      'test/fixtures/broken.yaml',
      '--from',
      'payments/gateway',
      '--to',
      '203.0.113.200',
      '--port',
      '443',
    ];
    const right = await cli([...args, '--expect', 'deny']);
    assert.equal(right.code, 1, 'the verdict is as expected, but the input holds an invalid policy');
    assert.match(right.stderr, /not-a-cidr/);
    const wrong = await cli([...args, '--expect', 'allow']);
    assert.equal(wrong.code, 3, 'a wrong verdict wins over input errors');
    assert.match(wrong.stderr, /expected allow, but the connection is denied/);
  });
  it('usage errors exit 2 with one clear line', async () => {
    const unknown = await cli([
      'check',
      '-f',
      EXAMPLE,
      '--from',
      'shop/nope',
      '--to',
      'shop/api',
      '--port',
      '80',
    ]);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /--from: no pod or workload "shop\/nope"/);
    // A typo is answered with the names it is close to, not every name sharing two letters.
    const typo = await cli(['check', '-f', EXAMPLE, '--from', 'shop/ap', '--to', 'shop/db', '--port', '80']);
    assert.match(typo.stderr, /\(did you mean shop\/api\?\)/);
    // What the message quotes is shown with control characters escaped.
    const colour = `shop/${String.fromCharCode(0x1b)}[31mx`;
    const escaped = await cli(['check', '-f', EXAMPLE, '--from', colour, '--to', 'shop/api', '--port', '80']);
    assert.equal(escaped.code, 2);
    assert.match(escaped.stderr, /no pod or workload "shop\/\\x1b\[31mx"/);
    const fromApi = ['check', '-f', EXAMPLE, '--from', 'shop/api'];
    const port = await cli([...fromApi, '--to', 'shop/db', '--port', 'http']);
    assert.equal(port.code, 2);
    assert.match(port.stderr, /shop\/db has no TCP container port named "http"/);
    // A port with its protocol, as matrix and assert take it; a named port on another protocol is pointed at.
    const from = [...fromApi, '--to', 'kube-system/coredns'];
    const inlineUdp = await cli([...from, '--port', '53/UDP', '-o', 'json']);
    assert.equal(inlineUdp.code, 0, inlineUdp.stderr);
    assert.equal((JSON.parse(inlineUdp.stdout) as { protocol: string }).protocol, 'UDP');
    const clash = await cli([...from, '--port', '53/UDP', '--protocol', 'TCP']);
    assert.equal(clash.code, 2);
    assert.match(clash.stderr, /--port 53\/UDP says UDP but --protocol says TCP/);
    const otherProtocol = await cli([...from, '--port', 'dns']);
    assert.match(
      otherProtocol.stderr,
      /no TCP container port named "dns" \(it has one on UDP: --port dns\/UDP\)/,
    );
    // A mistyped address is called one, not a domain name; a CIDR is not an address.
    const badIp = await cli([...fromApi, '--to', '300.1.1.1', '--port', '80']);
    assert.equal(badIp.code, 2);
    assert.match(badIp.stderr, /--to: "300\.1\.1\.1" is not a valid IP address/);
    const cidr = await cli([...fromApi, '--to', '10.0.0.0/8', '--port', '80']);
    assert.match(cidr.stderr, /--to: "10\.0\.0\.0\/8" is a CIDR/);
    // matrix refuses a port name no pod has, rather than a table of denials that reads as an answer.
    const matrixPort = await cli(['matrix', '-f', EXAMPLE, '--port', 'postgress']);
    assert.equal(matrixPort.code, 2);
    assert.equal(matrixPort.stdout, '');
    assert.match(
      matrixPort.stderr,
      /--port postgress: no pod in the matrix has a TCP container port named "postgress"/,
    );
    const udpName = await cli(['matrix', '-f', EXAMPLE, '--port', 'postgres/UDP']);
    assert.equal(udpName.code, 2);
    const known = await cli(['matrix', '-f', EXAMPLE, '--port', 'postgres']);
    assert.equal(known.code, 0);
    const missing = await cli(['check', '-f', EXAMPLE]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^palisade: required option '--from <address>' not specified/);
    const bad = await cli(['frobnicate']);
    assert.equal(bad.code, 2);
    assert.doesNotMatch(unknown.stderr + port.stderr + missing.stderr + bad.stderr, /at .*\.ts:\d+/);
  });
});

const ESCAPE = new RegExp(String.fromCharCode(27) + '\\[');

describe('palisade matrix', () => {
  it('follows the JSON contract: every ordered pair, self pairs included, every port', async () => {
    const r = await cli([
      'matrix',
      '-f',
      EXAMPLE,
      '--port',
      '8000',
      '--port',
      '53',
      '--protocol',
      'UDP',
      '-o',
      'json',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const { results } = JSON.parse(r.stdout) as {
      results: { from: string; to: string; port: number; protocol: string; allowed: boolean }[];
    };
    assert.equal(results.length, 6 * 6 * 2);
    assert.deepEqual(results[0], {
      from: 'kube-system/coredns',
      to: 'kube-system/coredns',
      port: 8000,
      protocol: 'UDP',
      allowed: true,
      fromKind: 'Deployment',
      toKind: 'Deployment',
    });
    const find = (from: string, to: string, port: number) =>
      results.find((x) => x.from === from && x.to === to && x.port === port);
    assert.equal(find('shop/api', 'kube-system/coredns', 53)?.allowed, true);
    assert.equal(find('payments/gateway', 'shop/api', 53)?.allowed, false);
  });
  it('prints a text table, and csv and markdown', async () => {
    const text = await cli(['matrix', '-f', EXAMPLE, '--port', '8000', '-n', 'shop']);
    assert.match(
      text.stdout,
      /^TCP\/8000 +1 +2 +3 +4\nshop\/api\[Deployment\] +X +X +X +X +1\nshop\/db\[StatefulSet\] +X +X +X +X +2\nshop\/frontend\[Deployment\] +\. +X +X +X +3\n0\.0\.0\.0\/0 +X +X +X +- +4\n/,
    );
    const csv = await cli(['matrix', '-f', EXAMPLE, '--port', '8000', '-n', 'shop', '-o', 'csv']);
    assert.match(
      csv.stdout,
      /^from,to,port,protocol,allowed\nshop\/api\[Deployment\],shop\/api\[Deployment\],8000,TCP,false\n/,
    );
    // A header, the 9 pairs, and each of the 3 rows to and from the addresses outside the cluster.
    assert.equal(csv.stdout.trim().split('\n').length, 1 + 9 + 6);
    const md = await cli(['matrix', '-f', EXAMPLE, '--port', '8000', '-n', 'shop', '-o', 'md']);
    assert.match(md.stdout, /\| shop\/frontend\[Deployment\] \| ✓ \| ✗ \| ✗ \| ✗ \|/);
    assert.match(md.stdout, /\| 0\.0\.0\.0\/0 \| ✗ \| ✗ \| ✗ \| – \|/);
  });
  it('lists allowed ports per pair when no port is given', async () => {
    const r = await cli(['matrix', '-f', EXAMPLE]);
    assert.match(r.stdout, /^shop\/api\[Deployment\] → shop\/db\[StatefulSet\]: TCP 5432$/m);
    assert.match(
      r.stdout,
      /^shop\/frontend\[Deployment\] → kube-system\/coredns\[Deployment\]: TCP 53; UDP 53$/m,
    );
    const json = JSON.parse((await cli(['matrix', '-f', EXAMPLE, '-o', 'json'])).stdout) as {
      results: { from: string; to: string; ports: object }[];
    };
    assert.deepEqual(json.results.find((x) => x.from === 'shop/api' && x.to === 'payments/gateway')?.ports, {
      TCP: [[8443, 8443]],
    });
  });
  it('colours only on a TTY', async () => {
    assert.doesNotMatch((await cli(['matrix', '-f', EXAMPLE, '--port', '80'])).stdout, ESCAPE);
    assert.match((await cli(['matrix', '-f', EXAMPLE, '--port', '80'], { tty: true })).stdout, ESCAPE);
  });
  it('rejects a bad --port', async () => {
    const r = await cli(['matrix', '-f', EXAMPLE, '--port', '70000']);
    assert.equal(r.code, 2);
  });
});

describe('palisade explain', () => {
  it('says what each endpoint lets in and out', async () => {
    const r = await cli(['explain', '-f', EXAMPLE, '--pod', 'shop/db']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^shop\/db \(StatefulSet; no IP; app=db,tier=data\)/);
    assert.match(r.stdout, /ingress: isolated by shop\/db, shop\/default-deny; 1 rule allows traffic/);
    assert.match(
      r.stdout,
      /from pods app=api in namespace shop on TCP postgres \(shop\/db ingress\[0\]; matches shop\/api\)/,
    );
    const json = JSON.parse(
      (await cli(['explain', '-f', EXAMPLE, '-n', 'monitoring', '-o', 'json'])).stdout,
    ) as {
      endpoints: { endpoint: string; ingress: { isolated: boolean } }[];
    };
    assert.deepEqual(
      json.endpoints.map((e) => [e.endpoint, e.ingress.isolated]),
      [['monitoring/prometheus', false]],
    );
  });

  it('says when a rule allows nothing because no destination declares the port it names', async (t) => {
    const dir = await tempDir(t, 'palisade-explain-ports-');
    const pod = (name: string, port: string, number: number, ip: string): string =>
      `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, namespace: a, labels: {app: ${name}}}\nspec:\n  containers:\n  - name: c\n    ports: [{containerPort: ${number}, name: ${port}}]\nstatus: {podIP: ${ip}}\n`;
    const policy = (name: string, spec: string): string =>
      `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: ${name}, namespace: a}\nspec:\n${spec}`;
    await writeFile(
      join(dir, 'all.yaml'),
      [
        pod('web', 'http', 80, '10.1.0.1'),
        pod('db', 'pg', 5432, '10.1.0.2'),
        policy(
          'db',
          '  podSelector: {matchLabels: {app: db}}\n  ingress:\n  - ports: [{port: postgres}]\n  - ports: [{port: pg}]\n',
        ),
        policy(
          'web',
          '  podSelector: {matchLabels: {app: web}}\n  policyTypes: [Egress]\n  egress:\n  - to: [{podSelector: {matchLabels: {app: db}}}]\n    ports: [{port: postgres}]\n',
        ),
      ].join('---\n'),
    );
    const db = await cli(['explain', '-f', dir, '--pod', 'a/db']);
    assert.equal(db.code, 0, db.stderr);
    assert.match(
      db.stdout,
      /ingress: isolated by a\/db; 1 of 2 rules allow traffic: 1 names only ports no destination declares/,
    );
    assert.match(
      db.stdout,
      /a\/db ingress\[0\];[^\n]*allows nothing: a\/db declares no TCP port named postgres\n/,
    );
    assert.doesNotMatch(db.stdout, /ingress\[1\];[^\n]*allows nothing/);
    const web = await cli(['explain', '-f', dir, '--pod', 'a/web']);
    assert.match(
      web.stdout,
      /a\/web egress\[0\];[^\n]*allows nothing: no pod it reaches declares a TCP port named postgres/,
    );
  });

  it("puts NetworkPolicy's rules under a heading of their own after a tier's", async () => {
    const r = await cli(['explain', '-f', EXAMPLE, join(EXAMPLE, '..', 'tiers'), '--pod', 'shop/db']);
    assert.equal(r.code, 0, r.stderr);
    const ingress = r.stdout.split('\n  egress:')[0] as string;
    const lines = ingress.split('\n').map((line) => line.trim());
    const admin = lines.indexOf('Admin tier, before NetworkPolicy:');
    const networkPolicy = lines.indexOf('NetworkPolicy:');
    const rule = lines.findIndex((line) => line.includes('(shop/db ingress[0]'));
    assert.ok(admin >= 0 && admin < networkPolicy && networkPolicy < rule, ingress);
    assert.ok(
      lines.slice(networkPolicy + 1).every((line) => !line.includes('anp/')),
      ingress,
    );
  });
});

describe('palisade validate', () => {
  it('passes the bundled example', async () => {
    const r = await cli(['validate', '-f', EXAMPLE]);
    assert.equal(r.code, 0);
    assert.match(
      r.stdout,
      /^0 errors, 0 warnings, 0 infos; 4 namespaces, 6 endpoints, 6 policies, 1 service\n$/,
    );
  });
  it('exits 1 on errors and lists them with file, line and column', async (t) => {
    const dir = await tempDir(t, 'palisade-cli-');
    const file = join(dir, 'bad.yaml');
    await writeFile(
      file,
      'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p}\nspec:\n  podSelector: {}\n  ingress:\n    - from: [{ipBlock: {cidr: 10.0.0.0/33}}]\n',
    );
    const r = await cli(['validate', '-f', file]);
    assert.equal(r.code, 1);
    assert.match(
      r.stdout,
      new RegExp(
        `${file.replace(/[/.]/g, '\\$&')}:7:31: error CIDR_INVALID: "10\\.0\\.0\\.0/33" has a prefix length over 32`,
      ),
    );
    const json = JSON.parse((await cli(['validate', '-f', file, '-o', 'json'])).stdout) as {
      diagnostics: { code: string; line: number }[];
    };
    assert.deepEqual(
      json.diagnostics.map((d) => [d.code, d.line]),
      [['CIDR_INVALID', 7]],
    );
  });
  it('reads stdin', async () => {
    const r = await cli(['validate', '-f', '-'], {
      stdin: 'kind: Pod\napiVersion: v1\nmetadata: {name: p, namespace: x}\n',
    });
    assert.equal(r.code, 0);
    assert.match(r.stdout, /<stdin>:1:1: info NAMESPACE_IMPLICIT/);
  });
  it('refuses stdin named twice, in one option or two (the second read as an empty file)', async () => {
    const stdin = 'kind: Namespace\napiVersion: v1\nmetadata: {name: a}\n';
    for (const [args, flags] of [
      [['validate', '-f', '-', '-f', '-'], '-f names - (standard input) twice'],
      [['diff', '-f', '-', '--to', '-'], '-f and --to both name - (standard input)'],
      // (a bad --port, so that serve, unfixed, stops before it listens)
      [
        ['serve', '-f', '-', '--against', '-', '--port', 'x'],
        '-f and --against both name - (standard input)',
      ],
    ] as const) {
      const r = await cli(args, { stdin });
      assert.equal(r.code, 2, args.join(' '));
      assert.equal(r.stdout, '');
      assert.match(
        r.stderr,
        new RegExp(`^palisade: ${flags.replace(/[()]/g, '\\$&')}; it can be read only once`),
      );
    }
  });
  it('analysis commands still answer, and exit 1, when part of the input is broken', async () => {
    const r = await cli([
      'matrix',
      '-f',
      EXAMPLE,
      '-f',
      'test/fixtures/broken.yaml',
      '--port',
      '8000',
      '-n',
      'shop',
    ]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /broken\.yaml:\d+:\d+: error/);
    assert.match(r.stdout, /shop\/frontend\[Deployment\] +\. +X +X/);
  });
});

describe('palisade convert and --semantics', () => {
  it('rewrites legacy input as v1 and the two agree', async () => {
    const converted = await cli(['convert', '-f', LEGACY, '--to', 'v1']);
    assert.equal(converted.code, 0, converted.stderr);
    assert.match(converted.stdout, /name: legacy-default-deny-ingress/);
    assert.doesNotMatch(converted.stdout, /net\.beta\.kubernetes\.io/);
    assert.match(converted.stderr, /CONVERT_POLICY_DROPPED/);
    const before = await cli([
      'matrix',
      '-f',
      LEGACY,
      '--semantics',
      'v1beta1-proposal',
      '--port',
      '6379',
      '-o',
      'json',
    ]);
    const after = await cli(['matrix', '-f', '-', '--port', '6379', '-o', 'json'], {
      stdin: converted.stdout,
    });
    assert.equal(after.stdout, before.stdout);
    const v1 = await cli(['matrix', '-f', LEGACY, '--port', '6379', '-o', 'json']);
    assert.notEqual(v1.stdout, before.stdout, 'v1 semantics read the same input differently');
    assert.match(v1.stderr, /LEGACY_ANNOTATION_IGNORED/);
  });
  it('passes v1 input through unchanged, and honours --semantics', async () => {
    const r = await cli(['convert', '-f', EXAMPLE, '--to', 'v1', '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    const { items } = JSON.parse(r.stdout) as { items: unknown[] };
    const loaded = await loadCluster([EXAMPLE]);
    assert.deepEqual(
      items,
      loaded.rawObjects.map((o) => o.value),
    );
    assert.equal(items.filter((o) => (o as { kind: string }).kind === 'NetworkPolicy').length, 6);
    // Said to be written for the proposal, the same input is read as the proposal reads it.
    const proposal = await cli(['convert', '-f', EXAMPLE, '--to', 'v1', '--semantics', 'v1beta1-proposal']);
    assert.match(proposal.stderr, /CONVERT_POLICY_DROPPED/);
    assert.match(
      proposal.stderr,
      /shop\/default-deny declares policyTypes Egress, which the v1beta1 proposal/,
    );
    // Legacy objects said to be v1 keep their meaning: only the apiVersion moves.
    const asV1 = await cli(['convert', '-f', LEGACY, '--to', 'v1', '--semantics', 'v1', '-o', 'json']);
    const legacyItems = (JSON.parse(asV1.stdout) as { items: { apiVersion: string; kind: string }[] }).items;
    assert.ok(
      legacyItems
        .filter((o) => o.kind === 'NetworkPolicy')
        .every((o) => o.apiVersion === 'networking.k8s.io/v1'),
    );
    assert.match(asV1.stdout, /net\.beta\.kubernetes\.io/);
    assert.doesNotMatch(asV1.stderr, /CONVERT_/);
    // And where it has no meaning it is refused, not ignored.
    const tiers = await cli(['convert', '-f', 'examples/tiers', '--to', 'v1alpha2', '--semantics', 'v1']);
    assert.equal(tiers.code, 2);
  });
  it('rejects unknown semantics', async () => {
    const r = await cli(['matrix', '-f', LEGACY, '--semantics', 'v2']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--semantics must be one of v1, v1beta1-proposal/);
  });
});

describe('the installed executable', () => {
  it('stops quietly when its reader closes the pipe early', async (t) => {
    // Enough output to fill the pipe: a generated cluster's compile output as JSON.
    const dir = await tempDir(t, 'palisade-pipe-');
    await cli(['generate', '--shape', 'c', '--scale', '0.2', '-o', dir]);
    const child = spawn(process.execPath, [...palisadeArgv(), 'compile', '-f', dir, '-o', 'json']);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(stderr, '');
    assert.equal(code, 0);
  });
  it('runs as a real process and prints help and version', async () => {
    const exec = promisify(execFile);
    const { stdout } = await exec(process.execPath, [...palisadeArgv(), '--help']);
    for (const command of ['check', 'matrix', 'explain', 'validate', 'convert', 'compile', 'generate'])
      assert.match(stdout, new RegExp(`\\b${command}\\b`));
    const version = await exec(process.execPath, [...palisadeArgv(), '--version']);
    assert.equal(version.stdout.trim(), '0.1.0');
    const failed = await exec(process.execPath, [...palisadeArgv(), 'validate', '-f', 'nope.yaml']).catch(
      (e: { code: number; stdout: string }) => e,
    );
    assert.equal((failed as { code: number }).code, 1);
    assert.match((failed as { stdout: string }).stdout, /nope\.yaml: error FILE_NOT_FOUND/);
  });
});
