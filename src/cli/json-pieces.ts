/**
 * `JSON.stringify(value, null, 2)` in pieces: the top-level object's members and the items of
 * its arrays one at a time, so a large report (`compile -o json` at 100,000 pods: 100,000 tables)
 * is written as it is made instead of first becoming one string of hundreds of megabytes. The
 * text is byte for byte what `JSON.stringify(value, null, 2)` gives for plain data (objects,
 * arrays, strings, numbers, booleans, null; members that are undefined are left out as it leaves
 * them out).
 */
const INDENT = '  ';

/** Each item's own text, indented to sit `depth` levels in. */
function nested(value: unknown, depth: number): string {
  // JSON text holds no raw newline inside a string, so every newline starts a line to indent.
  return JSON.stringify(value, null, 2).replaceAll('\n', '\n' + INDENT.repeat(depth));
}

/** Whether JSON.stringify writes the member at all (it leaves out undefined, functions, symbols). */
function written(value: unknown): boolean {
  return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
}

/** The pieces of `value`'s text, then `end` (a final newline, say). */
export function* jsonPieces(value: unknown, end = ''): Generator<string> {
  yield* objectPieces(value);
  if (end) yield end;
}

function* objectPieces(value: unknown): Generator<string> {
  const isPlainObject =
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    typeof (value as { toJSON?: unknown }).toJSON !== 'function';
  if (!isPlainObject) {
    yield JSON.stringify(value, null, 2);
    return;
  }
  const members = Object.entries(value as Record<string, unknown>).filter(([, v]) => written(v));
  if (members.length === 0) {
    yield '{}';
    return;
  }
  yield '{';
  let first = true;
  for (const [key, member] of members) {
    yield `${first ? '' : ','}\n${INDENT}${JSON.stringify(key)}: `;
    first = false;
    if (!Array.isArray(member) || member.length === 0) {
      yield nested(member, 1);
      continue;
    }
    yield '[';
    for (let i = 0; i < member.length; i++) {
      const item: unknown = member[i];
      // In an array JSON.stringify writes null for what it leaves out of an object.
      yield `${i === 0 ? '' : ','}\n${INDENT}${INDENT}${written(item) ? nested(item, 2) : 'null'}`;
    }
    yield `\n${INDENT}]`;
  }
  yield '\n}';
}
