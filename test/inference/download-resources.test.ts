import { Size } from 'cdk8s';
import { ENGINES, synthEngine } from './support';

describe.each(ENGINES)('$construct: the download init container has its own CPU and memory', e => {
  const init = (pod: any) => pod.initContainers.find((c: any) => c.name === 'model-download');

  test("by default the server's CPU and memory, without the GPU", () => {
    const { pod, main } = synthEngine(e, { cpu: 8, memory: Size.gibibytes(64) });
    expect(init(pod).resources).toEqual({
      requests: { cpu: main.resources.requests.cpu, memory: main.resources.requests.memory },
      limits: { memory: main.resources.limits.memory },
    });
  });

  test('downloadResources sets them, each defaulting to the server', () => {
    const { pod, main } = synthEngine(e, {
      cpu: 8,
      memory: Size.gibibytes(64),
      downloadResources: { cpu: 2, memory: Size.gibibytes(96) },
    });
    expect(init(pod).resources).toEqual({ requests: { cpu: '2', memory: '96Gi' }, limits: { memory: '96Gi' } });
    expect(main.resources.requests.memory).toBe('64Gi');
    const memOnly = synthEngine(e, { cpu: 8, downloadResources: { memory: Size.gibibytes(4) } });
    expect(init(memOnly.pod).resources.requests).toEqual({ cpu: '8', memory: '4Gi' });
  });

  test('a Guaranteed pod limits the download CPU to its request', () => {
    const { pod } = synthEngine(e, { cpu: 8, guaranteedQos: true, downloadResources: { cpu: 2 } });
    expect(init(pod).resources.limits.cpu).toBe('2');
    expect(init(pod).resources.requests.cpu).toBe('2');
  });

  test.each([
    [{ cpu: 0 }, 'downloadResources.cpu'],
    [{ memory: Size.gibibytes(0) }, 'downloadResources.memory'],
    [{ gpu: 1 }, 'downloadResources.gpu is not a known prop'],
  ])('%p is refused naming %s', (downloadResources, message) => {
    expect(() => synthEngine(e, { downloadResources } as any)).toThrow(`${e.construct} 'svc': ${message}`);
  });

  test('a local model path downloads nothing: downloadResources is refused', () => {
    expect(() => synthEngine(e, { modelId: '/models/m', downloadResources: { cpu: 1 } })).toThrow(
      `${e.construct} 'svc': downloadResources needs a hub model`,
    );
  });
});
