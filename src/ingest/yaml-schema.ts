/**
 * Plain scalars resolved as kubectl resolves them. kubectl reads YAML with go-yaml v2 (through
 * sigs.k8s.io/yaml), whose YAML 1.1 resolution differs from the `yaml` package's in a few places
 * that change what an object means:
 * - a number needs a digit, `+`, `-` or `.` first: `e2`, `e10`, `E1` are strings (the package
 *   read them as NaN, and the object was dropped);
 * - integers are what Go's `strconv.ParseInt(s, 0, 64)` takes after removing `_` (decimal,
 *   `0x`, `0o`, `0b`, a leading `0` for octal), floats what matches
 *   `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` and is finite;
 * - no sexagesimal numbers: `1:20` is a string, not 80.
 * Booleans (`yes`, `on`, `y`…), nulls and `.inf`/`.nan` are the same in both and stay the
 * package's.
 */
import type { ScalarTag, Tags } from 'yaml';

const INT_TAG = 'tag:yaml.org,2002:int';
const FLOAT_TAG = 'tag:yaml.org,2002:float';
const DECIMAL = /^[-+]?[0-9]+$/;
const HEX = /^[-+]?0[xX][0-9a-fA-F]+$/;
const OCTAL_O = /^[-+]?0[oO][0-7]+$/;
const BINARY = /^[-+]?0[bB][01]+$/;
const OCTAL_ZERO = /^[-+]?0[0-7]+$/;
const GO_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;
const DOT_FLOAT = /^\.[0-9]+([eE][-+]?[0-9]+)?$/;

/** The number go-yaml v2 reads `text` (a plain scalar) as, or undefined when it reads a string. */
export function goYamlNumber(text: string): number | undefined {
  const first = text.charCodeAt(0);
  if (first === 0x2e /* . */) {
    // `.5` and `.5e3` (`.inf` and `.nan` are the package's own tags).
    return DOT_FLOAT.test(text) ? Number(text) : undefined;
  }
  const digit = first >= 0x30 && first <= 0x39;
  if (!digit && first !== 0x2b && first !== 0x2d) return undefined;
  const plain = text.replace(/_/g, '');
  const integer = parseGoInt(plain);
  if (integer !== undefined) return integer;
  if (!GO_FLOAT.test(plain)) return undefined;
  const float = Number(plain);
  return Number.isFinite(float) ? float : undefined;
}

/** strconv.ParseInt(s, 0, 64), or ParseUint: the value, or undefined when Go rejects it. */
function parseGoInt(text: string): number | undefined {
  const negative = text.startsWith('-');
  const unsigned = text.replace(/^[-+]/, '');
  let value: bigint;
  if (DECIMAL.test(text) && !OCTAL_ZERO.test(text)) value = BigInt(unsigned);
  else if (HEX.test(text)) value = BigInt(unsigned);
  else if (OCTAL_O.test(text)) value = BigInt(`0o${unsigned.slice(2)}`);
  else if (BINARY.test(text)) value = BigInt(`0b${unsigned.slice(2)}`);
  else if (OCTAL_ZERO.test(text)) value = BigInt(`0o${unsigned.slice(1)}`);
  else return undefined;
  if (negative) value = -value;
  // Beyond int64 (and, for positives, uint64) Go fails; the text may still be a float.
  if (value < -(1n << 63n) || value >= 1n << 64n) return undefined;
  return Number(value);
}

/** A test object the `yaml` package calls as it would a RegExp. */
function matcher(accept: (text: string) => boolean): RegExp {
  return { test: accept } as unknown as RegExp;
}

/** Whether go-yaml reads `text` as an integer (its first character and Go's integer syntax). */
function isGoIntText(text: string): boolean {
  const first = text.charCodeAt(0);
  const digit = first >= 0x30 && first <= 0x39;
  return (digit || first === 0x2b || first === 0x2d) && parseGoInt(text.replace(/_/g, '')) !== undefined;
}

const goInt: ScalarTag = {
  identify: (value) => typeof value === 'number' && Number.isInteger(value),
  default: true,
  tag: INT_TAG,
  test: matcher(isGoIntText),
  resolve: (text) => goYamlNumber(text),
};

const goFloat: ScalarTag = {
  identify: (value) => typeof value === 'number',
  default: true,
  tag: FLOAT_TAG,
  test: matcher((text) => !isGoIntText(text) && goYamlNumber(text) !== undefined),
  resolve: (text) => goYamlNumber(text),
};

/**
 * The YAML 1.1 tags with the number resolution replaced by go-yaml v2's (for the `customTags`
 * option, with `version: '1.1'`). The package's sexagesimal forms go with its int and float
 * tags; timestamps stay (go-yaml reads them too).
 */
export function kubectlTags(tags: Tags): Tags {
  const kept = tags.filter((tag) => {
    if (typeof tag === 'string') return true;
    if (tag.tag === INT_TAG) return false;
    // `.inf` and `.nan` keep the package's tag; the other float forms are go-yaml's.
    if (tag.tag === FLOAT_TAG) return 'test' in tag && tag.test?.test('.inf') === true;
    return true;
  });
  return [...kept, goInt, goFloat];
}
