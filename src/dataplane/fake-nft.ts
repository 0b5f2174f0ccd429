/**
 * A fake `nft` (in the manner of knftables' `Fake`): it applies the scripts Palisade writes to a
 * model of the kernel's tables, with the kernel's rules where they matter to transaction logic —
 * a transaction is all or nothing; deleting what does not exist, or a chain or set that a rule or
 * map still refers to, fails; a rule cannot refer to a chain or set that does not exist; a map
 * key cannot be re-added with another verdict — and answers `list` queries with nft's JSON. So
 * planning, failure and recovery are tested without root. Faults can be injected: a rejected
 * transaction, one committed whose answer is lost, a runner that does not answer at all, and
 * changes made behind the renderer's back.
 *
 * It understands the subset of the language Palisade emits, not nft's whole grammar.
 */
import { DataplaneError } from './exec.ts';
import type { NftRunner } from './nft.ts';

/** One table of the model. */
export interface FakeTable {
  readonly sets: Map<string, { type: string; flags: string[]; elements: Set<string> }>;
  readonly maps: Map<string, { type: string; entries: Map<string, string> }>;
  /** Chain name → rule texts; base chains keep their `type … hook …` line apart. */
  readonly chains: Map<string, { hook?: string; rules: string[] }>;
}

/** What the next transaction does instead of committing normally. */
type FakeFault =
  | 'pass' // committed normally (to let earlier transactions through)
  | 'reject' // refused, nothing changes
  | 'lost' // committed, but the caller is told it may not have been (killed after commit)
  | 'hang'; // not committed, and the caller is told it may have been (killed before commit)

const emptyTable = (): FakeTable => ({ sets: new Map(), maps: new Map(), chains: new Map() });

function cloneTable(table: FakeTable): FakeTable {
  const copy = emptyTable();
  for (const [n, s] of table.sets) copy.sets.set(n, { ...s, elements: new Set(s.elements) });
  for (const [n, m] of table.maps) copy.maps.set(n, { ...m, entries: new Map(m.entries) });
  for (const [n, c] of table.chains) copy.chains.set(n, { ...c, rules: [...c.rules] });
  return copy;
}

class FakeError extends Error {}

/** Splits `{ a, b : goto c }` element lists at top-level commas. */
function elementsOf(text: string): string[] {
  const inner = text.trim().replace(/^\{/, '').replace(/\}$/, '');
  return inner
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
}

export class FakeNft implements NftRunner {
  readonly kind = 'fake';
  /** Tables by `family name` (e.g. `inet palisade`). */
  tables = new Map<string, FakeTable>();
  /** Every script applied successfully, in order. */
  readonly applied: string[] = [];
  private faults: FakeFault[] = [];
  /** Queries fail too while set (a runner that does not answer at all). */
  unreachable = false;

  /** The next transactions fail this way, in order. */
  inject(...faults: FakeFault[]): void {
    this.faults.push(...faults);
  }

  apply(script: string): string {
    if (script.trim() === '') return '';
    if (this.unreachable) throw new DataplaneError('nft did not answer (fake)', true);
    const fault = this.faults.shift();
    if (fault === 'reject') throw new DataplaneError('nft rejected the transaction (fake fault)');
    if (fault === 'hang') throw new DataplaneError('nft did not answer and was killed (fake fault)', true);
    const next = new Map([...this.tables].map(([k, t]) => [k, cloneTable(t)]));
    try {
      for (const command of commandsOf(script)) execute(next, command);
      validate(next);
    } catch (error) {
      if (error instanceof FakeError)
        throw new DataplaneError(`nft rejected the transaction (fake):\n${error.message}`);
      throw error;
    }
    this.tables = next;
    this.applied.push(script);
    if (fault === 'lost') throw new DataplaneError('nft was killed after it committed (fake fault)', true);
    return ''; // no echo: the fake prints no rules in nft's normal form
  }

  query(command: string): string | undefined {
    if (this.unreachable) throw new DataplaneError('nft did not answer (fake)', true);
    const words = command.trim().split(/\s+/);
    const [verb, what, family, name, object] = words;
    if (verb !== 'list') throw new DataplaneError(`fake nft: cannot answer ${command}`);
    const table = this.tables.get(`${family} ${name}`);
    if (!table) return undefined;
    const items: object[] = [{ metainfo: { version: 'fake', json_schema_version: 1 } }];
    if (what === 'table') {
      items.push({ table: { family, name } });
      for (const setName of table.sets.keys()) items.push(setJson(table, family!, name!, setName));
      for (const [mapName, map] of table.maps)
        items.push({
          map: {
            family,
            name: mapName,
            table: name,
            type: map.type,
            map: 'verdict',
            ...(map.entries.size > 0 ? { elem: [...map.entries].map(([k, v]) => [k, verdictJson(v)]) } : {}),
          },
        });
      for (const [chainName, chain] of table.chains) {
        items.push({ chain: { family, table: name, name: chainName } });
        for (const rule of chain.rules)
          items.push({ rule: { family, table: name, chain: chainName, expr: [{ fake: rule }] } });
      }
    } else if (what === 'set') {
      if (!object || !table.sets.has(object)) return undefined;
      items.push(setJson(table, family!, name!, object));
    } else throw new DataplaneError(`fake nft: cannot answer ${command}`);
    return JSON.stringify({ nftables: items });
  }

  close(): void {}

  /** The model's table, for assertions and for changes behind the renderer's back. */
  table(name = 'inet palisade'): FakeTable | undefined {
    return this.tables.get(name);
  }
}

function setJson(table: FakeTable, family: string, tableName: string, name: string): object {
  const set = table.sets.get(name)!;
  const interval = set.flags.includes('interval');
  const value = (e: string): unknown => {
    const slash = e.indexOf('/');
    if (slash > 0) return { prefix: { addr: e.slice(0, slash), len: Number(e.slice(slash + 1)) } };
    if (interval && e.includes('-')) return { range: e.split('-') };
    return /^\d+$/.test(e) ? Number(e) : e;
  };
  // A concatenation's fields one by one (an interval concatenation's address field may be a range).
  const elem = [...set.elements].map((e) =>
    e.includes(' . ') ? { concat: e.split(' . ').map(value) } : value(e),
  );
  return {
    set: {
      family,
      name,
      table: tableName,
      type: set.type.includes(' . ') ? set.type.split(' . ') : set.type,
      ...(set.flags.length > 0 ? { flags: set.flags } : {}),
      ...(elem.length > 0 ? { elem } : {}),
    },
  };
}

function verdictJson(verdict: string): object {
  const [kind, target] = verdict.split(' ');
  return target ? { [kind!]: { target } } : { [kind!]: null };
}

/** A script as one command per entry (blocks of `table … { … }` become their own commands). */
function commandsOf(script: string): string[] {
  const commands: string[] = [];
  const lines = script.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim();
    if (line === '' || line.startsWith('#')) continue;
    if (/^table \S+ \S+ \{$/.test(line)) {
      const block = [line];
      let depth = 1;
      while (depth > 0 && ++i < lines.length) {
        const l = (lines[i] ?? '').trim();
        block.push(l);
        depth += (l.match(/\{/g) ?? []).length - (l.match(/\}/g) ?? []).length;
      }
      commands.push(block.join('\n'));
    } else commands.push(line);
  }
  return commands;
}

const number = (text: string): string => (/^0x[0-9a-f]+$/i.test(text) ? String(parseInt(text, 16)) : text);

function execute(tables: Map<string, FakeTable>, command: string): void {
  let m: RegExpMatchArray | null;
  const tableOf = (family: string, name: string): FakeTable => {
    const table = tables.get(`${family} ${name}`);
    if (!table) throw new FakeError(`No such file or directory: table ${family} ${name}\n${command}`);
    return table;
  };
  if ((m = command.match(/^table (\S+) (\S+) \{\}$/))) {
    if (!tables.has(`${m[1]} ${m[2]}`)) tables.set(`${m[1]} ${m[2]}`, emptyTable());
  } else if ((m = command.match(/^table (\S+) (\S+) \{\n([\s\S]*)\}$/))) {
    const key = `${m[1]} ${m[2]}`;
    if (!tables.has(key)) tables.set(key, emptyTable());
    defineBlock(tables.get(key)!, m[3] ?? '', command);
  } else if ((m = command.match(/^delete table (\S+) (\S+)$/))) {
    tableOf(m[1]!, m[2]!);
    tables.delete(`${m[1]} ${m[2]}`);
  } else if ((m = command.match(/^add set (\S+) (\S+) (\S+) \{ (.*) \}$/))) {
    const table = tableOf(m[1]!, m[2]!);
    if (!table.sets.has(m[3]!)) table.sets.set(m[3]!, declaration(m[4]!));
  } else if ((m = command.match(/^add map (\S+) (\S+) (\S+) \{ type (.*) : verdict; \}$/))) {
    const table = tableOf(m[1]!, m[2]!);
    if (!table.maps.has(m[3]!)) table.maps.set(m[3]!, { type: m[4]!, entries: new Map() });
  } else if ((m = command.match(/^(add|delete) element (\S+) (\S+) (\S+) (\{.*\})$/))) {
    const table = tableOf(m[2]!, m[3]!);
    const set = table.sets.get(m[4]!);
    const map = table.maps.get(m[4]!);
    if (!set && !map) throw new FakeError(`No such file or directory: set ${m[4]}\n${command}`);
    for (const element of elementsOf(m[5]!)) {
      if (map) {
        const [key, verdict] = element.split(' : ').map((s) => s.trim());
        if (m[1] === 'add') {
          const existing = map.entries.get(key!);
          if (existing !== undefined && existing !== verdict)
            throw new FakeError(`File exists: ${key}\n${command}`);
          map.entries.set(key!, verdict!);
        } else if (!map.entries.delete(key!))
          throw new FakeError(`No such file or directory: element ${key}\n${command}`);
      } else if (set) {
        const value = number(element);
        if (m[1] === 'add') set.elements.add(value);
        else if (!set.elements.delete(value))
          throw new FakeError(`No such file or directory: element ${element}\n${command}`);
      }
    }
  } else if ((m = command.match(/^flush set (\S+) (\S+) (\S+)$/))) {
    const set = tableOf(m[1]!, m[2]!).sets.get(m[3]!);
    if (!set) throw new FakeError(`No such file or directory: set ${m[3]}\n${command}`);
    set.elements.clear();
  } else if ((m = command.match(/^add chain (\S+) (\S+) (\S+)$/))) {
    const table = tableOf(m[1]!, m[2]!);
    if (!table.chains.has(m[3]!)) table.chains.set(m[3]!, { rules: [] });
  } else if ((m = command.match(/^add rule (\S+) (\S+) (\S+) (.*)$/))) {
    const chain = tableOf(m[1]!, m[2]!).chains.get(m[3]!);
    if (!chain) throw new FakeError(`No such file or directory: chain ${m[3]}\n${command}`);
    chain.rules.push(m[4]!);
  } else if ((m = command.match(/^flush chain (\S+) (\S+) (\S+)$/))) {
    const chain = tableOf(m[1]!, m[2]!).chains.get(m[3]!);
    if (!chain) throw new FakeError(`No such file or directory: chain ${m[3]}\n${command}`);
    chain.rules = [];
  } else if ((m = command.match(/^delete chain (\S+) (\S+) (\S+)$/))) {
    const table = tableOf(m[1]!, m[2]!);
    if (!table.chains.has(m[3]!)) throw new FakeError(`No such file or directory: chain ${m[3]}\n${command}`);
    if (chainReferences(table, m[3]!) > 0)
      throw new FakeError(`Device or resource busy: chain ${m[3]}\n${command}`);
    table.chains.delete(m[3]!);
  } else if ((m = command.match(/^delete set (\S+) (\S+) (\S+)$/))) {
    const table = tableOf(m[1]!, m[2]!);
    if (!table.sets.has(m[3]!)) throw new FakeError(`No such file or directory: set ${m[3]}\n${command}`);
    if (setReferences(table, m[3]!) > 0)
      throw new FakeError(`Device or resource busy: set ${m[3]}\n${command}`);
    table.sets.delete(m[3]!);
  } else throw new FakeError(`syntax error (fake nft does not know this command):\n${command}`);
}

function declaration(body: string): { type: string; flags: string[]; elements: Set<string> } {
  const type = body.match(/type ([^;]+);/)?.[1]?.trim() ?? '';
  const flags =
    body
      .match(/flags ([^;]+);/)?.[1]
      ?.split(',')
      .map((f) => f.trim()) ?? [];
  return { type, flags, elements: new Set() };
}

/** A `table … { … }` block's sets, maps and chains (added to what the table has). */
function defineBlock(table: FakeTable, body: string, command: string): void {
  const lines = body.split('\n').map((l) => l.trim());
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const head = line.match(/^(set|map|chain) (\S+) \{$/);
    if (!head) {
      if (line !== '' && line !== '}')
        throw new FakeError(`syntax error in table block: ${line}\n${command}`);
      continue;
    }
    const inner: string[] = [];
    while (++i < lines.length && lines[i] !== '}') inner.push(lines[i] ?? '');
    const name = head[2]!;
    if (head[1] === 'chain') {
      const hook = inner.find((l) => l.startsWith('type '));
      table.chains.set(name, {
        ...(hook ? { hook } : {}),
        rules: inner.filter((l) => l !== hook && l !== ''),
      });
      continue;
    }
    const text = inner.join(' ');
    // As nft does: each `elements =` line in a block replaces the one before it.
    const elements = inner
      .filter((l) => l.startsWith('elements = '))
      .slice(-1)
      .flatMap((l) => elementsOf(l.slice('elements = '.length)));
    if (head[1] === 'set') {
      const set = declaration(text.replace(/;?\s*$/, ';'));
      for (const e of elements) set.elements.add(number(e));
      table.sets.set(name, set);
    } else {
      const type = text.match(/type (.*?) : verdict;/)?.[1] ?? '';
      const map = { type, entries: new Map<string, string>() };
      for (const e of elements) {
        const [k, v] = e.split(' : ');
        map.entries.set(k!.trim(), v!.trim());
      }
      table.maps.set(name, map);
    }
  }
}

const chainTargets = (text: string): string[] =>
  [...text.matchAll(/\b(?:goto|jump) (\S+)/g)].map((m) => m[1]!);
const setTargets = (text: string): string[] => [...text.matchAll(/@(\S+)/g)].map((m) => m[1]!);

function chainReferences(table: FakeTable, chain: string): number {
  let n = 0;
  for (const c of table.chains.values()) for (const r of c.rules) if (chainTargets(r).includes(chain)) n++;
  for (const m of table.maps.values())
    for (const v of m.entries.values()) if (chainTargets(v).includes(chain)) n++;
  return n;
}

function setReferences(table: FakeTable, set: string): number {
  let n = 0;
  for (const c of table.chains.values()) for (const r of c.rules) if (setTargets(r).includes(set)) n++;
  return n;
}

/** What the kernel checks at commit: every reference resolves. */
function validate(tables: Map<string, FakeTable>): void {
  for (const table of tables.values()) {
    for (const [name, chain] of table.chains)
      for (const rule of chain.rules) {
        for (const target of chainTargets(rule))
          if (!table.chains.has(target))
            throw new FakeError(`No such file or directory: chain ${target} (rule in ${name})`);
        for (const target of setTargets(rule))
          if (!table.sets.has(target) && !table.maps.has(target))
            throw new FakeError(`No such file or directory: set ${target} (rule in ${name})`);
      }
    for (const [name, map] of table.maps)
      for (const verdict of map.entries.values())
        for (const target of chainTargets(verdict))
          if (!table.chains.has(target))
            throw new FakeError(`No such file or directory: chain ${target} (map ${name})`);
  }
}
