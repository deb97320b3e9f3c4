import { ConfigurationError } from '../../src';
import { synthValid } from '../support/synth';
import { buildService, COMBINATIONS, SHARED, SPECIFIC } from './props-cases';
import { ENGINES } from './support';

/** Each serving construct over the boundary values of props-cases.ts: accepted, or refused by name. */
describe.each(ENGINES)('$construct props over boundary values', e => {
  const cases = [...SHARED, ...SPECIFIC[e.construct]];
  const build = (props: Record<string, unknown>) => buildService(e, props).chart;

  test.each(cases)('%s = %p (accepted: %p)', (prop, value, accepted) => {
    if (accepted) {
      expect(synthValid(build({ [prop]: value })).length).toBeGreaterThan(0);
      return;
    }
    let err: unknown;
    try {
      synthValid(build({ [prop]: value }));
    } catch (x) {
      err = x;
    }
    expect(err).toBeInstanceOf(ConfigurationError);
    expect((err as Error).message).toMatch(new RegExp(`^${e.construct} 'svc': ${prop}[ .\\[]`));
  });

  test.each(COMBINATIONS)('%s', (_label, props, accepted, prop) => {
    if (accepted) {
      expect(synthValid(build(props)).length).toBeGreaterThan(0);
      return;
    }
    expect(() => build(props)).toThrow(ConfigurationError);
    expect(() => build(props)).toThrow(new RegExp(`^${e.construct} 'svc': ${prop!}`));
  });
});
