/**
 * Calico's label selector language (`app == 'web' && !has(canary) || tier in {'a', 'b'}`), read as
 * libcalico-go's tokenizer and parser read it: the same tokens, the same precedence (match
 * operators, parentheses, `!`, `&&`, `||`), the same errors at the same place. The expression is
 * then turned into a disjunction of conjunctions of label requirements (the model's selectors),
 * negations pushed down to the requirements (`!(k == 'v')` is `k not in {'v'}`), because every
 * later layer matches, indexes and compiles conjunctive selectors.
 */
import type { SelectorOperator } from '../model/selector.ts';

/** One requirement on one label, as the model's selectors hold it. */
export interface SelectorAtom {
  readonly key: string;
  readonly operator: SelectorOperator;
  readonly values: readonly string[];
}

type SelectorExpression =
  | { readonly type: 'all' }
  /** `global()`: non-namespaced resources (host endpoints, global network sets) — never a pod. */
  | { readonly type: 'global' }
  | { readonly type: 'atom'; readonly atom: SelectorAtom }
  | { readonly type: 'not'; readonly expression: SelectorExpression }
  | { readonly type: 'and'; readonly items: readonly SelectorExpression[] }
  | { readonly type: 'or'; readonly items: readonly SelectorExpression[] };

/**
 * A disjunction of conjunctions: the selector matches when every requirement of some conjunction
 * holds. `[]` matches nothing; `[[]]` matches everything.
 */
type SelectorDnf = readonly (readonly SelectorAtom[])[];

type ParseResult =
  | { readonly ok: true; readonly expression: SelectorExpression }
  | {
      readonly ok: false;
      readonly message: string;
      /** 0-based offset in the text. */ readonly index: number;
    };

type TokenKind =
  | 'label'
  | 'string'
  | '{'
  | '}'
  | ','
  | '=='
  | '!='
  | 'in'
  | 'not in'
  | '!'
  | 'contains'
  | 'starts with'
  | 'ends with'
  | 'all'
  | 'has'
  | '('
  | ')'
  | '&&'
  | '||'
  | 'global'
  | 'eof';

interface Token {
  readonly kind: TokenKind;
  readonly value: string;
  readonly index: number;
}

/** Labels longer than this are refused (libcalico-go's MaxLabelLength). */
const MAX_LABEL_LENGTH = 512;

class SelectorError extends Error {
  constructor(
    message: string,
    readonly index: number,
  ) {
    super(message);
  }
}

const isIdentifierChar = (c: string): boolean => /[A-Za-z0-9_./-]/.test(c);

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const skipSpace = (): void => {
    while (i < input.length && (input[i] === ' ' || input[i] === '\t')) i++;
  };
  const identifierAt = (start: number): string => {
    let end = start;
    while (end < input.length && isIdentifierChar(input[end] as string)) end++;
    const ident = input.slice(start, end);
    if (ident.length === 0) throw new SelectorError('expected a label name', start);
    if (ident.length > MAX_LABEL_LENGTH) throw new SelectorError('label name too long', start);
    return ident;
  };
  /** A keyword at `i` that ends at a word boundary; the words may be separated by spaces. */
  const keyword = (...words: string[]): number | undefined => {
    let j = i;
    for (const [n, word] of words.entries()) {
      if (!input.startsWith(word, j)) return undefined;
      j += word.length;
      if (n < words.length - 1) while (j < input.length && (input[j] === ' ' || input[j] === '\t')) j++;
    }
    return j < input.length && isIdentifierChar(input[j] as string) ? undefined : j;
  };
  for (;;) {
    skipSpace();
    const start = i;
    if (i >= input.length) {
      tokens.push({ kind: 'eof', value: '', index: i });
      return tokens;
    }
    const c = input[i] as string;
    const push = (kind: TokenKind, length: number, value = ''): void => {
      tokens.push({ kind, value, index: start });
      i += length;
    };
    if (c === '(' || c === ')' || c === '{' || c === '}' || c === ',') push(c, 1);
    else if (c === '"' || c === "'") {
      const close = input.indexOf(c, i + 1);
      if (close < 0) throw new SelectorError('unterminated string', i);
      push('string', close + 1 - i, input.slice(i + 1, close));
    } else if (c === '=') {
      if (!input.startsWith('==', i)) throw new SelectorError('expected "=="', i);
      push('==', 2);
    } else if (c === '!') push(input.startsWith('!=', i) ? '!=' : '!', input.startsWith('!=', i) ? 2 : 1);
    else if (c === '&') {
      if (!input.startsWith('&&', i)) throw new SelectorError('expected "&&"', i);
      push('&&', 2);
    } else if (c === '|') {
      if (!input.startsWith('||', i)) throw new SelectorError('expected "||"', i);
      push('||', 2);
    } else if (tokens[tokens.length - 1]?.kind === 'label') {
      // After a label only an operator word may follow.
      const words: [TokenKind, string[]][] = [
        ['contains', ['contains']],
        ['starts with', ['starts', 'with']],
        ['ends with', ['ends', 'with']],
        ['not in', ['not', 'in']],
        ['in', ['in']],
      ];
      const found = words.map(([kind, w]) => [kind, keyword(...w)] as const).find(([, end]) => end);
      if (!found || found[1] === undefined)
        throw new SelectorError(
          `expected an operator (==, !=, in, not in, contains, starts with, ends with) after label "${tokens[tokens.length - 1]?.value ?? ''}"`,
          i,
        );
      tokens.push({ kind: found[0], value: '', index: start });
      i = found[1];
    } else if (input.startsWith('has(', i)) {
      i += 4;
      skipSpace();
      const ident = identifierAt(i);
      i += ident.length;
      skipSpace();
      if (input[i] !== ')') throw new SelectorError('no closing ")" after has(', i);
      i++;
      tokens.push({ kind: 'has', value: ident, index: start });
    } else if (input.startsWith('all(', i) || input.startsWith('global(', i)) {
      const kind = input.startsWith('all(', i) ? 'all' : 'global';
      i += kind.length + 1;
      skipSpace();
      if (input[i] !== ')') throw new SelectorError(`no closing ")" after ${kind}(`, i);
      i++;
      tokens.push({ kind, value: '', index: start });
    } else {
      const ident = identifierAt(i);
      push('label', ident.length, ident);
    }
  }
}

class Parser {
  private at = 0;
  constructor(private readonly tokens: readonly Token[]) {}

  private peek(): Token {
    return this.tokens[this.at] as Token;
  }
  private next(): Token {
    return this.tokens[this.at++] as Token;
  }

  parseRoot(): SelectorExpression {
    if (this.peek().kind === 'eof') return { type: 'all' };
    const expression = this.parseOr();
    const rest = this.peek();
    if (rest.kind !== 'eof')
      throw new SelectorError(`unexpected ${describe(rest)} at end of selector`, rest.index);
    return expression;
  }

  private parseOr(): SelectorExpression {
    const items = [this.parseAnd()];
    while (this.peek().kind === '||') {
      this.next();
      items.push(this.parseAnd());
    }
    return items.length === 1 ? (items[0] as SelectorExpression) : { type: 'or', items };
  }

  private parseAnd(): SelectorExpression {
    const items = [this.parseOperation()];
    while (this.peek().kind === '&&') {
      this.next();
      items.push(this.parseOperation());
    }
    return items.length === 1 ? (items[0] as SelectorExpression) : { type: 'and', items };
  }

  private parseOperation(): SelectorExpression {
    let negated = false;
    while (this.peek().kind === '!') {
      this.next();
      negated = !negated;
    }
    const token = this.next();
    let expression: SelectorExpression;
    switch (token.kind) {
      case 'has':
        expression = atom(token.value, 'Exists', []);
        break;
      case 'all':
        expression = { type: 'all' };
        break;
      case 'global':
        expression = { type: 'global' };
        break;
      case 'label':
        expression = this.parseComparison(token);
        break;
      case '(': {
        expression = this.parseOr();
        const close = this.next();
        if (close.kind !== ')')
          throw new SelectorError(`expected ")" but found ${describe(close)}`, close.index);
        break;
      }
      case 'eof':
        throw new SelectorError('unexpected end of selector', token.index);
      default:
        throw new SelectorError(`unexpected ${describe(token)}`, token.index);
    }
    return negated ? { type: 'not', expression } : expression;
  }

  private parseComparison(label: Token): SelectorExpression {
    const operator = this.next();
    const single: Partial<Record<TokenKind, SelectorOperator>> = {
      '==': 'In',
      '!=': 'NotIn',
      contains: 'Contains',
      'starts with': 'StartsWith',
      'ends with': 'EndsWith',
    };
    const one = single[operator.kind];
    if (one) {
      const value = this.next();
      if (value.kind !== 'string')
        throw new SelectorError(`expected a quoted string but found ${describe(value)}`, value.index);
      return atom(label.value, one, [value.value]);
    }
    if (operator.kind === 'in' || operator.kind === 'not in') {
      const open = this.next();
      if (open.kind !== '{')
        throw new SelectorError(
          `expected a set literal ({'a', 'b'}) but found ${describe(open)}`,
          open.index,
        );
      const values: string[] = [];
      while (this.peek().kind === 'string') {
        values.push(this.next().value);
        if (this.peek().kind !== ',') break;
        this.next();
      }
      const close = this.next();
      if (close.kind !== '}')
        throw new SelectorError(`expected "}" but found ${describe(close)}`, close.index);
      return atom(label.value, operator.kind === 'in' ? 'In' : 'NotIn', values);
    }
    throw new SelectorError(`expected an operator after label "${label.value}"`, operator.index);
  }
}

function atom(key: string, operator: SelectorOperator, values: readonly string[]): SelectorExpression {
  return { type: 'atom', atom: { key, operator, values: [...new Set(values)].sort() } };
}

function describe(token: Token): string {
  switch (token.kind) {
    case 'eof':
      return 'the end of the selector';
    case 'label':
      return `label "${token.value}"`;
    case 'string':
      return `string '${token.value}'`;
    default:
      return `"${token.kind}"`;
  }
}

export function parseCalicoSelector(text: string): ParseResult {
  try {
    return { ok: true, expression: new Parser(tokenize(text)).parseRoot() };
  } catch (error) {
    if (error instanceof SelectorError) return { ok: false, message: error.message, index: error.index };
    throw error;
  }
}

const NEGATION: Record<SelectorOperator, SelectorOperator> = {
  In: 'NotIn',
  NotIn: 'In',
  Exists: 'DoesNotExist',
  DoesNotExist: 'Exists',
  StartsWith: 'NotStartsWith',
  NotStartsWith: 'StartsWith',
  EndsWith: 'NotEndsWith',
  NotEndsWith: 'EndsWith',
  Contains: 'NotContains',
  NotContains: 'Contains',
};

/** Conjunctions past this many are refused: a selector that large is a mistake or an attack. */
export const MAX_CONJUNCTIONS = 256;

/**
 * The expression as a disjunction of conjunctions (undefined when it would need more than
 * `limit` conjunctions). `global()` never matches a pod.
 */
export function selectorDnf(
  expression: SelectorExpression,
  limit = MAX_CONJUNCTIONS,
): SelectorDnf | undefined {
  try {
    return dnf(expression, false, limit);
  } catch (error) {
    if (error instanceof RangeError) return undefined;
    throw error;
  }
}

function dnf(expression: SelectorExpression, negated: boolean, limit: number): SelectorAtom[][] {
  switch (expression.type) {
    case 'all':
      return negated ? [] : [[]];
    case 'global':
      return negated ? [[]] : [];
    case 'atom': {
      const { key, operator, values } = expression.atom;
      return [[{ key, operator: negated ? NEGATION[operator] : operator, values }]];
    }
    case 'not':
      return dnf(expression.expression, !negated, limit);
    case 'and':
    case 'or': {
      // De Morgan: a negated conjunction is a disjunction of the negations, and vice versa.
      const conjunctive = (expression.type === 'and') !== negated;
      const parts = expression.items.map((item) => dnf(item, negated, limit));
      if (!conjunctive) {
        const union = parts.flat();
        if (union.length > limit) throw new RangeError('selector too large');
        return union;
      }
      let product: SelectorAtom[][] = [[]];
      for (const part of parts) {
        const next: SelectorAtom[][] = [];
        for (const left of product)
          for (const right of part) {
            next.push([...left, ...right]);
            if (next.length > limit) throw new RangeError('selector too large');
          }
        product = next;
      }
      return product;
    }
  }
}
