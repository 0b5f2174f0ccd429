/**
 * The part of kustomize deploy/ uses, so the tests render it without kubectl (Debian's kubectl,
 * 1.20, carries a kustomize too old for `patches` and components): `resources` (files, and
 * directories holding a kustomization), `components`, and `patches` that are RFC 6902 JSON
 * patches (inline `patch` or a `path`) aimed at a `target` by group, version, kind and name.
 * Anything else in a kustomization is an error here, so deploy/ cannot drift past what this
 * renders; where kubectl is installed the tests also compare this with `kubectl kustomize`.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';

export type Json = Record<string, unknown>;

interface Patch {
  readonly target: { group?: string; version?: string; kind?: string; name?: string };
  readonly patch?: string;
  readonly path?: string;
}

interface Kustomization {
  readonly kind?: string;
  readonly resources?: string[];
  readonly components?: string[];
  readonly patches?: Patch[];
}

const KNOWN = new Set(['apiVersion', 'kind', 'resources', 'components', 'patches']);

/** The objects `kubectl kustomize dir` would print (in the order they are declared). */
export function kustomize(dir: string): Json[] {
  const file = join(dir, 'kustomization.yaml');
  const spec = parse(readFileSync(file, 'utf8')) as Kustomization;
  for (const key of Object.keys(spec))
    if (!KNOWN.has(key)) throw new Error(`${file}: "${key}" is beyond what the tests' kustomize renders`);
  const objects: Json[] = [];
  for (const resource of spec.resources ?? []) {
    const path = join(dir, resource);
    if (statSync(path).isDirectory()) objects.push(...kustomize(path));
    else objects.push(...readObjects(path));
  }
  const patches = [...(spec.patches ?? []).map((p) => ({ ...p, base: dir }))];
  for (const component of spec.components ?? []) {
    const path = join(dir, component);
    const inner = parse(readFileSync(join(path, 'kustomization.yaml'), 'utf8')) as Kustomization;
    if (inner.kind !== 'Component') throw new Error(`${path}: not a kustomize Component`);
    objects.push(...(inner.resources ?? []).flatMap((r) => readObjects(join(path, r))));
    patches.push(...(inner.patches ?? []).map((p) => ({ ...p, base: path })));
  }
  for (const patch of patches) {
    const ops = parse(patch.patch ?? readFileSync(join(patch.base, patch.path!), 'utf8')) as unknown;
    if (!Array.isArray(ops)) throw new Error(`${patch.base}: only JSON 6902 patches are rendered here`);
    const targets = objects.filter((o) => matches(o, patch.target));
    if (targets.length === 0) throw new Error(`${patch.base}: a patch's target matches nothing`);
    for (const target of targets) for (const op of ops as Json[]) applyOp(target, op);
  }
  return objects;
}

function readObjects(path: string): Json[] {
  // YAML 1.1, as kubectl reads it (0400 is octal there, and `on` a boolean).
  return parseAllDocuments(readFileSync(path, 'utf8'), { version: '1.1' })
    .map((d) => d.toJS() as Json | null)
    .filter((o): o is Json => o !== null);
}

function matches(object: Json, target: Patch['target']): boolean {
  const [group, version] = String(object.apiVersion).includes('/')
    ? String(object.apiVersion).split('/')
    : ['', String(object.apiVersion)];
  return (
    (target.group === undefined || target.group === group) &&
    (target.version === undefined || target.version === version) &&
    (target.kind === undefined || target.kind === object.kind) &&
    (target.name === undefined || target.name === (object.metadata as Json).name)
  );
}

/** One RFC 6902 operation (add, replace, remove; `-` appends) on `object`, in place. */
function applyOp(object: Json, op: Json): void {
  const path = String(op.path)
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const last = path.pop()!;
  let parent: unknown = object;
  for (const part of path) {
    parent = (parent as Record<string, unknown>)[part];
    if (parent === undefined) throw new Error(`patch path ${String(op.path)} does not exist`);
  }
  const value = structuredClone(op.value);
  if (Array.isArray(parent)) {
    const index = last === '-' ? parent.length : Number(last);
    if (op.op === 'add') parent.splice(index, 0, value);
    else if (op.op === 'replace') parent[index] = value;
    else if (op.op === 'remove') parent.splice(index, 1);
    else throw new Error(`patch op ${String(op.op)} is not rendered here`);
    return;
  }
  const record = parent as Record<string, unknown>;
  if (op.op === 'add' || op.op === 'replace') record[last] = value;
  else if (op.op === 'remove') delete record[last];
  else throw new Error(`patch op ${String(op.op)} is not rendered here`);
}

/** Objects in one order (kind, namespace, name), to compare renderings. */
export function sortedObjects(objects: readonly Json[]): Json[] {
  const key = (o: Json): string => {
    const meta = o.metadata as Json;
    return `${String(o.kind)}/${typeof meta.namespace === 'string' ? meta.namespace : ''}/${String(meta.name)}`;
  };
  return [...objects].sort((a, b) => key(a).localeCompare(key(b)));
}

const DEPLOY = join(import.meta.dirname, '..', '..', 'deploy');

/** Every way of installing: each kustomization that is not only a part of the others. */
export const INSTALLS = ['direct', 'reflected', 'reflected-etcd', 'overlays/direct-ebpf'];

const rendered = new Map<string, Json[]>();

/** The objects of `deploy/<install>`, rendered once, each call a fresh copy. */
export function render(install: string): Json[] {
  let objects = rendered.get(install);
  if (!objects) {
    objects = kustomize(join(DEPLOY, install));
    rendered.set(install, objects);
  }
  return structuredClone(objects);
}
