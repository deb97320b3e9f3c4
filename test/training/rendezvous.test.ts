import {
  findTorchrunConflict,
  rankWiring,
  shellCommands,
  staticRankWiring,
  rendezvousIdFor,
  shutdownTimeoutSeconds,
  SHUTDOWN_MARGIN_SECONDS,
} from '../../src/training/rendezvous';

describe('rank wiring', () => {
  const wiring = rankWiring({
    masterAddress: 'j-0.j.$(POD_NAMESPACE).svc.cluster.local',
    masterPort: 29500,
    replicas: 4,
    gpusPerPod: 8,
    maxRestarts: 2,
    shutdownTimeoutSeconds: 285,
  });
  const env = Object.fromEntries(wiring.env.map(o => [o.env.name, o.env.value ?? o.env.valueFrom]));

  test('POD_NAMESPACE comes first, so $(POD_NAMESPACE) expands in every later variable', () => {
    expect(wiring.env[0].env.name).toBe('POD_NAMESPACE');
    const later = wiring.env.slice(1).filter(o => o.env.value?.includes('$(POD_NAMESPACE)'));
    expect(later.map(o => o.env.name)).toEqual(['MASTER_ADDR', 'PET_RDZV_ENDPOINT']);
  });

  test('torchrun options through PET_* with the c10d backend on rank 0', () => {
    expect(env).toMatchObject({
      PET_RDZV_BACKEND: 'c10d',
      PET_RDZV_ENDPOINT: 'j-0.j.$(POD_NAMESPACE).svc.cluster.local:29500',
      PET_MAX_RESTARTS: '2',
      PET_NNODES: '4',
      PET_NPROC_PER_NODE: '8',
      WORLD_SIZE: '32',
      TORCH_ELASTIC_SHUTDOWN_TIMEOUT: '285',
    });
    expect(wiring.env.find(o => o.env.name === 'PET_RDZV_ID')!.env).toBe(wiring.rendezvousId);
  });

  test('no PET_* variable of an option c10d ignores: argparse would still convert it, and an empty PET_NODE_RANK stops torchrun', () => {
    expect(
      Object.keys(env)
        .filter(n => n.startsWith('PET_'))
        .sort(),
    ).toEqual([
      'PET_MAX_RESTARTS',
      'PET_NNODES',
      'PET_NPROC_PER_NODE',
      'PET_RDZV_BACKEND',
      'PET_RDZV_ENDPOINT',
      'PET_RDZV_ID',
      'PET_SHUTDOWN_TIMEOUT',
      'PET_STANDALONE',
    ]);
    // Every value is a literal torchrun's argparse converts (NODE_RANK alone comes from a label, for the
    // wrapper and other launchers).
    expect(wiring.env.filter(o => o.env.name.startsWith('PET_') && o.env.valueFrom !== undefined)).toEqual([]);
  });

  test('every variable a user might set names the prop that controls it, or none', () => {
    const via = Object.fromEntries(wiring.env.map(o => [o.env.name, o.via]));
    expect(via).toMatchObject({
      WORLD_SIZE: 'replicas and gpusPerPod',
      PET_MAX_RESTARTS: 'maxRestarts',
      PET_RDZV_ID: 'runId',
      TORCH_ELASTIC_SHUTDOWN_TIMEOUT: 'terminationGracePeriod',
    });
  });
});

describe('shutdown timeout', () => {
  test.each([
    [300, 285],
    [30, 15],
    [29, 14],
    [2, 1],
    [0, 0],
  ])('grace %ds -> %ds', (grace, timeout) => {
    expect(shutdownTimeoutSeconds(grace)).toBe(timeout);
    expect(grace - shutdownTimeoutSeconds(grace)).toBeGreaterThanOrEqual(
      Math.min(SHUTDOWN_MARGIN_SECONDS, Math.ceil(grace / 2)),
    );
  });
});

describe('rendezvous id', () => {
  const rdzv = { name: 'PET_RDZV_ID', value: 'old' };
  const main = {
    name: 'trainer',
    image: 'i:1',
    args: ['torchrun', 'train.py'],
    env: [rdzv, { name: 'A', value: '1' }],
  };

  test('ignores its own variable and changes with the rank spec', () => {
    const id = rendezvousIdFor('run', 2, main, rdzv);
    expect(id).toMatch(/^run-[0-9a-f]{10}$/);
    // Its own value (set after hashing) does not feed the hash.
    rdzv.value = id;
    expect(rendezvousIdFor('run', 2, main, rdzv)).toBe(id);
    expect(rendezvousIdFor('run', 3, main, rdzv)).not.toBe(id);
    expect(rendezvousIdFor('run', 2, { ...main, args: ['torchrun', 'train.py', '--lr', '1'] }, rdzv)).not.toBe(id);
  });
});

describe('shell command lines', () => {
  test.each<[string, string[][]]>([
    ['torchrun --nnodes=2 train.py', [['torchrun', '--nnodes=2', 'train.py']]],
    [
      "cd /w && exec 'torch''run' \"--a b\" x\\ y",
      [
        ['cd', '/w'],
        ['exec', 'torchrun', '--a b', 'x y'],
      ],
    ],
    ['a; b | c || d & e\nf', [['a'], ['b'], ['c'], ['d'], ['e'], ['f']]],
    ['echo "$X \\"q\\"" # comment --standalone\nrun', [['echo', '$X "q"'], ['run']]],
    [
      '(cd /w; torchrun t.py)',
      [
        ['cd', '/w'],
        ['torchrun', 't.py'],
      ],
    ],
  ])('%j', (script, commands) => {
    expect(shellCommands(script)).toEqual(commands);
  });

  test('a rendezvous option is found through sh -c, env assignments and nested shells', () => {
    expect(findTorchrunConflict(['sh', '-c', 'X=1 torchrun --standalone t.py'])).toMatchObject({
      index: 2,
      option: '--standalone',
      inShell: true,
    });
    expect(findTorchrunConflict(['bash', '-lc', "sh -c 'torchrun --rdzv_endpoint=h:1 t.py'"])).toMatchObject({
      option: '--rdzv-endpoint',
    });
    expect(findTorchrunConflict(['busybox', 'sh', '-c', 'torchrun --nnodes 2 t.py'])).toMatchObject({
      option: '--nnodes',
    });
    // Options of the training script, and of other programs, are not torchrun's.
    expect(
      findTorchrunConflict(['bash', '-c', 'torchrun t.py --standalone && python eval.py --nnodes=3']),
    ).toBeUndefined();
    expect(findTorchrunConflict(['bash', 'run.sh', '--standalone'])).toBeUndefined();
  });

  test('the prop named in the error comes from the wiring that owns the variable', () => {
    const owned = [{ env: { name: 'PET_NNODES', value: '4' }, via: 'nodes' }];
    expect(findTorchrunConflict(['torchrun', '--nnodes=2', 't.py'], owned)).toMatchObject({ via: 'nodes' });
    expect(findTorchrunConflict(['torchrun', '--node-rank=2', 't.py'], owned)).toMatchObject({ via: undefined });
  });
});

describe('static rank wiring (GpuTrainingJob)', () => {
  const env = staticRankWiring({
    masterAddress: 'j-node-0-0.j.$(POD_NAMESPACE).svc.cluster.local',
    masterPort: 29500,
    nodes: 2,
    gpusPerPod: 4,
    shutdownTimeoutSeconds: 285,
  });
  test('torchrun static rendezvous on the index-0 pod, no restarts of its own', () => {
    const byName = Object.fromEntries(env.map(o => [o.env.name, o.env.value ?? o.env.valueFrom]));
    expect(byName).toMatchObject({
      PET_RDZV_BACKEND: 'static',
      PET_MASTER_ADDR: 'j-node-0-0.j.$(POD_NAMESPACE).svc.cluster.local',
      PET_MAX_RESTARTS: '0',
      PET_NNODES: '2',
      WORLD_SIZE: '8',
    });
    expect(env[0].env.name).toBe('POD_NAMESPACE');
    expect(env.map(o => o.env.name)).not.toContain('PET_RDZV_ID');
  });
});
