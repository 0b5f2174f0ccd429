/**
 * `palisade generate`: synthetic clusters as manifests (the shapes Antrea benchmarks on),
 * deterministic for a seed.
 */
import { Command } from 'commander';
import { countOf } from '../../util/count-of.ts';
import { fileErrorText } from '../file-error.ts';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  generateAdminPolicies,
  generateEnginePolicies,
  generateShape,
  SHAPES,
  type Json,
} from '../../generate/index.ts';
import { checkChoice } from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';

export function generateCommand(io: CliIo, done: (code: number) => void): Command {
  return new Command('generate')
    .description(
      'write a synthetic cluster: a (25,000 namespaces, 100,000 pods, 75,000 policies), b (10,000 pods, 10,000 policies selecting every pod), c (10,000 pods, a policy per pod)',
    )
    .requiredOption('--shape <name>', `one of ${SHAPES.join(', ')}`)
    .option('--scale <factor>', 'size factor (0.1 = a tenth)', '1')
    .option('--seed <n>', 'random seed', '1')
    .option(
      '--admin-policies <n>',
      'also write n AdminNetworkPolicies of 25 rules each over shape a labels (admin-policies.yaml)',
      '0',
    )
    .option(
      '--calico <n>',
      "also write n Calico NetworkPolicies (projectcalico.org/v3) over shape a's namespaces and labels, as shape a's policies are (calico-policies.yaml)",
      '0',
    )
    .option(
      '--cilium <n>',
      "also write n CiliumNetworkPolicies over shape a's namespaces and labels, as shape a's policies are (cilium-policies.yaml)",
      '0',
    )
    .requiredOption(
      '-o, --output <dir>',
      'directory to write namespaces.yaml, pods.yaml and policies.yaml into',
    )
    .action(async (raw: Record<string, unknown>) => {
      const shape = checkChoice('--shape', raw.shape, SHAPES);
      const scale = Number(raw.scale);
      const seed = Number(raw.seed);
      if (!Number.isFinite(scale) || scale <= 0 || scale > 10)
        throw new UsageError('--scale must be a number above 0 and at most 10');
      if (!Number.isInteger(seed)) throw new UsageError('--seed must be an integer');
      const admins = Number(raw.adminPolicies);
      if (!Number.isInteger(admins) || admins < 0 || admins > 100_000)
        throw new UsageError('--admin-policies must be an integer from 0 to 100000');
      const adminPolicies = generateAdminPolicies(admins, seed);
      const cluster = generateShape(shape, { scale, seed });
      const engines = (['calico', 'cilium'] as const).map((engine) => {
        const count = Number(raw[engine]);
        if (!Number.isInteger(count) || count < 0 || count > 1_000_000)
          throw new UsageError(`--${engine} must be an integer from 0 to 1000000`);
        if (count > 0 && shape !== 'a')
          throw new UsageError(`--${engine} writes policies over shape a: give --shape a`);
        return { engine, policies: generateEnginePolicies(engine, count, cluster.namespaces.length, seed) };
      });
      const dir = String(raw.output);
      // One JSON document per object: valid YAML, and fast to write and to read back. The first
      // `---` makes kubectl read the file as YAML documents: a file that starts with `{` it reads
      // as one JSON stream, which stops at the first `---`.
      const write = (name: string, objects: readonly Json[]): Promise<void> =>
        writeFile(join(dir, name), '---\n' + objects.map((o) => JSON.stringify(o)).join('\n---\n') + '\n');
      try {
        await makeDirectory(dir);
        await write('namespaces.yaml', cluster.namespaces);
        await write('pods.yaml', cluster.pods);
        await write('policies.yaml', cluster.policies);
        if (adminPolicies.length) await write('admin-policies.yaml', adminPolicies);
        for (const { engine, policies } of engines)
          if (policies.length) await write(`${engine}-policies.yaml`, policies);
      } catch (error) {
        io.stderr.write(`palisade: cannot write to ${dir}: ${fileErrorText(error)}\n`);
        done(EXIT_FINDINGS);
        return;
      }
      io.stdout.write(
        `wrote shape ${shape} (scale ${scale}, seed ${seed}) to ${dir}: ${countOf(cluster.namespaces.length, 'namespace')}, ${countOf(cluster.pods.length, 'pod')}, ${countOf(cluster.policies.length, 'policy', 'policies')}${adminPolicies.length ? `, ${countOf(adminPolicies.length, 'admin policy', 'admin policies')}` : ''}${engines
          .filter((e) => e.policies.length > 0)
          .map(
            (e) =>
              `, ${countOf(e.policies.length, `${e.engine === 'calico' ? 'Calico' : 'Cilium'} policy`, `${e.engine === 'calico' ? 'Calico' : 'Cilium'} policies`)}`,
          )
          .join('')}\n`,
      );
      done(EXIT_OK);
    });
}

/**
 * Creates the output directory. When its parent exists a plain mkdir is used: a recursive one
 * loops forever on file systems that refuse creation with ENOENT (procfs).
 */
async function makeDirectory(dir: string): Promise<void> {
  const exists = async (path: string): Promise<boolean> =>
    stat(path).then(
      () => true,
      () => false,
    );
  if (await exists(dir)) return;
  if (await exists(dirname(dir))) await mkdir(dir);
  else await mkdir(dir, { recursive: true });
}
