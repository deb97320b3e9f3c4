import { Chart, Testing } from 'cdk8s';
import { ConfigurationError } from '../../src';
import { SERVING_PROP_KEYS } from '../../src/inference/inference-service';
import { GPU_WORKLOAD_PROP_KEYS } from '../../src/common/workload-pod';
import { synthValid } from '../support/synth';
import { BASE, ENGINES, SPECIFIC_KEYS } from './support';

/** Values of every JavaScript type, as a caller without types could pass them. */
const VALUES: unknown[] = ['x', '', 5, -1, 0.5, NaN, true, {}, [], ['x'], [5], { a: 1 }, () => 1];

describe.each(ENGINES)("$construct: any value of any type gets the library's error or works", e => {
  const keys = [...GPU_WORKLOAD_PROP_KEYS, ...SERVING_PROP_KEYS, ...SPECIFIC_KEYS[e.construct]].filter(
    k => k !== 'name' && k !== 'modelId',
  );
  test.each(keys)('%s', key => {
    for (const value of VALUES) {
      const chart = new Chart(Testing.app(), 'c', { namespace: 'ns' });
      try {
        e.make(chart, 'svc', { ...BASE, [key]: value });
        synthValid(chart);
      } catch (err) {
        if (!(err instanceof ConfigurationError)) {
          throw new Error(
            `${key} = ${typeof value === 'symbol' ? 'a symbol' : JSON.stringify(value)}: ${(err as Error)?.name}: ${(err as Error)?.message}`,
          );
        }
        expect(err.message.startsWith(`${e.construct} 'svc': ${key}`)).toBe(true);
      }
    }
  });
});
