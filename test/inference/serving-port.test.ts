import { findOne, synthValid, testChart } from '../support/synth';
import { BASE, ENGINES } from './support';

describe.each(ENGINES)('$construct: the port prop', e => {
  test('moves the listener, the container port, the per-pod Service, the scrape annotation and nothing else', () => {
    const chart = testChart('serving');
    const svc = e.make(chart, 'svc', { ...BASE, port: 8500 });
    const objects = synthValid(chart);
    const pod = findOne(objects, 'StatefulSet').spec.template;
    const main = pod.spec.containers.find((c: any) => c.name === e.container);
    expect(e.setting(main, 'port')).toBe('8500');
    expect(main.ports).toEqual([{ name: 'http', containerPort: 8500, protocol: 'TCP' }]);
    expect(findOne(objects, 'Service', `${BASE.name}-headless`).spec.ports[0].port).toBe(8500);
    // The client Service keeps port 80 and targets the named port.
    expect(findOne(objects, 'Service', BASE.name).spec.ports[0]).toMatchObject({ port: 80, targetPort: 'http' });
    expect(pod.metadata.annotations['prometheus.io/port']).toBe('8500');
    expect(svc.port).toBe(8500);
  });

  test.each([80, 1023, 65536, 8000.5])('refuses %p', port => {
    expect(() => e.make(testChart(), 'svc', { ...BASE, port })).toThrow(new RegExp(`${e.construct} 'svc': port`));
  });
});
