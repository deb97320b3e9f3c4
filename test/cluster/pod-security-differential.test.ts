import { FLOOR_MINOR } from '../../src/validation/kube-versions';
import { podSecurityLevel, SUPPORTED_STANDARDS } from '../../src/common/pod-security';
import { Cluster, describeCluster, PodSecurityLevel, pool, Response } from './kube';
import { PodCase, podCases } from './pod-security-corpus';

/**
 * The library's Pod Security evaluator (src/common/pod-security.ts, behind every construct's
 * `podSecurityLevel`) held against the PodSecurity admission of a real API server. Each pod of the corpus
 * is created (as a dry run) in namespaces that enforce restricted, baseline and privileged, pinned to each
 * version of the standards from the library's floor to the server's own (`enforce-version: v1.NN`, which
 * the server evaluates with that version's checks). The strictest namespace of a version that admits a pod
 * is the server's level at that version; the library, asked for that version, must give the same, and
 * asked for every version it supports (what constructs report), never a more permissive one than any.
 */

const LEVELS: readonly PodSecurityLevel[] = ['restricted', 'baseline', 'privileged'];
const RUN = Date.now().toString(36);
const libraryLevel = (pod: any, minor?: number) =>
  podSecurityLevel(
    pod.spec,
    pod.metadata?.annotations,
    minor === undefined ? SUPPORTED_STANDARDS : { from: minor, to: minor },
  );

const refusedByPodSecurity = (r: Response) => r.status === 403 && /violates PodSecurity/.test(r.body?.message ?? '');

describeCluster('the Pod Security evaluator against PodSecurity admission', (cluster: Cluster) => {
  const cases = podCases(pod => libraryLevel(pod));
  const serverMinor = Number(cluster.minor.split('.')[1]);
  const minors = Array.from({ length: serverMinor - FLOOR_MINOR + 1 }, (_, i) => FLOOR_MINOR + i);
  const namespaceOf = (level: PodSecurityLevel, minor: number) => `psd-${level}-1-${minor}-${RUN}`;

  beforeAll(async () => {
    await pool(
      minors.flatMap(minor => LEVELS.map(level => ({ level, minor }))),
      4,
      ({ level, minor }) => cluster.namespace(namespaceOf(level, minor), level, `v1.${minor}`),
    );
  }, 180_000);
  afterAll(async () => {
    for (const minor of minors)
      for (const level of LEVELS) await cluster.request('DELETE', `/api/v1/namespaces/${namespaceOf(level, minor)}`);
    cluster.close();
  });

  test('the corpus covers every level on the library side', () => {
    expect(new Set(cases.map(c => libraryLevel(c.pod)))).toEqual(new Set(LEVELS));
  });

  /**
   * The server's level for a pod at one version of the standards, and the pod as the server stored it
   * (defaulted, and without the fields of features its release has off, which it drops before admission:
   * `procMount` on 1.32, for one), or why the case says nothing.
   */
  const serverLevel = async (
    c: PodCase,
    minor: number,
  ): Promise<{ level?: PodSecurityLevel; stored?: any; invalid?: string }> => {
    const answers = await Promise.all(
      LEVELS.map(level =>
        cluster.create({ ...c.pod, metadata: { ...c.pod.metadata, namespace: namespaceOf(level, minor) } }, true),
      ),
    );
    // A pod the privileged namespace refuses is not a Pod Security case: the corpus is wrong.
    if (answers[2].status >= 300) return { invalid: `${answers[2].status} ${answers[2].body?.message}` };
    for (const [i, a] of answers.entries()) {
      if (a.status < 300) return { level: LEVELS[i], stored: answers[2].body };
      if (!refusedByPodSecurity(a)) return { invalid: `${LEVELS[i]}: ${a.status} ${a.body?.message}` };
    }
    return { invalid: 'no namespace admitted it' };
  };

  test('the server rates every pod of the corpus as the library does, at every version of the standards from the floor', async () => {
    const work = minors.flatMap(minor => cases.map(c => ({ c, minor })));
    const answers = await pool(work, 8, ({ c, minor }) => serverLevel(c, minor));
    const invalid = work.flatMap(({ c, minor }, i) =>
      answers[i].invalid ? [`${c.name} at v1.${minor}: ${answers[i].invalid}`] : [],
    );
    expect(invalid).toEqual([]);

    // The library rates what the admission controller rated: the pod as the server stored it.
    const atVersion = work.flatMap(({ c, minor }, i) => {
      const library = libraryLevel(answers[i].stored, minor);
      return answers[i].level === library
        ? []
        : [`${c.name}: at v1.${minor} the server says ${answers[i].level}, the library ${library}`];
    });
    // What constructs report, from the pod as sent, holds at every supported version the server knows.
    const permissive = work.flatMap(({ c, minor }, i) => {
      const supported = libraryLevel(c.pod);
      return LEVELS.indexOf(supported) >= LEVELS.indexOf(answers[i].level!)
        ? []
        : [
            `${c.name}: at v1.${minor} the server says ${answers[i].level}, the library's supported level ${supported} is more permissive`,
          ];
    });
    process.stdout.write(
      `Pod Security on Kubernetes ${cluster.version}: ${work.length - atVersion.length}/${work.length} ratings alike ` +
        `(${cases.length} pods, standards v1.${FLOOR_MINOR}-v1.${serverMinor})\n`,
    );
    expect(atVersion).toEqual([]);
    expect(permissive).toEqual([]);
    // Where the server knows more than one version of the standards, they differ somewhere in the
    // corpus, so pinning them is exercised (a 1.32 server, the floor, knows only the floor's).
    const varies = cases.some((_c, i) => new Set(minors.map((_m, j) => answers[j * cases.length + i].level)).size > 1);
    expect(varies).toBe(minors.length > 1);
  }, 600_000);
});
