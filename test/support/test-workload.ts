import { Size } from 'cdk8s';
import { k8s } from 'cdk8s-plus-32';
import { Construct } from 'constructs';
import { labelSet } from '../../src/common/labels';
import { GpuWorkloadProps } from '../../src/common/pod-options';
import { PodTemplate } from '../../src/common/pod-template';
import { resolveProcessIdentity } from '../../src/common/security';
import { ManifestObject } from '../../src/common/manifest-object';
import { STATEFUL_SET } from '../../src/common/stateful-set';
import { ConfigurationError, Validator } from '../../src/validation/validate';
import { addPodValidation, buildWorkloadPod, GPU_WORKLOAD_PROP_KEYS } from '../../src/common/workload-pod';
import { testChart } from './synth';

export interface TestWorkloadProps extends GpuWorkloadProps {
  readonly name: string;
  readonly gpus?: number;
  readonly runAsRoot?: boolean;
  readonly claim?: { name: string; mountPath: string };
}

/**
 * The smallest workload built on the shared pod mechanism: tests of src/common exercise the
 * mechanism itself here, independent of any one construct's own facts.
 */
export class TestWorkload extends Construct {
  readonly template: PodTemplate;
  readonly statefulSet: ManifestObject;
  readonly level: string;

  constructor(scope: Construct, id: string, props: TestWorkloadProps) {
    super(scope, id);
    const v = new Validator('TestWorkload', id);
    v.knownProps('', props, [...GPU_WORKLOAD_PROP_KEYS, 'name', 'gpus', 'runAsRoot', 'claim']);
    const { identity } = resolveProcessIdentity(v, { runAsRoot: props.runAsRoot ?? false, runAsUser: props.runAsUser });
    const { labels, selector } = labelSet({ name: props.name, instance: props.name, component: 'test' });
    const pod = buildWorkloadPod(v, {
      scope: this,
      props,
      gpus: props.gpus ?? 1,
      identity,
      labels,
      container: { name: 'main', image: 'busybox:1.36.1' },
      ownedEnv: [{ env: { name: 'WORLD_SIZE', value: '1' }, via: 'replicas' }],
      defaultEnv: [{ name: 'HF_HOME', value: '/home/x/.cache/huggingface' }],
      volumes: [{ name: 'home', emptyDir: {} }],
      mounts: [{ name: 'home', mountPath: '/home/x' }],
      claims: props.claim ? [{ ...props.claim, prop: 'claim' }] : [],
      sharedMemory: Size.gibibytes(1),
      spec: { terminationGracePeriodSeconds: 30 },
    });
    this.template = pod.template;
    this.level = pod.template.securityLevel();
    addPodValidation(this, pod.template, props.guaranteedQos ?? false, `TestWorkload '${id}'`);
    this.statefulSet = new ManifestObject(this, 'Resource', STATEFUL_SET, {
      metadata: { name: props.name, labels },
      spec: {
        serviceName: props.name,
        selector: { matchLabels: selector },
        template: pod.template.toTemplate(),
        ...(props.claim
          ? {
              volumeClaimTemplates: [
                {
                  metadata: { name: props.claim.name },
                  spec: {
                    accessModes: ['ReadWriteOnce'],
                    resources: { requests: { storage: k8s.Quantity.fromString('1Gi') } },
                  },
                },
              ],
            }
          : {}),
      },
    });
  }
}

/** The ConfigurationError message a TestWorkload with these props throws at construction; fails the test otherwise. */
export function testWorkloadError(props: Partial<TestWorkloadProps>): string {
  try {
    new TestWorkload(testChart(), 'w', { name: 'w', ...props });
  } catch (e) {
    if (!(e instanceof ConfigurationError))
      throw new Error(`expected a ConfigurationError, got ${(e as Error)?.name}: ${(e as Error)?.message}`);
    return e.message;
  }
  throw new Error('expected a ConfigurationError, but construction succeeded');
}
