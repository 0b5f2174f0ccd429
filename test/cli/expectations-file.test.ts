/**
 * `assert`'s expectations file: every problem at its line and column, in the file's order, said
 * once; ports read as check and matrix read them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseExpectations } from '../../src/cli/expectations-file.ts';

describe('parseExpectations', () => {
  it('reads ports as check --port does', () => {
    const { expectations, problems } = parseExpectations(
      'e.yaml',
      [
        '- {from: a/b, to: c/d, port: 53/udp, allowed: true}',
        '- {from: a/b, to: c/d, port: dns, protocol: UDP, allowed: false}',
        '- {from: a/b, to: c/d, port: 8080, allowed: true}',
        '',
      ].join('\n'),
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(
      expectations.map((e) => [e.port, e.protocol, e.allowed]),
      [
        [53, 'UDP', true],
        ['dns', 'UDP', false],
        [8080, 'TCP', true],
      ],
    );
  });

  it('lists every problem in the order of the file', () => {
    const text = [
      '- {from: a/b, to: c/d, port: 80, allowed: yes}',
      '- {from: 5, to: [x], port: 80, allowed: true, bogus: 1}',
      '- {from: a/b, to: c/d, port: {n: 1}, allowed: true}',
      '- {from: a/b, to: c/d, port: 80.5, allowed: true}',
      '- {from: a/b, to: c/d, port: 53/UDP, protocol: TCP, allowed: true}',
      '- {from: a/b, to: c/d, port: , allowed: true}',
      '- {from: a/b, to: c/d, port: true, allowed: true}',
      '- {from: a/b, to: c/d, port: 53, protocol: ~, allowed: true}',
      '',
    ].join('\n');
    assert.deepEqual(parseExpectations('e.yaml', text).problems, [
      'e.yaml:1:43: "allowed" must be true or false',
      'e.yaml:2:10: "from" must be ns/name, ns/name[Kind] or an IP address',
      'e.yaml:2:17: "to" must be ns/name, ns/name[Kind] or an IP address',
      'e.yaml:2:47: unknown field "bogus"',
      'e.yaml:3:30: "port" must be a number, a port name or 53/UDP, not a mapping',
      'e.yaml:4:30: port 80.5 is not a whole number between 1 and 65535',
      'e.yaml:5:48: port 53/UDP says UDP but protocol says TCP',
      // Not read as ports named "null" and "true", nor as a protocol "NULL".
      'e.yaml:6:30: "port" must be a number, a port name or 53/UDP, not empty',
      'e.yaml:7:30: "port" must be a number, a port name or 53/UDP, not the boolean true',
      'e.yaml:8:44: "protocol" must be TCP, UDP or SCTP, not empty',
    ]);
  });

  it("asks for one list when the file holds a second document, in its words, not the parser's", () => {
    const text =
      '---\n- {from: a/b, to: c/d, port: 80, allowed: true}\n---\n- {from: a/b, to: c/d, port: 81, allowed: true}\n';
    assert.deepEqual(parseExpectations('e.yaml', text).problems, [
      'e.yaml:3:1: a second YAML document (after ---): give every expectation in one list',
    ]);
  });

  it('says where YAML breaks, once', () => {
    assert.deepEqual(parseExpectations('e.yaml', '- {from: a/b, port: [80, allowed: true}\n').problems, [
      'e.yaml:1:39: Flow sequence in block collection must be sufficiently indented and end with a ]',
      'e.yaml:1:40: Flow map in block collection must be sufficiently indented and end with a }',
    ]);
  });

  it('says a tab that indents a line once, at the tab (the parser says three things after it)', () => {
    const entry = (indent: string, dash = '- '): string =>
      `${dash}from: a/b\n${indent}to: c/d\n  port: 80\n  allowed: true\n`;
    assert.deepEqual(parseExpectations('e.yaml', entry('\t')).problems, [
      'e.yaml:2:1: line 2 is indented with a tab; YAML allows only spaces',
    ]);
    assert.deepEqual(parseExpectations('e.yaml', entry('  ', '-\t')).problems, [
      'e.yaml:1:2: line 1 is indented with a tab; YAML allows only spaces',
    ]);
    // A tab on a blank or comment line is allowed: the mistake after it is reported, not the tab.
    assert.deepEqual(parseExpectations('e.yaml', `- from: a/b\n\t# note\n  to: c: d\n`).problems, [
      'e.yaml:3:7: Nested mappings are not allowed in compact mappings',
    ]);
    // A tab that separates a value is not indentation.
    assert.deepEqual(parseExpectations('e.yaml', entry('  ').replace('port: 80', 'port:\t80')).problems, []);
  });
});
