import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeSelector, selectorMatches } from './selector.ts';

describe('label selectors', () => {
  it('gives equal selectors the same canonical key whatever the order', () => {
    const a = makeSelector({ app: 'web', tier: 'fe' }, [{ key: 'env', operator: 'In', values: ['b', 'a'] }]);
    const b = makeSelector({ tier: 'fe' }, [
      { key: 'env', operator: 'In', values: ['a', 'b', 'a'] },
      { key: 'app', operator: 'In', values: ['web'] },
    ]);
    assert.equal(a.key, b.key);
    assert.equal(a.key, 'app=web,env in (a,b),tier=fe');
  });
  it('implements In, NotIn, Exists and DoesNotExist', () => {
    const labels = { app: 'web', env: 'prod' };
    const sel = (operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist', key: string, values: string[] = []) =>
      makeSelector({}, [{ key, operator, values }]);
    assert.ok(selectorMatches(sel('In', 'app', ['web', 'api']), labels));
    assert.ok(!selectorMatches(sel('In', 'app', ['api']), labels));
    assert.ok(!selectorMatches(sel('In', 'missing', ['x']), labels));
    assert.ok(selectorMatches(sel('NotIn', 'app', ['api']), labels));
    assert.ok(!selectorMatches(sel('NotIn', 'app', ['web']), labels));
    assert.ok(
      selectorMatches(sel('NotIn', 'missing', ['x']), labels),
      'NotIn matches when the key is absent',
    );
    assert.ok(selectorMatches(sel('Exists', 'env'), labels));
    assert.ok(!selectorMatches(sel('Exists', 'missing'), labels));
    assert.ok(selectorMatches(sel('DoesNotExist', 'missing'), labels));
    assert.ok(!selectorMatches(sel('DoesNotExist', 'env'), labels));
    assert.ok(selectorMatches(makeSelector({}, []), {}), 'the empty selector matches everything');
  });
});
