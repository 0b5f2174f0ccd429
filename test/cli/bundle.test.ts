/**
 * The executable as `npm ci` builds it (scripts/bundle-cli.mjs, esbuild): bundled into a
 * temporary directory, it starts, answers exactly as the in-process CLI does (help, a matrix, a
 * usage error, a render through a lazily loaded target), keeps the lab's pod agent beside itself
 * and that agent starts. Everything it made is removed afterwards.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { cli } from '../helpers/cli.ts';

const exec = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');

describe('the bundled executable', () => {
  // Inside node_modules, as dist/bin is: the packages left external (etcd3, gRPC, koffi) resolve.
  mkdirSync(join(ROOT, 'node_modules', '.cache'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, 'node_modules', '.cache', `palisade-bundle-${process.pid}-`));
  const bin = join(dir, 'bin');
  const palisade = (args: readonly string[]) =>
    exec(process.execPath, [join(bin, 'palisade.js'), ...args], { cwd: ROOT }).catch(
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
  before(async () => {
    await exec(process.execPath, [join(ROOT, 'scripts', 'bundle-cli.mjs'), bin]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('prints its version and the help listing every command', async () => {
    assert.equal((await palisade(['--version'])).stdout, '0.1.0\n');
    const help = await palisade(['--help']);
    assert.equal(help.stdout, (await cli(['--help'])).stdout);
    assert.match(help.stdout, /\bmatrix\b[\s\S]*\brender\b[\s\S]*\blab\b/);
  });

  it('answers as the in-process CLI does', async () => {
    for (const args of [
      ['matrix', '-f', 'examples/shop'],
      ['render', '--target', 'vpp-acl', '-f', 'examples/shop-running', 'examples/shop/namespaces.yaml'],
      ['validate', '-f', 'no-such-file.yaml'],
      ['matrix', '--no-such-option'],
      // Loads etcd3, whose gRPC definitions are read from its own folder at import.
      ['status', '--etcd', 'http://127.0.0.1:1'],
    ]) {
      const bundled = await palisade(args);
      const inProcess = await cli(args);
      assert.equal(bundled.stdout, inProcess.stdout, args.join(' '));
      assert.equal(sameReason(bundled.stderr), sameReason(inProcess.stderr), args.join(' '));
      assert.equal((bundled as { code?: number }).code ?? 0, inProcess.code, args.join(' '));
    }
  });

  it("keeps the lab's pod agent beside it, and the agent starts", async () => {
    assert.ok(existsSync(join(bin, 'pod-agent.js')), readdirSync(bin).join(' '));
    // The reflector's encode pool looks for its worker beside itself and encodes on the main
    // thread when it is missing: a missing entry point would only show as a slower reflect.
    assert.ok(existsSync(join(bin, 'encode-worker.js')), readdirSync(bin).join(' '));
    const socket = join(dir, 'agent.sock');
    const agent = spawn(process.execPath, [join(bin, 'pod-agent.js'), socket], { stdio: 'ignore' });
    try {
      const deadline = Date.now() + 30_000;
      while (!existsSync(socket) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.ok(existsSync(socket), 'the agent opened its control socket');
    } finally {
      agent.kill();
    }
  });
});

/**
 * Why etcd could not be reached is the first thing the client meets — the refusal, or on a loaded
 * machine its 5 s deadline before that (a clean-clone CI run at load 50 had one of each): both
 * right, so that part of the line is not compared.
 */
function sameReason(stderr: string): string {
  return stderr.replace(/(cannot reach etcd at \S+): .*/g, '$1: …');
}
