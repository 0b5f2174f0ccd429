/**
 * What a file must be before it is parsed: valid UTF-8 (decoding would silently turn bad bytes
 * into U+FFFD, and a file of binary garbage into text), and free of the control characters YAML
 * does not allow (kubectl rejects both). Each problem is located at its first occurrence.
 */
import { isUtf8 } from 'node:buffer';
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';

/** The file's text, or a diagnostic locating its first byte that is not UTF-8. */
export function decodeUtf8(file: string, bytes: Buffer): { text: string } | { diagnostic: Diagnostic } {
  if (isUtf8(bytes)) return { text: bytes.toString('utf8') };
  const offset = firstInvalidUtf8(bytes);
  const lineStart = bytes.lastIndexOf(0x0a, offset - 1) + 1;
  let line = 1;
  for (let i = bytes.indexOf(0x0a); i >= 0 && i < offset; i = bytes.indexOf(0x0a, i + 1)) line++;
  const column = bytes.subarray(lineStart, offset).toString('utf8').length + 1;
  const byte = (bytes[offset] ?? 0).toString(16).toUpperCase().padStart(2, '0');
  return {
    diagnostic: makeDiagnostic(
      'INVALID_UTF8',
      `byte 0x${byte} (offset ${offset}) is not valid UTF-8; the file is skipped (is it binary, or in another encoding such as Latin-1?)`,
      { file, line, column },
    ),
  };
}

/** Offset of the first byte that does not begin or continue a valid UTF-8 sequence. */
function firstInvalidUtf8(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i] as number;
    let need: number;
    let min: number;
    if (b < 0x80) {
      i++;
      continue;
    } else if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      min = 0x10000;
    } else return i;
    let code = b & (0x3f >> need);
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
      code = (code << 6) | (c & 0x3f);
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return i;
    i += need + 1;
  }
  return bytes.length;
}

/**
 * Characters YAML does not allow in a stream (C0 controls but tab, line feed and carriage
 * return; DEL; C1 controls but NEL; U+FFFE and U+FFFF), which kubectl rejects. Escaped ones in
 * double-quoted strings (`"\e"`) are allowed, and escaped wherever Palisade prints them.
 */
export function firstForbiddenCharacter(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x20 && c < 0x7f) continue;
    if (c === 0x09 || c === 0x0a || c === 0x0d) continue;
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f && c !== 0x85) || c === 0xfffe || c === 0xffff) return i;
  }
  return -1;
}
