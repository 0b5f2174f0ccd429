// What a test file needs besides Node, said by its name: `x.root.test.ts` needs root (network
// namespaces, nftables, BPF), `x.etcd.root.test.ts` a real etcd and root. The tags sit between
// the name and `.test.ts`, in alphabetical order. test/test-names.test.ts holds every name true
// to what the file imports (the helpers that start etcd, a neutron-server or Chromium, or make
// network namespaces); scripts/test.mjs and scripts/test-quick.mjs select files by them.

/** Every need a test file's name can carry, with what it means (for usage messages and docs). */
export const NEEDS = {
  browser: 'headless Chromium (playwright-core, /usr/bin/chromium)',
  etcd: 'a real etcd (etcd-server)',
  neutron: 'a real neutron-server (python3-neutron)',
  root: 'root: network namespaces, nftables, BPF',
};

/** The needs a test file's name carries, in order (`a/x.etcd.root.test.ts` → ['etcd', 'root']). */
export function needsOfName(file) {
  const base = file.split('/').at(-1) ?? file;
  if (!base.endsWith('.test.ts')) return [];
  return base
    .slice(0, -'.test.ts'.length)
    .split('.')
    .slice(1)
    .filter((part) => Object.hasOwn(NEEDS, part));
}

/**
 * Reads `--only a,b` and `--without a,b` out of command-line arguments: `{ only, without, rest }`
 * (`only` undefined when not given), or throws an Error naming an unknown need.
 */
export function parseNeedOptions(args) {
  const lists = { only: undefined, without: [] };
  const rest = [];
  for (let i = 0; i < args.length; i++) {
    const match = /^--(only|without)(?:=(.*))?$/.exec(args[i]);
    if (!match) {
      rest.push(args[i]);
      continue;
    }
    const value = match[2] ?? args[++i];
    if (value === undefined)
      throw new Error(`--${match[1]} needs a list of needs (${Object.keys(NEEDS).join(', ')})`);
    const names = value.split(',').filter(Boolean);
    for (const name of names)
      if (!Object.hasOwn(NEEDS, name))
        throw new Error(`unknown need '${name}' in --${match[1]}: one of ${Object.keys(NEEDS).join(', ')}`);
    if (match[1] === 'only') lists.only = [...(lists.only ?? []), ...names];
    else lists.without.push(...names);
  }
  return { ...lists, rest };
}

/**
 * Whether a test file is selected: with `only`, it needs at least one of them (and nothing in
 * `without`); without `only`, it needs nothing in `without`.
 */
export function selectedByNeeds(file, { only, without }) {
  const needs = needsOfName(file);
  if (needs.some((need) => without.includes(need))) return false;
  return only === undefined || needs.some((need) => only.includes(need));
}
