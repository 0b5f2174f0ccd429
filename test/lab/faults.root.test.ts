/**
 * The fault trials of the hardening issue, each run against a real lab through the real
 * executable (separate processes, as users run it): an unwritable state directory mid-apply,
 * kill -9 right after nft committed on one node, a failing second phase on one node, two applies
 * at once, a table deleted behind the lab's back, and an `nft` that hangs. Each ends with the
 * kernel enforcing exactly what the lab's policy says (a probe with 0 disagreements) and a
 * working next apply. Needs root.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireLock, run } from '../../src/dataplane/index.ts';
import { palisadeArgv } from '../helpers/executable.ts';
import { needsRoot } from '../helpers/kernel.ts';

const SKIP = needsRoot('the lab fault trials (network namespaces and nftables)');
const NAME = `f${process.pid % 100000}`;

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** The executable in its own process (test/helpers/executable.ts), with extra environment. */
function palisade(args: readonly string[], env: Record<string, string> = {}): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...palisadeArgv(), ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 + 9 : 1), stdout, stderr }));
  });
}

const namespace = (name: string, team: string) => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels: { team } },
});
const pod = (ns: string, name: string, app: string, node: string, ip: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: ns, labels: { app } },
  spec: { nodeName: node, containers: [{ name: 'c', ports: [{ containerPort: 80 }] }] },
  status: { phase: 'Running', podIP: ip },
});
const policy = (ns: string, name: string, spec: object) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: ns },
  spec,
});
const list = (items: object[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });

const PODS = [
  namespace('a', 'x'),
  namespace('b', 'y'),
  pod('a', 'web', 'web', 'n1', '10.0.1.1'),
  pod('a', 'api', 'api', 'n2', '10.0.2.1'),
  pod('b', 'db', 'db', 'n1', '10.0.1.2'),
  pod('b', 'cache', 'cache', 'n2', '10.0.2.2'),
];
/** Policy A: b's pods take traffic only from a/web. */
const A = [
  policy('b', 'from-web', {
    podSelector: {},
    ingress: [
      {
        from: [
          { namespaceSelector: { matchLabels: { team: 'x' } }, podSelector: { matchLabels: { app: 'web' } } },
        ],
      },
    ],
  }),
];
/** Policy B: a's pods are isolated, b's open; applying it changes both nodes in both directions. */
const B = [policy('a', 'isolated', { podSelector: {}, policyTypes: ['Ingress'] })];

describe('lab fault trials', { skip: SKIP }, () => {
  let dir: string;
  let stateRoot: string;
  let nftDir: string;
  let realNft: string;
  const files = { pods: '', a: '', b: '' };
  const common = (): string[] => ['--name', NAME, '--state-dir', stateRoot];

  const probeClean = async (env: Record<string, string> = {}): Promise<void> => {
    const probe = await palisade(['lab', 'probe', ...common(), '--port', '80', '--timeout', '300'], env);
    assert.match(
      probe.stdout,
      / 0 disagreements with the reference evaluator\n$/,
      probe.stdout + probe.stderr,
    );
    assert.equal(probe.code, 0, probe.stderr);
  };
  const apply = (file: string, env: Record<string, string> = {}, extra: string[] = []): Promise<Result> =>
    palisade(['lab', 'apply', ...common(), '--prune', '-f', files.pods, '-f', file, ...extra], env);
  const applyOk = async (file: string): Promise<Result> => {
    const result = await apply(file);
    assert.equal(result.code, 0, result.stderr);
    return result;
  };
  const noStackTrace = (result: Result): void => {
    assert.doesNotMatch(result.stderr, /internal error|\n\s+at /, result.stderr);
    assert.notEqual(result.code, 70);
  };
  /** An `nft` on PATH that runs the real one, and does `fault` where `when` holds. */
  const wrapper = (script: string): Record<string, string> => {
    writeFileSync(
      join(nftDir, 'nft'),
      `#!/bin/sh\nREAL=${realNft}\nCOUNT=${nftDir}/count-$(ip netns identify)\n${script}\n`,
    );
    chmodSync(join(nftDir, 'nft'), 0o755);
    return { PATH: `${nftDir}:${process.env.PATH ?? ''}`, PALISADE_NFT: 'exec' };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'palisade-faults-'));
    stateRoot = join(dir, 'state');
    nftDir = join(dir, 'bin');
    await run('mkdir', ['-p', nftDir]);
    realNft = (await run('sh', ['-c', 'command -v nft'])).stdout.trim();
    files.pods = join(dir, 'pods.json');
    files.a = join(dir, 'a.json');
    files.b = join(dir, 'b.json');
    writeFileSync(files.pods, list(PODS));
    writeFileSync(files.a, list(A));
    writeFileSync(files.b, list(B));
    const up = await palisade(['lab', 'up', ...common(), '-f', files.pods, '-f', files.a]);
    assert.equal(up.code, 0, up.stderr);
  });

  after(async () => {
    await run('chattr', ['-i', join(stateRoot, NAME)]);
    if (existsSync(join(stateRoot, NAME, 'lab.json'))) await palisade(['lab', 'down', ...common()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs the agents unprivileged, and keeps state and sockets private whatever the umask', async () => {
    const state = JSON.parse(readFileSync(join(stateRoot, NAME, 'lab.json'), 'utf8')) as {
      agents: { pid: number; socket: string }[];
    };
    for (const agent of state.agents) {
      const status = readFileSync(`/proc/${agent.pid}/status`, 'utf8');
      assert.match(status, /^Uid:\s+65534\s/m, `agent ${agent.pid} runs as nobody`);
      assert.equal((await run('stat', ['-c', '%a', agent.socket])).stdout.trim(), '600');
    }
    assert.equal((await run('stat', ['-c', '%a', join(stateRoot, NAME, 'lab.json')])).stdout.trim(), '600');
    assert.equal((await run('stat', ['-c', '%a', join(stateRoot, NAME)])).stdout.trim(), '700');
    await probeClean();
  });

  it('refuses a state file that others can write, without acting on it', async () => {
    const path = join(stateRoot, NAME, 'lab.json');
    chmodSync(path, 0o666);
    const result = await apply(files.a);
    chmodSync(path, 0o600);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /lab\.json: the file is writable by others .*refusing it/);
    noStackTrace(result);
  });

  it('an unwritable state directory mid-apply: nothing applied, said in one line; then a working apply', async () => {
    await run('chattr', ['+i', join(stateRoot, NAME)]);
    const failed = await apply(files.b);
    await run('chattr', ['-i', join(stateRoot, NAME)]);
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /could not record the lab's new policy, so nothing was applied/);
    noStackTrace(failed);
    await probeClean(); // still A, in the kernel and in the state
    const again = await apply(files.a);
    assert.match(again.stdout, /^0 changes applied/m, 'A is what runs');
    await applyOk(files.b);
    await probeClean();
    await applyOk(files.a);
  });

  it('kill -9 right after nft committed on one node: the next command sees it, the next apply repairs it', async () => {
    // The first transaction (node 1, phase one) commits; then the wrapper kills palisade.
    const env = wrapper(
      [
        '"$REAL" "$@"; rc=$?',
        'if [ "$1" = "-f" ] && [ ! -e ' + `${nftDir}/killed ]; then`,
        `  touch ${nftDir}/killed`,
        "  kill -9 $(awk '/^PPid/ {print $2}' /proc/$PPID/status)",
        'fi',
        'exit $rc',
      ].join('\n'),
    );
    const killed = await apply(files.b, env);
    assert.equal(killed.code, 137, killed.stderr);
    const probe = await palisade(['lab', 'probe', ...common(), '--port', '80', '--timeout', '300']);
    assert.match(probe.stderr, /note: n\d's table differs from the lab's policy/);
    await applyOk(files.a);
    await probeClean();
    await applyOk(files.b);
    await probeClean();
    await applyOk(files.a);
  });

  it('the second phase fails on one node: every node back to the previous policy, checked', async () => {
    const env = wrapper(
      [
        'if [ "$1" = "-f" ] && [ "$(ip netns identify)" = "pl-' + NAME + '-node0" ]; then',
        '  n=$(cat $COUNT 2>/dev/null || echo 0); n=$((n+1)); echo $n > $COUNT',
        '  if [ $n -eq 2 ]; then cat >/dev/null; echo "Error: injected failure" >&2; exit 1; fi',
        'fi',
        'exec "$REAL" "$@"',
      ].join('\n'),
    );
    const failed = await apply(files.b, env);
    assert.equal(failed.code, 1, failed.stderr);
    assert.match(
      failed.stderr,
      /applying failed: nft rejected the transaction in network namespace pl-\S+-node0:\nError: injected failure/,
    );
    assert.match(
      failed.stderr,
      /every node was returned to the previous policy \(checked against each kernel table\)/,
    );
    noStackTrace(failed);
    await probeClean();
    assert.match((await apply(files.a)).stdout, /^0 changes applied/m);
    await applyOk(files.b);
    await probeClean();
    await applyOk(files.a);
  });

  it('two applies at once: the second waits for the first; a busy lab is said in one line', async () => {
    const [first, second] = await Promise.all([apply(files.b), apply(files.a)]);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(second.code, 0, second.stderr);
    await probeClean();
    const lock = acquireLock(join(stateRoot, '.locks', `${NAME}.lock`));
    try {
      const busy = await apply(files.a, {}, ['--wait', '0.2']);
      assert.equal(busy.code, 1);
      assert.match(busy.stderr, /^palisade: lab "\S+" is busy: another palisade process \(pid \d+/m);
      noStackTrace(busy);
    } finally {
      lock.release();
    }
    await applyOk(files.a);
    await probeClean();
  });

  it('nft delete table on a node: found by the next command, repaired by the next apply', async () => {
    const node = `pl-${NAME}-node1`;
    assert.equal((await run('nft', ['delete', 'table', 'inet', 'palisade'], { netns: node })).code, 0);
    const probe = await palisade(['lab', 'probe', ...common(), '--port', '80', '--timeout', '300']);
    assert.match(
      probe.stderr,
      /note: n2's table differs from the lab's policy \(missing or of another shape\)/,
    );
    assert.equal(probe.code, 1, 'the open node is seen as disagreements');
    const repaired = await applyOk(files.a);
    assert.match(repaired.stdout, /^0 changes applied; nft operations per node: n1: 0, n2: whole table/m);
    await probeClean();
  });

  it('an nft that hangs is killed with its process group at the deadline; once it answers, the next apply works', async () => {
    const marker = `99${process.pid}`;
    const env = {
      ...wrapper(['if [ "$1" = "-f" ]; then exec sleep ' + marker + '; fi', 'exec "$REAL" "$@"'].join('\n')),
      PALISADE_NFT_TIMEOUT_MS: '1500',
    };
    const hung = await apply(files.b, env);
    assert.equal(hung.code, 1, hung.stderr);
    assert.match(hung.stderr, /nft did not answer in network namespace \S+ within 1500 ms and was killed/);
    noStackTrace(hung);
    // Anchored: the pgrep's own deadline wrapper has the pattern in its command line too.
    const left = await run('pgrep', ['-f', `^sleep ${marker}`]);
    assert.equal(left.stdout.trim(), '', 'no nft (or child of it) left running');
    await applyOk(files.b);
    await probeClean();
    await applyOk(files.a);
    await probeClean();
  });
  // Last: it takes the lab down.
  it('lab down says what it could not remove (not "already gone"), and a second down finishes', async () => {
    const labDir = join(stateRoot, NAME);
    await run('chattr', ['+i', labDir]);
    const partial = await palisade(['lab', 'down', ...common()]);
    await run('chattr', ['-i', labDir]);
    assert.equal(partial.code, 1, partial.stderr);
    assert.match(partial.stderr, new RegExp(`lab "${NAME}" is not fully down:\\n  cannot remove ${labDir}`));
    noStackTrace(partial);
    const down = await palisade(['lab', 'down', ...common()]);
    assert.equal(down.code, 0, down.stderr);
    assert.match(down.stdout, /is down \(\d+ network namespaces removed\)/);
    assert.equal(existsSync(labDir), false);
    assert.equal((await run('ip', ['netns', 'list'])).stdout.includes(`pl-${NAME}-`), false);
  });
});
