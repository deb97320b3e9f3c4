import { statefulSetName, STATEFUL_SET_NAME_MAX, versionedName } from '../../src/common/names';
import { Validator } from '../../src/validation/validate';

const v = new Validator('Thing', 'id');

describe('names', () => {
  test('versioned names', () => {
    expect(versionedName('tgi')).toBe('tgi');
    expect(versionedName('tgi', 3)).toBe('tgi-v3');
  });

  test('the 52-character StatefulSet limit counts the version suffix', () => {
    const base = 'a'.repeat(STATEFUL_SET_NAME_MAX - 3);
    expect(statefulSetName(v, base, 9)).toHaveLength(52);
    expect(() => statefulSetName(v, base, 10)).toThrow(
      /^Thing 'id': name must leave the StatefulSet name at most 52 characters once "-v10" is added.*\(got 53 characters: a+-v10\)$/,
    );
  });

  test.each([[''], ['Upper'], ['has_underscore'], ['-dash'], ['9starts-with-digit']])('rejects name %j', bad => {
    expect(() => statefulSetName(v, bad, undefined)).toThrow(/^Thing 'id': name /);
  });

  test.each([[0], [1.5], [-1]])('rejects version %j', bad => {
    expect(() => statefulSetName(v, 'ok', bad)).toThrow(`Thing 'id': version must be a whole number >= 1 (got ${bad})`);
  });
});
