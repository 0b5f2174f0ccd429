/**
 * A JSON reader that says where things are: for one line of a flow file that `JSON.parse`
 * refused, the offset of the mistake; for one it accepted but whose fields are wrong, the offset
 * of each key and value by field path. Only lines with a problem pay for it — the fast path is
 * `JSON.parse`, which says neither reliably (V8's messages name a position for some mistakes only).
 */

/** Where a field's key and value start (0-based offsets into the line). */
export interface FieldOffsets {
  readonly key: number;
  readonly value: number;
}

export type LocatedJson =
  | { readonly ok: true; readonly offsets: ReadonlyMap<string, FieldOffsets> }
  | { readonly ok: false; readonly offset: number; readonly message: string };

/** The key of a field path in `offsets`: `src.ip`, `decidedBy.0.policy`. */
export function pathKey(path: readonly (string | number)[]): string {
  return path.join('.');
}

class JsonSyntax extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message);
  }
}

/** Nesting deeper than this is refused rather than recursed into (a hostile line). */
const MAX_DEPTH = 64;

/** Reads `text` as one JSON value, recording where every object field's key and value start. */
export function locateJson(text: string): LocatedJson {
  const offsets = new Map<string, FieldOffsets>();
  let at = 0;
  const fail = (message: string): never => {
    throw new JsonSyntax(at, message);
  };
  const space = (): void => {
    while (at < text.length && ' \t\r\n'.includes(text[at] as string)) at++;
  };
  const expect = (char: string, what: string): void => {
    space();
    if (text[at] !== char) fail(at >= text.length ? `the line ends before ${what}` : `expected ${what}`);
    at++;
  };
  const string = (): void => {
    // at is on the opening quote.
    const start = at++;
    while (at < text.length && text[at] !== '"') {
      const c = text.charCodeAt(at);
      if (c < 0x20) fail('a control character inside a string (write it escaped)');
      at += text[at] === '\\' ? 2 : 1;
    }
    if (at >= text.length) {
      at = start;
      fail('a string that is never closed');
    }
    at++;
  };
  const value = (path: (string | number)[], depth: number): void => {
    space();
    if (depth > MAX_DEPTH) fail(`nesting deeper than ${MAX_DEPTH} levels`);
    const c = text[at];
    if (c === '{') {
      at++;
      space();
      if (text[at] === '}') {
        at++;
        return;
      }
      for (;;) {
        space();
        if (text[at] !== '"') fail('expected a field name in double quotes');
        const keyStart = at;
        string();
        const key = JSON.parse(text.slice(keyStart, at)) as string;
        expect(':', '":" after the field name');
        space();
        const child = [...path, key];
        offsets.set(pathKey(child), { key: keyStart, value: at });
        value(child, depth + 1);
        space();
        if (text[at] === ',') {
          at++;
          continue;
        }
        expect('}', '"," or "}" after a field');
        return;
      }
    }
    if (c === '[') {
      at++;
      space();
      if (text[at] === ']') {
        at++;
        return;
      }
      for (let i = 0; ; i++) {
        space();
        offsets.set(pathKey([...path, i]), { key: at, value: at });
        value([...path, i], depth + 1);
        space();
        if (text[at] === ',') {
          at++;
          continue;
        }
        expect(']', '"," or "]" after a list item');
        return;
      }
    }
    if (c === '"') return string();
    const literal = /^(?:true|false|null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)/.exec(
      text.slice(at, at + 400),
    );
    if (!literal) fail(at >= text.length ? 'the line ends before a value' : 'expected a value');
    at += (literal as RegExpExecArray)[0].length;
  };
  try {
    value([], 0);
    space();
    if (at < text.length) fail('more text after the JSON value (one record per line)');
    return { ok: true, offsets };
  } catch (error) {
    if (error instanceof JsonSyntax) return { ok: false, offset: error.offset, message: error.message };
    throw error;
  }
}
